//! The order in which the solver's methods run, and the final verification.

use super::bound::{read_lines_bound, size_bound, Proof};
use super::check::{pins_fit, separated};
use super::construct::{build_all, Family};
use super::eval::{movement_slot, Evaluator, Key};
use super::exact::{branch_and_bound, order_count, types, Limits};
use super::fill::tidy_order;
use super::geometry::{candidates, Geometry};
use super::ilp;
use super::improve::{local_search, Budget};
use super::place::Placer;
use super::problem::Problem;
use super::{Incumbent, Preset, Solution, SolveError, SolveOptions};
use crate::cost::cost_of;
use crate::layout::{Layout, Slot};
use crate::model::{Placement, Struct};
use crate::verify::verify;
use std::time::{Duration, Instant};

/// Structs with at most this many distinct orders are searched exactly first.
const EXACT_ORDERS: f64 = 40_000.0;
/// Up to this many unpinned fields, a node-capped exact search tries to
/// prove what the heuristics found.
const PROOF_FIELDS: usize = 14;
const PROOF_NODES: u64 = 25_000;
/// How many of the best constructions are polished by local search.
const POLISHED: usize = 2;

pub(super) fn solve(s: &Struct, opts: &SolveOptions) -> Result<Solution, SolveError> {
    let started = Instant::now();
    let line = opts.line;
    if !line.is_power_of_two() {
        return Err(SolveError::BadField(format!(
            "line size {line} is not a power of two"
        )));
    }
    let p = Problem::new(s, opts.separate_soft)?;
    if let Placement::Offset(o) = opts.placement {
        if o % p.natural_align != 0 && !(o % line).is_multiple_of(p.natural_align) {
            return Err(SolveError::Infeasible(format!(
                "struct `{}` needs alignment {}, but offset {o} is not a multiple of it",
                s.name, p.natural_align
            )));
        }
    }
    let all = candidates(line, p.natural_align, opts.placement, p.has_conflicts());
    let geoms: Vec<Geometry> = all
        .iter()
        .copied()
        .filter(|g| pins_fit(&p, g).is_ok())
        .collect();
    if geoms.is_empty() {
        let why = all
            .last()
            .map(|g| pins_fit(&p, g))
            .and_then(Result::err)
            .unwrap_or_default();
        return Err(SolveError::Infeasible(why));
    }
    let bounds: Vec<u64> = geoms.iter().map(|g| size_bound(&p, g)).collect();
    let lower_bound = bounds.iter().copied().min().unwrap_or(0);
    let proof = Proof {
        lower: lower_bound,
        read: read_lines_bound(&p, line),
        geoms: geoms
            .iter()
            .map(|g| g.align)
            .zip(bounds.iter().copied())
            .collect(),
        preset: opts.preset,
    };
    let mut d = Driver {
        lower_bound,
        proof,
        ev: Evaluator::new(&p, opts.weights, opts.preset),
        p: &p,
        geoms,
        bounds,
        // A limit past what Instant can hold means no limit.
        deadline: started
            .checked_add(opts.time_limit)
            .unwrap_or_else(|| started + Duration::from_secs(1 << 32)),
        best: Vec::new(),
    };
    let outcome = d.run();
    d.finish(s, opts, outcome, started)
}

/// What the search established about the best layout.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Every order was searched on the whole key.
    Exact,
    /// Every order was searched on the key without movement (its last term).
    Proven,
    /// Only the bounds can tell.
    Open,
}

struct Driver<'p> {
    p: &'p Problem,
    geoms: Vec<Geometry>,
    /// Size bound of each geometry.
    bounds: Vec<u64>,
    lower_bound: u64,
    proof: Proof,
    ev: Evaluator<'p>,
    deadline: Instant,
    /// The best few distinct results, best first (fallbacks for verification).
    best: Vec<Incumbent>,
}

impl<'p> Driver<'p> {
    /// Run the methods; true when the exact search finished.
    fn run(&mut self) -> Outcome {
        let p = self.p;
        let g0 = self.geoms[0];
        let declared = p.free.clone();
        let tidy = tidy_order(p, &p.free);
        let seed_method = if p.has_conflicts() {
            "heuristic"
        } else {
            "no-conflict"
        };
        self.consider(g0, declared, seed_method);
        self.consider(g0, tidy, seed_method);
        if self.proven() {
            return Outcome::Open;
        }
        let ty = types(p);
        if order_count(&ty) <= EXACT_ORDERS {
            if self.exact(u64::MAX, false) {
                return Outcome::Exact;
            }
            return Outcome::Open;
        }
        self.heuristics();
        // Small structs get the (node-capped) exact search instead.
        let small = p.free.len() <= PROOF_FIELDS;
        if !small && !self.proven() && p.has_conflicts() && self.best_key()[0] > self.lower_bound {
            self.ilp();
        }
        if small && !self.proven() {
            // Movement as the last goal is not part of the claim: leave it
            // out of the proof, which then prunes all ties on the rest.
            let blind = movement_slot(self.ev.preset()) == 4;
            let before = self.best_key();
            if self.exact(PROOF_NODES, blind) {
                if blind && self.best_key() != before {
                    // A better layout from the proof: shorten its diff.
                    let best = self.best[0].clone();
                    self.polish(best);
                }
                return if blind {
                    Outcome::Proven
                } else {
                    Outcome::Exact
                };
            }
        }
        Outcome::Open
    }

    fn best_key(&self) -> Key {
        self.best[0].key
    }

    /// Can geometry `gi` still beat the best (its bound against size and alignment)?
    fn may_improve(&self, gi: usize) -> bool {
        let k = self.best_key();
        (self.bounds[gi], self.geoms[gi].align) <= (k[0], k[1])
    }

    /// Place `order` in `g`, evaluate, and keep it if it is among the best.
    fn consider(&mut self, g: Geometry, order: Vec<usize>, method: &'static str) {
        let placed = Placer::new(self.p, g, false).place_all(&order);
        let key = self.ev.key(&placed, &g);
        self.offer(Incumbent {
            key,
            geom: g,
            order,
            method,
        });
    }

    fn offer(&mut self, inc: Incumbent) {
        if self
            .best
            .iter()
            .any(|b| b.key == inc.key && b.geom == inc.geom)
        {
            return;
        }
        let at = self.best.partition_point(|b| b.key <= inc.key);
        if at < 8 {
            self.best.insert(at, inc);
            self.best.truncate(8);
        }
    }

    /// Size, alignment and the goals before movement (and movement unless it
    /// is last) all meet their bounds.
    fn proven(&self) -> bool {
        let Some(b) = self.best.first() else {
            return false;
        };
        self.key_proven(&b.key)
    }

    fn key_proven(&self, k: &Key) -> bool {
        self.proof.meets(k, true)
    }

    /// Branch and bound from the best so far. With `blind_movement`, only
    /// the terms before movement are searched (movement must be last).
    fn exact(&mut self, max_nodes: u64, blind_movement: bool) -> bool {
        let mut best = self.best.first().cloned();
        let limits = Limits {
            deadline: self.deadline,
            max_nodes,
            blind_slot: blind_movement.then_some(4),
        };
        let finished = branch_and_bound(
            self.p,
            &self.geoms,
            &self.bounds,
            &mut self.ev,
            &mut best,
            &limits,
        );
        if let Some(b) = best {
            self.offer(b);
        }
        finished
    }

    fn heuristics(&mut self) {
        let p = self.p;
        for gi in 0..self.geoms.len() {
            if !self.may_improve(gi) || Instant::now() >= self.deadline {
                continue;
            }
            let g = self.geoms[gi];
            let mut built: Vec<Incumbent> = Vec::new();
            let families: &[Family] = if p.has_conflicts() {
                &[Family::Strict, Family::Hard]
            } else {
                &[Family::Strict]
            };
            for &family in families {
                for order in build_all(p, g, family) {
                    let placed = Placer::new(p, g, false).place_all(&order);
                    let key = self.ev.key(&placed, &g);
                    if !built.iter().any(|b| b.key == key) {
                        built.push(Incumbent {
                            key,
                            geom: g,
                            order,
                            method: "heuristic",
                        });
                    }
                }
                if Instant::now() >= self.deadline {
                    break;
                }
            }
            built.sort_by_key(|b| b.key);
            for b in built.iter().skip(POLISHED) {
                self.offer(b.clone());
            }
            for b in built.into_iter().take(POLISHED) {
                self.polish(b);
            }
            if self.proven() {
                return;
            }
        }
        // The declaration order itself, polished: the smallest diffs start
        // there, which matters when movement comes before soft costs.
        if self.ev.preset() == Preset::MinDiff {
            if let Some(first) = self.best.first().cloned() {
                let order = p.free.clone();
                let placed = Placer::new(p, first.geom, false).place_all(&order);
                let key = self.ev.key(&placed, &first.geom);
                self.polish(Incumbent {
                    key,
                    order,
                    ..first
                });
            }
        }
    }

    /// Local search from `inc`, then offer the result.
    pub(super) fn polish(&mut self, mut inc: Incumbent) {
        let placer = Placer::new(self.p, inc.geom, false);
        let n = self.p.free.len() as u64;
        let budget = Budget {
            evals: 200 + 40 * n,
            deadline: self.deadline,
        };
        let proof = &self.proof;
        let bound = self.bounds[self.geoms.iter().position(|g| *g == inc.geom).unwrap_or(0)];
        local_search(
            &placer,
            &mut self.ev,
            &mut inc.order,
            &mut inc.key,
            bound,
            &budget,
            &|k| proof.meets(k, false),
        );
        self.offer(inc);
    }

    fn ilp(&mut self) {
        // The program only re-balances gap fills: give it a bounded share.
        let share = self.deadline.saturating_duration_since(Instant::now()) / 4;
        let cap = Duration::from_millis(50 + 2 * self.p.n as u64);
        let deadline = Instant::now() + share.min(cap);
        for gi in 0..self.geoms.len() {
            if !self.may_improve(gi) || Instant::now() >= deadline {
                continue;
            }
            let g = self.geoms[gi];
            let hints: Vec<Vec<usize>> = self.best.iter().map(|b| b.order.clone()).collect();
            let hints: Vec<&[usize]> = hints.iter().map(Vec::as_slice).collect();
            for order in ilp::gap_fills(self.p, g, self.best_key()[0], &hints, deadline) {
                let placed = Placer::new(self.p, g, false).place_all(&order);
                let key = self.ev.key(&placed, &g);
                self.polish(Incumbent {
                    key,
                    geom: g,
                    order,
                    method: "ilp",
                });
                if self.proven() {
                    return;
                }
            }
        }
    }

    fn finish(
        &mut self,
        s: &Struct,
        opts: &SolveOptions,
        outcome: Outcome,
        started: Instant,
    ) -> Result<Solution, SolveError> {
        let mut last_err = None;
        for (rank, inc) in self.best.iter().enumerate() {
            let placer = Placer::new(self.p, inc.geom, false);
            let placed = placer.place_all(&inc.order);
            let layout = Layout {
                slots: placed
                    .order
                    .iter()
                    .map(|&f| Slot {
                        field: f,
                        offset: placed.offset[f],
                    })
                    .collect(),
                size: placed.size,
                align: inc.geom.align,
                line: opts.line,
                placement: opts.placement,
            };
            let checked = verify(s, &layout)
                .map_err(|e| e.to_string())
                .and_then(|v| separated(self.p, &layout).map(|()| v));
            match checked {
                Ok(v) => {
                    let cost = cost_of(s, &layout, &opts.weights);
                    debug_assert_eq!(self.ev.cost(&placed, &inc.geom), cost);
                    let searched = rank == 0 && outcome != Outcome::Open;
                    let optimal = searched || (rank == 0 && self.key_proven(&inc.key));
                    let method = if rank == 0 && outcome == Outcome::Exact {
                        "exact"
                    } else {
                        inc.method
                    };
                    return Ok(Solution {
                        layout: v,
                        cost,
                        lower_bound: if searched {
                            layout.size
                        } else {
                            self.lower_bound.min(layout.size)
                        },
                        optimal,
                        solve_ms: started.elapsed().as_millis() as u64,
                        stopped_by_time: false,
                        method,
                    });
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(SolveError::Infeasible(format!(
            "internal error: no layout found passed the verifier ({})",
            last_err
                .map(|e| e.to_string())
                .unwrap_or_else(|| "no candidate".into())
        )))
    }
}
