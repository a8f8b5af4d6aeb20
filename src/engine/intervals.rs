//! Interval math: receivers count bytes in fixed 10 ms buckets on their own clock; these
//! functions cut out the measured window and fold buckets into reported intervals.

use crate::records::test::Interval;

/// Bucket length used by receivers.
pub const BUCKET_S: f64 = 0.010;

/// Which bucket a moment (seconds since the run started) falls in.
pub fn bucket_of(t: f64) -> usize {
    (t / BUCKET_S).max(0.0) as usize
}

/// The bucket range [first, last) of the measured window after the warm-up.
pub fn window(warmup: f64, duration: f64) -> (usize, usize) {
    let first = (warmup / BUCKET_S).round() as usize;
    let n = (duration / BUCKET_S).round().max(1.0) as usize;
    (first, first + n)
}

/// Sums bucket vectors (one per stream) element-wise.
pub fn sum(buckets: &[Vec<u64>]) -> Vec<u64> {
    let n = buckets.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![0u64; n];
    for b in buckets {
        for (o, v) in out.iter_mut().zip(b) {
            *o += v;
        }
    }
    out
}

/// Folds window buckets into intervals of `interval` seconds (the last may be shorter).
pub fn fold(window_buckets: &[u64], interval: f64) -> Vec<Interval> {
    let per = ((interval / BUCKET_S).round() as usize).max(1);
    let mut out = Vec::new();
    let mut t_end = 0.0;
    for chunk in window_buckets.chunks(per) {
        let secs = chunk.len() as f64 * BUCKET_S;
        t_end += secs;
        let bytes: u64 = chunk.iter().sum();
        out.push(Interval {
            t: (t_end * 1000.0).round() / 1000.0,
            gbps: bytes as f64 * 8.0 / secs / 1e9,
        });
    }
    out
}

/// Throughput of a byte count over seconds, in Gb/s.
pub fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs <= 0.0 {
        0.0
    } else {
        bytes as f64 * 8.0 / secs / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_skips_the_warmup() {
        assert_eq!(window(0.5, 2.0), (50, 250));
        assert_eq!(window(0.0, 0.1), (0, 10));
        assert_eq!(bucket_of(0.0149), 1);
        assert_eq!(bucket_of(-1.0), 0);
    }

    #[test]
    fn folding_keeps_bytes_and_rates() {
        // 1 s of buckets each carrying 1.25 MB = 1 Gb/s.
        let b = vec![1_250_000u64; 100];
        let iv = fold(&b, 0.5);
        assert_eq!(iv.len(), 2);
        assert!((iv[0].gbps - 1.0).abs() < 1e-9);
        assert_eq!(iv[1].t, 1.0);
        // A short last interval is scaled by its own length.
        let iv = fold(&b[..75], 0.5);
        assert_eq!(iv.len(), 2);
        assert!((iv[1].gbps - 1.0).abs() < 1e-9 && iv[1].t == 0.75);
        assert_eq!(sum(&[vec![1, 2, 3], vec![10]]), vec![11, 2, 3]);
        assert_eq!(gbps(125_000_000, 1.0), 1.0);
    }
}
