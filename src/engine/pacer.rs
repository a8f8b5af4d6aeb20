//! Pacing a stream to a bit rate (paper 1's 100 Mb/s per desktop). Two schedules:
//!
//! - **Ticks** (streams): what an application with a timer does, and what iperf3 `-b` does with
//!   its 1 ms pacing timer: at each tick the sender writes, back to back, everything due since the
//!   start, then sleeps to the next tick. A burst is about `rate × tick` (at least one message),
//!   so the stack sends it as a few large segments and the receiver acknowledges it as a train.
//!   Spacing every message apart instead (one write per `msg / rate`) made the receiver
//!   acknowledge each small segment on its own and cost the host's receive path up to 3× the
//!   ACK work of iperf3 at the same rate.
//! - **Spaced** (request/response): each transaction at its own due time, an open load whose
//!   latency is not the back-to-back limit of a burst.
//!
//! A sender that falls behind (a stall, a full socket) catches up in bursts of at most
//! `MAX_DEBT_TICKS` ticks' worth: what it owes beyond that is forgiven, so one long stall does
//! not become one long burst (the delivered rate then says the path did not carry the load).

use std::time::Duration;

/// The application tick: iperf3's default `--pacing-timer` (1000 µs).
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);
/// The most a late sender may owe, in ticks, before the excess is forgiven.
const MAX_DEBT_TICKS: f64 = 50.0;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Schedule {
    Ticks(f64),
    Spaced,
}

pub struct Pacer {
    bytes_per_s: f64,
    schedule: Schedule,
    /// Bytes forgiven so far (owed beyond the debt limit after a stall).
    forgiven: f64,
}

impl Pacer {
    /// A stream paced in bursts, one per `tick`.
    pub fn ticks(bits_per_s: u64, tick: Duration) -> Pacer {
        Pacer {
            bytes_per_s: bits_per_s as f64 / 8.0,
            schedule: Schedule::Ticks(tick.as_secs_f64().max(1e-6)),
            forgiven: 0.0,
        }
    }

    /// Transactions (or messages) each at its own due time.
    pub fn spaced(bits_per_s: u64) -> Pacer {
        Pacer {
            bytes_per_s: bits_per_s as f64 / 8.0,
            schedule: Schedule::Spaced,
            forgiven: 0.0,
        }
    }

    /// The bytes a burst holds at most (before the message that crosses it): `rate × tick`.
    pub fn burst_bytes(&self) -> f64 {
        match self.schedule {
            Schedule::Ticks(t) => self.bytes_per_s * t,
            Schedule::Spaced => 0.0,
        }
    }

    /// How long to wait before sending more, having sent `sent` bytes `elapsed` after the start.
    /// Zero: send now.
    pub fn wait(&mut self, sent: u64, elapsed: Duration) -> Duration {
        let now = elapsed.as_secs_f64();
        let due = self.bytes_per_s * now - self.forgiven;
        let owed = due - sent as f64;
        if let Schedule::Ticks(tick) = self.schedule {
            let limit = self.bytes_per_s * tick * MAX_DEBT_TICKS;
            if owed > limit {
                self.forgiven += owed - limit;
            }
        }
        if owed > 0.0 {
            return Duration::ZERO;
        }
        // `sent` bytes are due at this instant (seconds from the start).
        let at = (sent as f64 + self.forgiven) / self.bytes_per_s;
        let wake = match self.schedule {
            // The first tick at or after the instant: bursts stay on the tick grid.
            Schedule::Ticks(tick) => (at / tick).ceil() * tick,
            Schedule::Spaced => at,
        };
        Duration::from_secs_f64((wake - now).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a pacer with a fake clock: each send takes no time, waits advance the clock.
    /// Returns (bytes sent, seconds, the sizes of the bursts sent between waits).
    fn simulate(p: &mut Pacer, msg: u64, secs: f64) -> (u64, f64, Vec<u64>) {
        let (mut t, mut sent, mut burst) = (Duration::ZERO, 0u64, 0u64);
        let mut bursts = Vec::new();
        while t < Duration::from_secs_f64(secs) {
            let w = p.wait(sent, t);
            if w.is_zero() {
                sent += msg;
                burst += msg;
            } else {
                bursts.push(burst);
                burst = 0;
                t += w;
            }
        }
        (sent, t.as_secs_f64(), bursts)
    }

    #[test]
    fn tick_pacing_sends_one_burst_per_tick_at_the_rate() {
        // 200 Mb/s = 25 KB per 1 ms tick; 1 KB messages: 25 back to back, then a sleep.
        let mut p = Pacer::ticks(200_000_000, DEFAULT_TICK);
        assert_eq!(p.burst_bytes(), 25_000.0);
        let (sent, secs, bursts) = simulate(&mut p, 1024, 1.0);
        let rate = sent as f64 * 8.0 / secs;
        assert!((rate / 2e8 - 1.0).abs() < 0.002, "{rate}");
        let steady = &bursts[10..bursts.len() - 1];
        assert!(
            steady.iter().all(|&b| (24 * 1024..=26 * 1024).contains(&b)),
            "{steady:?}"
        );
        // One burst per tick: as many bursts as ticks.
        assert!((bursts.len() as i64 - 1000).abs() <= 2, "{}", bursts.len());
    }

    #[test]
    fn a_message_larger_than_a_tick_goes_alone_every_few_ticks() {
        // 64 KB at 500 Mb/s: 62.5 KB per tick, so each burst is one message.
        let mut p = Pacer::ticks(500_000_000, DEFAULT_TICK);
        let (sent, secs, bursts) = simulate(&mut p, 65536, 2.0);
        assert!((sent as f64 * 8.0 / secs / 5e8 - 1.0).abs() < 0.002);
        assert!(bursts[1..].iter().all(|&b| b == 65536), "{bursts:?}");
    }

    #[test]
    fn wakes_fall_on_the_tick_grid() {
        let mut p = Pacer::ticks(8_000_000, Duration::from_millis(10)); // 10 KB per tick
        let w = p.wait(15_000, Duration::from_millis(3));
        // 15 KB are due at 15 ms; the next tick at or after it is 20 ms.
        assert!((w.as_secs_f64() - 0.017).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn spaced_pacing_spaces_each_message() {
        let mut p = Pacer::spaced(100_000_000); // 12.5 MB/s
        assert_eq!(p.wait(0, Duration::ZERO), Duration::ZERO);
        // 1250 bytes sent at t=0 are due at 100 µs.
        let w = p.wait(1250, Duration::ZERO);
        assert!((w.as_secs_f64() - 1e-4).abs() < 1e-12, "{w:?}");
        let (sent, secs, bursts) = simulate(&mut p, 1250, 0.5);
        assert!((sent as f64 * 8.0 / secs / 1e8 - 1.0).abs() < 0.001);
        assert!(bursts[1..].iter().all(|&b| b == 1250));
    }

    #[test]
    fn a_stall_is_caught_up_in_bounded_bursts() {
        let mut p = Pacer::ticks(80_000_000, DEFAULT_TICK); // 10 KB per tick
                                                            // Sent nothing for a whole second: 1 MB owed, at most 50 ticks (500 KB) are kept.
        let (mut sent, t) = (0u64, Duration::from_secs(1));
        while p.wait(sent, t).is_zero() {
            sent += 1000;
        }
        assert!((500_000..=501_000).contains(&sent), "{sent}");
    }
}
