//! Pacing a stream to a bit rate (paper 1's 100 Mb/s per desktop): a token bucket that says how
//! long to wait before the next send.

use std::time::Duration;

pub struct Pacer {
    bytes_per_s: f64,
    burst: f64,
}

impl Pacer {
    /// `burst` bytes may go ahead of the rate (at least one message).
    pub fn new(bits_per_s: u64, msg: usize) -> Pacer {
        let bytes_per_s = bits_per_s as f64 / 8.0;
        // A 2 ms burst keeps syscalls and sleeps few without visible lumps at 10 ms granularity.
        let burst = (bytes_per_s * 0.002).max(msg as f64);
        Pacer { bytes_per_s, burst }
    }

    /// How long to wait before sending more, having sent `sent` bytes `elapsed` after the start.
    pub fn wait(&self, sent: u64, elapsed: Duration) -> Duration {
        let allowed = self.bytes_per_s * elapsed.as_secs_f64() + self.burst;
        let ahead = sent as f64 - allowed;
        if ahead <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(ahead / self.bytes_per_s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_holds_the_rate() {
        let p = Pacer::new(100_000_000, 1000); // 12.5 MB/s
        assert_eq!(p.wait(0, Duration::ZERO), Duration::ZERO);
        // 1 s in, 12.5 MB allowed plus a 25 KB burst.
        assert_eq!(p.wait(12_500_000, Duration::from_secs(1)), Duration::ZERO);
        let w = p.wait(12_500_000 + 25_000 + 125_000, Duration::from_secs(1));
        assert!((w.as_secs_f64() - 0.01).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn simulated_paced_sender_averages_the_rate() {
        // Drive the pacer with a fake clock: each send takes no time, waits advance the clock.
        let p = Pacer::new(100_000_000, 1448);
        let (mut t, mut sent) = (Duration::ZERO, 0u64);
        while t < Duration::from_secs(2) {
            let w = p.wait(sent, t);
            if w.is_zero() {
                sent += 1448;
            } else {
                t += w;
            }
        }
        let rate = sent as f64 * 8.0 / t.as_secs_f64();
        assert!((rate / 1e8 - 1.0).abs() < 0.01, "{rate}");
    }
}
