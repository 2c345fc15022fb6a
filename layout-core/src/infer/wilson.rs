//! The Wilson score interval of a binomial proportion: how sure a write
//! fraction measured on a few hundred samples is.

/// z for a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of `k` successes in `n` trials at `z`;
/// `(0, 1)` when there are no trials.
pub fn interval(k: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = (k as f64 / n).min(1.0);
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // 10 of 100 at 95 %: [0.0552, 0.1744] (Wilson 1927, as tabulated by Newcombe 1998).
        let (lo, hi) = interval(10, 100, Z95);
        assert!((lo - 0.0552).abs() < 5e-4, "{lo}");
        assert!((hi - 0.1744).abs() < 5e-4, "{hi}");
        let (lo, hi) = interval(0, 20, Z95);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.1611).abs() < 5e-4, "{hi}");
        assert_eq!(interval(0, 0, Z95), (0.0, 1.0));
    }
}
