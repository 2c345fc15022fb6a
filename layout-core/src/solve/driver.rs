//! The order in which the solver's methods run, and the final verification.

use super::bound::{path_bounds, read_lines_bound, size_bound, Proof};
use super::budget::Work;
use super::check::{pins_fit, separated};
use super::construct::{build_all, Family};
use super::eval::{slot, Evaluator, Key, Term, LATE};
use super::exact::{branch_and_bound, order_count, types, Limits};
use super::fill::tidy_order;
use super::geometry::{align_up, candidates, Geometry};
use super::holes::fill_holes;
use super::ilp;
use super::improve::{local_search, repack, Climb};
use super::lines::{line_packings, no_layout_within, MAX_FIELDS};
use super::place::Placer;
use super::problem::{Blocks, Problem};
use super::unbroken;
use super::walls;
use super::{Goal, Incumbent, Method, Preset, Solution, SolveError, SolveOptions};
use crate::cost::{cost_of, Cost};
use crate::layout::{Layout, Slot};
use crate::model::{Placement, Struct};
use crate::verify::verify;
use std::time::Instant;

/// Structs with at most this many distinct orders are searched exactly first.
const EXACT_ORDERS: f64 = 40_000.0;
/// Up to this many unpinned fields, a node-capped exact search tries to
/// prove what the heuristics found.
const PROOF_FIELDS: usize = 14;
const PROOF_NODES: u64 = 25_000;
/// Up to this many unpinned fields, when the size is not yet proven, a
/// node-capped exact search on the goals up to the size alone tries to
/// prove (or improve) it: without the later goals it cuts every tie.
const SIZE_PROOF_FIELDS: usize = 48;
const SIZE_PROOF_NODES: u64 = 60_000;
/// How many of the best constructions are polished by local search.
const POLISHED: usize = 2;

/// At most how many times a struct whose size is left unproven is solved
/// again, declared in another order ([`restart_orders`]); the work budget
/// usually ends them first.
const RESTARTS: usize = 64;

/// Which methods one solve runs beyond the first search.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Pass {
    /// Solve the struct again declared in other orders while its size is
    /// open ([`Driver::restart`]).
    restarts: bool,
    /// Local searches also move runs of neighbours ([`Climb::runs`]).
    runs: bool,
    /// The integer program's gap fills ([`Driver::ilp`]).
    ilp: bool,
}

impl Pass {
    /// A struct's own solve: everything but runs.
    const FIRST: Pass = Pass {
        restarts: true,
        runs: false,
        ilp: true,
    };
    /// A restart ([`Driver::restart`]): no restarts of its own, runs, and
    /// no integer program. The first solve ran the integer program on the
    /// same members; in the restarts it took half of their work and found
    /// few of their better sizes, so without it more restarts fit in the
    /// budget (1,325 where 964 did on `reach_bench`'s `wide` set).
    const RESTART: Pass = Pass {
        restarts: false,
        runs: true,
        ilp: false,
    };

    /// The seeds' solve of the struct without its paddings
    /// ([`unbroken::seeds`]) inside a solve of this pass: no restarts, no
    /// runs, the integer program only where this pass runs it.
    pub(super) fn without_paddings(self) -> Pass {
        Pass {
            restarts: false,
            runs: false,
            ilp: self.ilp,
        }
    }
}

pub(super) fn solve(s: &Struct, opts: &SolveOptions) -> Result<Solution, SolveError> {
    solve_at(s, opts, Pass::FIRST)
}

/// One solve of `s`: the methods `pass` names.
pub(super) fn solve_at(
    s: &Struct,
    opts: &SolveOptions,
    pass: Pass,
) -> Result<Solution, SolveError> {
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
    let mut work = Work::new(opts.work_limit, opts.time_limit, started);
    // Line walls cut the struct into parts solved alone: their bounds add
    // up, and their layouts make a seed ([`walls`]).
    let split = walls::split(s, &p, opts, &mut work);
    let bounds: Vec<u64> = geoms
        .iter()
        .map(|g| {
            let parts = split.as_ref().map_or(0, |sp| align_up(sp.bound, g.align));
            size_bound(&p, g).max(parts)
        })
        .collect();
    let lower_bound = bounds.iter().copied().min().unwrap_or(0);
    let paths = path_bounds(&p, line);
    let proof = |preset: Preset| Proof {
        lower: lower_bound,
        read: read_lines_bound(&p, line),
        paths: paths.iter().sum(),
        churn: 0,
        geoms: geoms
            .iter()
            .map(|g| g.align)
            .zip(bounds.iter().copied())
            .collect(),
        preset,
    };
    // With `#if` blocks free to move among each other, the search first
    // explores the smaller space of their declared order; its layouts seed
    // the free search, which can then only do better.
    let ordered = Problem::with_blocks(s, opts.separate_soft, Blocks::Ordered)?;
    let seeds = |preset: Preset, work: &mut Work| -> Vec<Incumbent> {
        let mut seeded = Vec::new();
        // The struct without its paddings, the paddings put back: members
        // across the line breaks ([`unbroken`]).
        for order in unbroken::seeds(s, &p, opts, pass.without_paddings(), work) {
            seeded.push(Incumbent {
                key: [0; super::eval::KEY_LEN],
                size: 0,
                geom: geoms[0],
                order,
                method: Method::Heuristic,
            });
        }
        if let Some(sp) = &split {
            seeded.push(Incumbent {
                key: [0; super::eval::KEY_LEN],
                size: 0,
                geom: geoms[0],
                order: sp.order.clone(),
                method: Method::Heuristic,
            });
        }
        if ordered.tree.units.len() == p.tree.units.len() {
            return seeded;
        }
        let mut d = Driver::new(&ordered, &geoms, &bounds, proof(preset), opts, work);
        d.pass = pass;
        d.run();
        seeded.extend(d.best.iter().cloned());
        seeded
    };
    if opts.preset != Preset::MinDiff {
        let seeded = seeds(opts.preset, &mut work);
        let mut d = Driver::new(&p, &geoms, &bounds, proof(opts.preset), opts, &mut work);
        d.pass = pass;
        let any_seed = !seeded.is_empty();
        for inc in seeded {
            d.consider(inc.geom, inc.order, inc.method);
        }
        if any_seed {
            d.polish_best();
        }
        let outcome = d.run();
        if pass.restarts && outcome == Outcome::Open {
            d.restart(s, opts);
        }
        let mut sol = d.finish(s, opts, outcome)?;
        sol.path_bounds = paths;
        sol.solve_ms = started.elapsed().as_millis() as u64;
        return Ok(sol);
    }
    // Minimal churn: first the smallest size (to know the cap when the
    // declared size cannot keep the rule), then the fewest members moved
    // under the cap, starting from the layouts the first search found.
    let declared = declared_size(s, &p);
    let (first_best, size_lower) = {
        let seeded = seeds(Preset::Balanced, &mut work);
        let mut d = Driver::new(
            &p,
            &geoms,
            &bounds,
            proof(Preset::Balanced),
            opts,
            &mut work,
        );
        d.ev.cap = u64::MAX;
        d.pass = pass;
        for inc in seeded {
            d.consider(inc.geom, inc.order, inc.method);
        }
        // The declared order alone settles it when it keeps the rule.
        let declared_fits = d.consider_declared() <= declared;
        let outcome = if declared_fits {
            Outcome::Open
        } else {
            d.run()
        };
        let size = d.best[0].size;
        let lower = if outcome == Outcome::Open {
            d.lower_bound.min(size)
        } else {
            size
        };
        (d.best.clone(), lower)
    };
    let cap = declared.max(first_best[0].size);
    let mut d = Driver::new(&p, &geoms, &bounds, proof(Preset::MinDiff), opts, &mut work);
    d.ev.cap = cap;
    d.pass = pass;
    for inc in first_best {
        d.consider(inc.geom, inc.order, inc.method);
    }
    let outcome = d.run();
    let mut sol = d.finish(s, opts, outcome)?;
    sol.lower_bound = size_lower.min(sol.layout.size);
    sol.size_cap = Some(cap);
    sol.path_bounds = paths;
    sol.solve_ms = started.elapsed().as_millis() as u64;
    Ok(sol)
}

/// The struct's size as declared: from the fields' original offsets when
/// all are known, else the C layout of the declaration order.
fn declared_size(s: &Struct, p: &Problem) -> u64 {
    let end = if s.fields.iter().all(|f| f.original_offset.is_some()) {
        s.fields
            .iter()
            .map(|f| f.original_offset.unwrap_or(0) + f.size)
            .max()
            .unwrap_or(0)
    } else {
        s.fields
            .iter()
            .fold(0, |at, f| align_up(at, f.align.max(1)) + f.size)
    };
    align_up(end, p.natural_align)
}

/// What the search established about the best layout.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Every order was searched on the whole key.
    Exact,
    /// Every order was searched on the key without movement (its last term).
    Proven,
    /// Every order was searched on the key up to the size and alignment
    /// (this many terms); the rest only the bounds can tell.
    Prefix(usize),
    /// Only the bounds can tell.
    Open,
}

struct Driver<'p, 'w> {
    p: &'p Problem,
    geoms: &'p [Geometry],
    /// Size bound of each geometry (raised by line packing's proofs).
    bounds: Vec<u64>,
    lower_bound: u64,
    proof: Proof,
    ev: Evaluator<'p>,
    work: &'w mut Work,
    /// The best few distinct results, best first (fallbacks for verification).
    best: Vec<Incumbent>,
    /// What this solve runs beyond the first search.
    pass: Pass,
}

impl<'p, 'w> Driver<'p, 'w> {
    fn new(
        p: &'p Problem,
        geoms: &'p [Geometry],
        bounds: &'p [u64],
        proof: Proof,
        opts: &SolveOptions,
        work: &'w mut Work,
    ) -> Self {
        Driver {
            p,
            geoms,
            bounds: bounds.to_vec(),
            lower_bound: proof.lower,
            ev: Evaluator::new(p, opts.weights, proof.preset),
            proof,
            work,
            best: Vec::new(),
            pass: Pass::FIRST,
        }
    }

    fn preset(&self) -> Preset {
        self.proof.preset
    }

    /// Consider the declaration order; its size.
    fn consider_declared(&mut self) -> u64 {
        let g0 = self.geoms[0];
        let method = if self.p.has_conflicts() {
            Method::Heuristic
        } else {
            Method::NoConflict
        };
        self.consider(g0, self.p.free.clone(), method)
    }

    /// Run the methods.
    fn run(&mut self) -> Outcome {
        let p = self.p;
        let g0 = self.geoms[0];
        self.consider_declared();
        let tidy = tidy_order(p, &p.free);
        let method = self.best[0].method;
        self.consider(g0, tidy, method);
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
        let size_slot = slot(self.preset(), Term::Goal(Goal::Size)).unwrap_or(1);
        if !small
            && self.pass.ilp
            && !self.proven()
            && p.has_conflicts()
            && self.best_key()[size_slot] > self.lower_bound
        {
            self.ilp();
        }
        // Line packing, up to its size; with pins, only past the sizes the
        // exact search below takes (pins make its cells byte-loose, and the
        // exact search does better on small structs).
        let packs = p.free.len() <= MAX_FIELDS && (p.pinned.is_empty() || !small);
        if packs
            && !self.proven()
            && p.has_conflicts()
            && self.best_key()[size_slot] > self.lower_bound
        {
            self.line_packing();
        }
        if packs
            && !self.proven()
            && p.has_conflicts()
            && self.best_key()[size_slot] > self.lower_bound
        {
            self.line_proof();
        }
        let mut outcome = Outcome::Open;
        let prefix = size_slot + 2;
        if p.free.len() <= SIZE_PROOF_FIELDS
            && !self.proven()
            && self.proof.proven_goals(&self.best_key()) < self.goals_to(size_slot)
        {
            let before = self.best_key();
            if self.exact_with(SIZE_PROOF_NODES, None, prefix) {
                outcome = Outcome::Prefix(prefix);
            }
            if self.best_key() != before {
                // A better layout on the leading goals: tune the rest.
                let best = self.best[0].clone();
                self.polish(best);
            }
        }
        if small && !self.proven() {
            // Movement as the last goal is not part of the claim: leave it
            // out of the proof, which then prunes all ties on the rest.
            let blind = self.preset().goals().last() == Some(&Goal::Movement);
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
        outcome
    }

    /// Number of goals up to and including the key term at `slot`.
    fn goals_to(&self, slot: usize) -> usize {
        super::eval::terms(self.preset())[..=slot]
            .iter()
            .filter(|t| matches!(t, Term::Goal(_)))
            .count()
    }

    fn best_key(&self) -> Key {
        self.best[0].key
    }

    /// Can geometry `gi` still beat the best (its bound against size and
    /// alignment)? Only when size leads the key (else every geometry may).
    fn may_improve(&self, gi: usize) -> bool {
        let terms = super::eval::terms(self.preset());
        if terms[1] != Term::Goal(Goal::Size) {
            return true;
        }
        let k = self.best_key();
        (self.bounds[gi], self.geoms[gi].align) <= (k[1], k[2])
    }

    /// Place `order` in `g`, evaluate, and keep it if it is among the best;
    /// its size (`u64::MAX` when it is late: not a layout).
    fn consider(&mut self, g: Geometry, order: Vec<usize>, method: Method) -> u64 {
        let placed = Placer::new(self.p, g, false).place_all(&order);
        self.work.spend(self.p.eval_work());
        let key = self.ev.key(&placed, &g);
        self.offer(Incumbent {
            key,
            size: placed.size,
            geom: g,
            order,
            method,
        });
        if placed.late {
            u64::MAX
        } else {
            placed.size
        }
    }

    /// Keeps `inc` among the best unless it breaks the author's order
    /// (segments, line breaks, blocks): such an order is no proposal, however
    /// it was found.
    fn offer(&mut self, inc: Incumbent) {
        if !self.p.in_segment_order(&inc.order) {
            return;
        }
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

    /// Every goal (movement too unless it is last) meets its bound.
    fn proven(&self) -> bool {
        let Some(b) = self.best.first() else {
            return false;
        };
        self.proof.meets(&b.key, true)
    }

    /// Branch and bound from the best so far. With `blind_movement`, only
    /// the terms before movement are searched (movement must be last).
    fn exact(&mut self, max_nodes: u64, blind_movement: bool) -> bool {
        let blind = blind_movement
            .then(|| slot(self.preset(), Term::Goal(Goal::Movement)))
            .flatten();
        self.exact_with(max_nodes, blind, super::eval::KEY_LEN)
    }

    /// Branch and bound on the first `cmp_len` terms of the key, without
    /// `blind_slot`.
    fn exact_with(&mut self, max_nodes: u64, blind_slot: Option<usize>, cmp_len: usize) -> bool {
        let mut best = self.best.first().cloned();
        let limits = Limits {
            max_nodes,
            blind_slot,
            cmp_len,
        };
        let finished = branch_and_bound(
            self.p,
            self.geoms,
            &self.bounds,
            &mut self.ev,
            &mut best,
            &limits,
            self.work,
        );
        if let Some(b) = best {
            self.offer(b);
        }
        finished
    }

    fn heuristics(&mut self) {
        let p = self.p;
        for gi in 0..self.geoms.len() {
            if !self.may_improve(gi) || !self.work.left() {
                continue;
            }
            let g = self.geoms[gi];
            let mut built: Vec<Incumbent> = Vec::new();
            let families: &[Family] = match (p.has_conflicts(), p.path_names > 0) {
                (true, true) => &[Family::Strict, Family::Hard, Family::Paths],
                (true, false) => &[Family::Strict, Family::Hard],
                (false, true) => &[Family::Strict, Family::Paths],
                (false, false) => &[Family::Strict],
            };
            for &family in families {
                for order in build_all(p, g, family, self.work) {
                    if !self.work.spend(p.eval_work()) {
                        break;
                    }
                    let placed = Placer::new(p, g, false).place_all(&order);
                    let key = self.ev.key(&placed, &g);
                    if !built.iter().any(|b| b.key == key) {
                        built.push(Incumbent {
                            key,
                            size: placed.size,
                            geom: g,
                            order,
                            method: Method::Heuristic,
                        });
                    }
                }
                if !self.work.left() {
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
        // there, which matters when churn or movement comes early.
        if self.preset() == Preset::MinDiff {
            if let Some(first) = self.best.first().cloned() {
                let order = p.free.clone();
                let placed = Placer::new(p, first.geom, false).place_all(&order);
                let key = self.ev.key(&placed, &first.geom);
                self.polish(Incumbent {
                    key,
                    size: placed.size,
                    order,
                    ..first
                });
            }
        }
    }

    /// The size is still above its bound with budget left: solve the
    /// struct again declared in other orders ([`restart_orders`]), each on
    /// at most what the first solve spent, until the size meets its bound,
    /// the budget is spent or [`RESTARTS`] solves ran, and polish what they
    /// find. The
    /// constructions and the repairs start from the declaration order, so
    /// another one reaches other layouts (on kernel-like structs with line
    /// breaks, one line fewer where the first solve used a tenth of its
    /// budget). Between two restarts, the best layout's lines are taken
    /// out and put back on as much work ([`Self::repack_best`]). The same
    /// struct gives the same orders and draws: deterministic.
    fn restart(&mut self, s: &Struct, opts: &SolveOptions) {
        let size_slot = slot(self.preset(), Term::Goal(Goal::Size)).unwrap_or(1);
        let open = |d: &Self| {
            !d.proven()
                && d.best
                    .first()
                    .is_some_and(|b| b.key[size_slot] > d.lower_bound)
        };
        // Each restart is a solve like the first: it gets at most what the
        // first one spent, and they go on while the budget lasts (with
        // four, most structs left above their optimum ended with budget
        // unspent). A size proven at once pays for none.
        let first = self.work.used().max(1);
        self.pass.runs = true;
        // Every other round is not a restart but a stretch of the walk of
        // ruin and recreate ([`Self::repack_best`]), on as much work.
        let mut round = 0u64;
        let mut walk: Option<Incumbent> = None;
        let mut k = 0;
        while k < RESTARTS {
            if !open(self) || !self.work.left() {
                return;
            }
            round += 1;
            if round.is_multiple_of(2) {
                self.repack_best(&mut walk, round, first);
                continue;
            }
            let Some((other, perm)) = restart_orders(s, &self.p.tree, k as u64) else {
                return;
            };
            k += 1;
            let sub = SolveOptions {
                work_limit: self.work.remaining().min(first),
                time_limit: self.work.time_left().unwrap_or(std::time::Duration::MAX),
                ..opts.clone()
            };
            let Ok(sol) = solve_at(&other, &sub, Pass::RESTART) else {
                continue;
            };
            self.work.spend(sol.work);
            if sol.stopped_by_time {
                self.work.mark_timed_out();
            }
            let l = sol.layout.layout();
            let Some(g) = self.geoms.iter().copied().find(|g| g.align == l.align) else {
                continue;
            };
            let order: Vec<usize> = l
                .slots
                .iter()
                .map(|sl| perm[sl.field])
                .filter(|&f| self.p.pin[f].is_none() && self.p.tail != Some(f))
                .collect();
            if order.len() == self.p.free.len() && self.p.in_segment_order(&order) {
                self.polish_order(g, order, Method::Heuristic);
            }
        }
    }

    /// Ruin and recreate ([`repack`]) on at most `most` units of work:
    /// from `walk`, where the last call left it (its unrounded end may have
    /// come down while its size stayed), unless the best layout so far is
    /// smaller; then polish it. The walk goes on from call to call, so the
    /// restarts' budget adds up on one path rather than starting again from
    /// the best layout, whose key does not see the end.
    fn repack_best(&mut self, walk: &mut Option<Incumbent>, seed: u64, most: u64) {
        let Some(best) = self.best.first() else {
            return;
        };
        let mut inc = match walk.take() {
            Some(w) if w.size <= best.size => w,
            _ => best.clone(),
        };
        let size_slot = slot(self.preset(), Term::Goal(Goal::Size)).unwrap_or(1);
        let placer = Placer::new(self.p, inc.geom, false);
        let proof = &self.proof;
        let bound = self.bounds[self.geoms.iter().position(|g| *g == inc.geom).unwrap_or(0)];
        let most = self.work.remaining().min(most);
        repack(
            &placer,
            &mut self.ev,
            &mut inc.order,
            &mut inc.key,
            bound,
            most,
            seed,
            self.work,
            &|k| proof.meets(k, false),
        );
        inc.size = inc.key[size_slot];
        *walk = Some(inc.clone());
        self.polish(inc);
    }

    /// Polish the best layout so far, if any ([`Self::polish`]).
    fn polish_best(&mut self) {
        if let Some(best) = self.best.first().cloned() {
            self.polish(best);
        }
    }

    /// Place `order` in `g` and polish it ([`Self::polish`]).
    fn polish_order(&mut self, g: Geometry, order: Vec<usize>, method: Method) {
        let placed = Placer::new(self.p, g, false).place_all(&order);
        let key = self.ev.key(&placed, &g);
        self.polish(Incumbent {
            key,
            size: placed.size,
            geom: g,
            order,
            method,
        });
    }

    /// Local search from `inc` (its pins' holes filled first), then offer
    /// the result.
    fn polish(&mut self, mut inc: Incumbent) {
        let placer = Placer::new(self.p, inc.geom, false);
        if !self.p.pinned.is_empty() {
            let filled = fill_holes(&placer, &inc.order, self.work);
            let placed = placer.place_all(&filled);
            let key = self.ev.key(&placed, &inc.geom);
            if key <= inc.key {
                inc.key = key;
                inc.order = filled;
            }
        }
        let n = self.p.free.len() as u64;
        let proof = &self.proof;
        let bound = self.bounds[self.geoms.iter().position(|g| *g == inc.geom).unwrap_or(0)];
        local_search(
            &placer,
            &mut self.ev,
            &mut inc.order,
            &mut inc.key,
            Climb {
                size_bound: bound,
                evals: 200 + 40 * n,
                runs: self.pass.runs,
            },
            self.work,
            &|k| proof.meets(k, false),
        );
        let size_slot = slot(self.preset(), Term::Goal(Goal::Size)).unwrap_or(1);
        inc.size = inc.key[size_slot];
        self.offer(inc);
    }

    fn ilp(&mut self) {
        for gi in 0..self.geoms.len() {
            if !self.may_improve(gi) || !self.work.left() {
                continue;
            }
            let g = self.geoms[gi];
            let hints: Vec<Vec<usize>> = self.best.iter().map(|b| b.order.clone()).collect();
            let hints: Vec<&[usize]> = hints.iter().map(Vec::as_slice).collect();
            let best_size = self.best[0].size;
            for order in ilp::gap_fills(self.p, g, best_size, &hints, self.work) {
                self.polish_order(g, order, Method::Ilp);
                if self.proven() {
                    return;
                }
            }
        }
    }

    /// Candidates from line packings ([`super::lines`]), polished.
    fn line_packing(&mut self) {
        for gi in 0..self.geoms.len() {
            if !self.may_improve(gi) || !self.work.left() {
                continue;
            }
            let g = self.geoms[gi];
            let best_size = self.best[0].size;
            for order in line_packings(self.p, g, best_size, self.bounds[gi], self.work) {
                self.polish_order(g, order, Method::Heuristic);
                if self.proven() {
                    return;
                }
            }
        }
    }

    /// Line packing as a proof ([`super::lines`]): for each geometry whose
    /// bound is below the best size, show that none of its layouts is that
    /// small (and, at an alignment below the best one, none as small as the
    /// best), and raise its bound.
    fn line_proof(&mut self) {
        let best = &self.best[0];
        let (size, align) = (best.size, best.geom.align);
        for gi in 0..self.geoms.len() {
            let g = self.geoms[gi];
            let a = g.align.max(1);
            let below = (size.saturating_sub(1) / a) * a;
            let targets: &[u64] = if a < align { &[size, below] } else { &[below] };
            for &target in targets {
                if target < self.bounds[gi] || !self.work.left() {
                    break;
                }
                if no_layout_within(self.p, g, target, self.work) {
                    self.bounds[gi] = target + a;
                    break;
                }
            }
        }
        self.lower_bound = self.bounds.iter().copied().min().unwrap_or(0);
        self.proof.lower = self.lower_bound;
        for (slot, &b) in self.proof.geoms.iter_mut().zip(&self.bounds) {
            slot.1 = b;
        }
    }

    fn finish(
        &mut self,
        s: &Struct,
        opts: &SolveOptions,
        outcome: Outcome,
    ) -> Result<Solution, SolveError> {
        let mut last_err = None;
        let goals = self.preset().goals();
        let late = self.best.iter().all(|b| b.key[0] == LATE);
        if late {
            return Err(SolveError::Infeasible(
                "no order of the members keeps the author's order (its groups, markers and \
                 first member) around the pinned fields and the hard rule; unpin one of them"
                    .into(),
            ));
        }
        for (rank, inc) in self.best.iter().filter(|b| b.key[0] != LATE).enumerate() {
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
                    debug_assert_eq!(
                        Cost {
                            churn: cost.churn,
                            ..self.ev.cost(&placed, &inc.geom)
                        },
                        cost
                    );
                    let proven_goals = if rank > 0 {
                        0
                    } else {
                        match outcome {
                            Outcome::Exact => goals.len(),
                            Outcome::Proven => goals.len() - 1,
                            Outcome::Prefix(known) => {
                                self.proof.proven_goals_after(&inc.key, known)
                            }
                            Outcome::Open => self.proof.proven_goals(&inc.key),
                        }
                    };
                    let claimed = goals.len() - usize::from(goals.last() == Some(&Goal::Movement));
                    let size_first = goals.first() == Some(&Goal::Size);
                    let method = if rank == 0 && outcome == Outcome::Exact {
                        Method::Exact
                    } else {
                        inc.method
                    };
                    let churn_proven = goals
                        .iter()
                        .position(|&g| g == Goal::Churn)
                        .is_some_and(|i| i < proven_goals);
                    return Ok(Solution {
                        layout: v,
                        cost,
                        lower_bound: if size_first && proven_goals > 0 {
                            layout.size
                        } else {
                            self.lower_bound.min(layout.size)
                        },
                        optimal: proven_goals >= claimed,
                        proven_goals,
                        goals,
                        path_bounds: Vec::new(),
                        churn_bound: if churn_proven { cost.churn } else { 0 },
                        size_cap: None,
                        work: self.work.used(),
                        solve_ms: self.work.elapsed().as_millis() as u64,
                        stopped_by_time: self.work.timed_out(),
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

/// `s` declared in another order, and where each of its fields was
/// (`perm[i]`: the field of `s` at index `i`): the members shuffled among
/// those they may trade places with without changing the problem (one
/// segment, one part between two line breaks; no pin, no line break, not
/// the first member nor a flexible tail, no `#if` block or declaration
/// list). `None` when no two members may trade places. A small
/// deterministic generator, seeded by `k`.
fn restart_orders(s: &Struct, tree: &super::problem::Tree, k: u64) -> Option<(Struct, Vec<usize>)> {
    let n = s.fields.len();
    let part = |i: usize| tree.declared.get(i).copied().unwrap_or(0);
    let movable = |i: usize| {
        let f = &s.fields[i];
        i > 0
            && !f.pinned
            && f.size > 0
            && !s.breaks.contains(&i)
            && s.flexible_tail() != Some(i)
            && !s.blocks.iter().any(|b| b.contains(&i))
            && !s.lists.iter().any(|l| l.contains(&i))
    };
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (k + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut below = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut perm: Vec<usize> = (0..n).collect();
    let mut moved = false;
    let mut i = 0;
    while i < n {
        if !movable(i) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < n
            && movable(j)
            && part(j) == part(i)
            && s.fields[j].segment == s.fields[i].segment
        {
            j += 1;
        }
        for m in (i + 1..j).rev() {
            let r = i + below(m - i + 1);
            perm.swap(m, r);
        }
        moved |= j > i + 1;
        i = j;
    }
    if !moved {
        return None;
    }
    let mut out = s.clone();
    out.fields = perm.iter().map(|&i| s.fields[i].clone()).collect();
    Some((out, perm))
}
