//! The session's arithmetic, apart from its sockets: when each frame is due, how big it is, when
//! the engine must hold back (too many frames unacknowledged), and which input events a frame
//! answers (input-to-screen latency).

use std::collections::VecDeque;

/// Frame ticks at `fps`, offset by a per-desktop phase so desktops do not all burst at once.
#[derive(Clone, Copy, Debug)]
pub struct Ticks {
    pub fps: f64,
    /// Seconds of the first tick, in [0, 1/fps).
    pub phase: f64,
}

impl Ticks {
    /// Desktop `id`'s ticks: its phase is spread over the interval by the golden ratio.
    pub fn for_desktop(fps: f64, id: u32) -> Ticks {
        let frac = (f64::from(id) * 0.618_033_988_75).fract();
        Ticks {
            fps,
            phase: frac / fps,
        }
    }
    pub fn interval(&self) -> f64 {
        1.0 / self.fps
    }
    /// When tick `k` is due, seconds on the session's clock.
    pub fn at(&self, k: u64) -> f64 {
        self.phase + k as f64 / self.fps
    }
    /// The first tick due at or after `t`.
    pub fn first_at_or_after(&self, t: f64) -> u64 {
        ((t - self.phase) * self.fps).ceil().max(0.0) as u64
    }
}

/// Evenly spaced events at `per_s` (input events, USB chunks); none at rate 0.
#[derive(Clone, Copy, Debug)]
pub struct Every {
    pub per_s: f64,
}

impl Every {
    /// When event `k` (from 0) is due, or None if there are no events.
    pub fn at(&self, k: u64) -> Option<f64> {
        (self.per_s > 0.0).then(|| k as f64 / self.per_s)
    }
}

/// Draws frame sizes from weighted sizes, reproducibly per desktop (xorshift).
pub struct Sizes {
    sizes: Vec<u32>,
    /// Cumulative weights, normalized to end at 1.
    cum: Vec<f64>,
    x: u64,
}

impl Sizes {
    pub fn new(weighted: &[(u32, f64)], seed: u32) -> Sizes {
        let total: f64 = weighted.iter().map(|w| w.1).sum();
        let mut acc = 0.0;
        let cum = weighted
            .iter()
            .map(|w| {
                acc += w.1 / total;
                acc
            })
            .collect();
        Sizes {
            sizes: weighted.iter().map(|w| w.0).collect(),
            cum,
            x: 0x9e37_79b9_7f4a_7c15 ^ u64::from(seed).wrapping_mul(0x2545_f491_4f6c_dd1d),
        }
    }
    pub fn draw(&mut self) -> u32 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        let u = (self.x >> 11) as f64 / (1u64 << 53) as f64;
        let i = self
            .cum
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.sizes.len() - 1);
        self.sizes[i]
    }
}

/// Whether the engine may send frame `next` (numbered from 1) with frames up to `acked`
/// acknowledged: at most `max_unacked` in flight.
pub fn may_send(next: u32, acked: u32, max_unacked: u32) -> bool {
    next.saturating_sub(1).saturating_sub(acked) < max_unacked
}

/// The most input events waiting for their answer (a stalled engine cannot grow it further).
pub const MAX_PENDING: usize = 1 << 16;

/// Input events sent and not yet answered by a frame, oldest first.
#[derive(Default)]
pub struct InputLog {
    pending: VecDeque<(u32, f64)>,
    /// Events dropped from a full log (never answered in time to count).
    pub dropped: u64,
}

impl InputLog {
    /// Event `seq` was sent at `t` seconds.
    pub fn sent(&mut self, seq: u32, t: f64) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            self.dropped += 1;
        }
        self.pending.push_back((seq, t));
    }
    /// A frame answering every event up to `upto` arrived whole at `now`: the latencies of the
    /// events it answers, in seconds.
    pub fn answered(&mut self, upto: u32, now: f64) -> Vec<f64> {
        let mut out = Vec::new();
        while let Some(&(seq, t)) = self.pending.front() {
            if seq > upto {
                break;
            }
            out.push(now - t);
            self.pending.pop_front();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_evenly_spaced_and_desktops_are_out_of_phase() {
        let t = Ticks::for_desktop(30.0, 0);
        assert_eq!(t.at(0), 0.0);
        assert!((t.at(30) - 1.0).abs() < 1e-12);
        assert_eq!(t.first_at_or_after(0.5), 15);
        assert_eq!(t.first_at_or_after(0.501), 16);
        let phases: Vec<f64> = (0..8).map(|d| Ticks::for_desktop(30.0, d).phase).collect();
        assert!(phases.iter().all(|&p| (0.0..1.0 / 30.0).contains(&p)));
        let mut sorted = phases.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.dedup();
        assert_eq!(sorted.len(), 8);
        assert_eq!(Every { per_s: 0.0 }.at(3), None);
        assert_eq!(Every { per_s: 4.0 }.at(2), Some(0.5));
    }

    #[test]
    fn frame_sizes_follow_their_weights() {
        let mut s = Sizes::new(&[(100, 0.9), (1000, 0.1)], 3);
        let n = 100_000;
        let big = (0..n).filter(|_| s.draw() == 1000).count();
        assert!((9_000..11_000).contains(&big), "{big}");
        let mut one = Sizes::new(&[(64, 1.0)], 0);
        assert!((0..100).all(|_| one.draw() == 64));
    }

    #[test]
    fn the_engine_holds_back_once_too_many_frames_are_unacknowledged() {
        assert!(may_send(1, 0, 3));
        assert!(may_send(3, 0, 3));
        assert!(!may_send(4, 0, 3));
        assert!(may_send(4, 1, 3));
        assert!(!may_send(2, 0, 1));
    }

    #[test]
    fn a_frame_answers_every_event_up_to_its_mark_and_no_later_one() {
        let mut l = InputLog::default();
        l.sent(1, 0.10);
        l.sent(2, 0.12);
        l.sent(3, 0.20);
        let lat = l.answered(2, 0.15);
        assert_eq!(lat.len(), 2);
        assert!((lat[0] - 0.05).abs() < 1e-9 && (lat[1] - 0.03).abs() < 1e-9);
        assert!(l.answered(2, 0.3).is_empty());
        assert_eq!(l.answered(9, 0.25).len(), 1);
        for s in 0..(MAX_PENDING as u32 + 5) {
            l.sent(s + 10, 1.0);
        }
        assert_eq!(l.dropped, 5);
    }
}
