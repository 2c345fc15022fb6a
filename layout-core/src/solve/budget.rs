//! The search budget: counted work decides every result, the clock only
//! stops a search as a safety net.
//!
//! Every method charges what it does to one [`Work`] counter: a node of the
//! exact search, an evaluation of an order by local search or a
//! construction, a node of the integer program. When the count reaches
//! [`super::SolveOptions::work_limit`], each method stops at the same point
//! on every machine, so the answer depends only on the input and the
//! options. The wall clock is read every [`CLOCK_STRIDE`] units; when the
//! time limit has passed, the search stops too and
//! [`super::Solution::stopped_by_time`] says so (only then may the answer
//! differ between machines).

use std::time::{Duration, Instant};

/// Units of work between two looks at the clock.
const CLOCK_STRIDE: u64 = 256;

pub(crate) struct Work {
    used: u64,
    limit: u64,
    started: Instant,
    /// `None`: no time limit (it does not fit in an `Instant`).
    deadline: Option<Instant>,
    next_look: u64,
    timed_out: bool,
}

impl Work {
    pub fn new(limit: u64, time_limit: Duration, started: Instant) -> Work {
        Work {
            used: 0,
            limit,
            started,
            deadline: started.checked_add(time_limit),
            next_look: 0,
            timed_out: false,
        }
    }

    /// Charge `units`; false once the budget or the time is spent.
    pub fn spend(&mut self, units: u64) -> bool {
        self.used = self.used.saturating_add(units);
        if self.used >= self.next_look {
            self.next_look = self.used.saturating_add(CLOCK_STRIDE);
            self.look_at_clock();
        }
        self.left()
    }

    fn look_at_clock(&mut self) {
        if let Some(d) = self.deadline {
            if !self.timed_out && Instant::now() >= d {
                self.timed_out = true;
            }
        }
    }

    /// True while neither the work budget nor the time is spent.
    pub fn left(&self) -> bool {
        self.used < self.limit && !self.timed_out
    }

    /// Units left in the budget (0 once time ran out).
    pub fn remaining(&self) -> u64 {
        if self.timed_out {
            0
        } else {
            self.limit.saturating_sub(self.used)
        }
    }

    /// Wall-clock time left before the safety stop (None: unlimited).
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Record that a sub-solver stopped on the clock.
    pub fn mark_timed_out(&mut self) {
        self.timed_out = true;
    }

    pub fn timed_out(&self) -> bool {
        self.timed_out
    }

    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// A time limit in seconds as a [`Duration`]: `None` for NaN, zero or
/// negative values; limits past what a `Duration` holds become
/// [`Duration::MAX`] (no limit).
pub fn time_limit_from_secs(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs <= 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}
