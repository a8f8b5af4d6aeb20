//! The session's arithmetic, apart from its sockets: when the desktop's own screen changes, when
//! an update may leave (a change is pending and the frame-rate cap allows), how big it is, when
//! the engine must hold back (too many updates unacknowledged), and which input events an update
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

/// A share of the cap's interval an update may come early by: a desktop whose own activity runs
/// at the cap (a 30 fps video at a 30 fps cap) would otherwise lose a frame whenever the last
/// one left a scheduler's hiccup after its tick.
const CAP_SLACK: f64 = 0.05;

/// When screen updates leave: as soon as the screen has changed, but never less than
/// `1 / max_fps` (less `CAP_SLACK`) after the last one; changes that come while one waits leave
/// with it.
#[derive(Clone, Copy, Debug)]
pub struct Updates {
    min_interval: f64,
    last_sent: Option<f64>,
    /// When the oldest change not yet sent happened.
    pending_since: Option<f64>,
}

impl Updates {
    pub fn new(max_fps: f64) -> Updates {
        Updates {
            min_interval: 1.0 / max_fps,
            last_sent: None,
            pending_since: None,
        }
    }
    /// The screen changed at `t`. Returns whether the change joins one already waiting.
    pub fn change(&mut self, t: f64) -> bool {
        let joined = self.pending_since.is_some();
        self.pending_since.get_or_insert(t);
        joined
    }
    /// Whether a change waits for its update.
    pub fn pending(&self) -> bool {
        self.pending_since.is_some()
    }
    /// When the waiting change's update may leave (None: nothing waits).
    pub fn due_at(&self) -> Option<f64> {
        let since = self.pending_since?;
        Some(match self.last_sent {
            Some(l) => since.max(l + self.min_interval * (1.0 - CAP_SLACK)),
            None => since,
        })
    }
    /// An update left at `t`, carrying every change so far.
    pub fn sent(&mut self, t: f64) {
        self.last_sent = Some(t);
        self.pending_since = None;
    }
}

/// Input event kinds, as the client marks them in the event's first data byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Key,
    /// A pointer move: the client draws the pointer, the screen does not change.
    Move,
    Click,
}

impl InputKind {
    pub fn byte(self) -> u8 {
        match self {
            InputKind::Key => 0,
            InputKind::Move => 1,
            InputKind::Click => 2,
        }
    }
    pub fn of_byte(b: u8) -> InputKind {
        match b {
            1 => InputKind::Move,
            2 => InputKind::Click,
            _ => InputKind::Key,
        }
    }
    /// Whether the event changes the screen (and so waits for an update that answers it).
    pub fn changes_screen(self) -> bool {
        self != InputKind::Move
    }
}

/// The client's input events in the order they go: keys, pointer moves and clicks, each kind
/// arriving at random at its rate (exponential gaps, as a person's input does: evenly spaced
/// schedules would put a key and a click at the same instant every second), drawn reproducibly
/// per desktop.
pub struct Inputs {
    kinds: [(InputKind, f64); 3],
    next_at: [f64; 3],
    x: u64,
}

impl Inputs {
    pub fn new(keys: f64, moves: f64, clicks: f64, seed: u32) -> Inputs {
        let mut i = Inputs {
            kinds: [
                (InputKind::Key, keys),
                (InputKind::Move, moves),
                (InputKind::Click, clicks),
            ],
            next_at: [f64::INFINITY; 3],
            x: 0x2545_f491_4f6c_dd1d ^ u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        for k in 0..3 {
            i.next_at[k] = i.gap(k);
        }
        i
    }
    /// A gap before kind `k`'s next event, seconds (never, at rate 0).
    fn gap(&mut self, k: usize) -> f64 {
        let rate = self.kinds[k].1;
        if rate <= 0.0 {
            return f64::INFINITY;
        }
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        // u in (0, 1]: never ln(0).
        let u = ((self.x >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        -u.ln() / rate
    }
    /// The next event: when it is due and its kind (None: no input at all).
    pub fn peek(&self) -> Option<(f64, InputKind)> {
        (0..3)
            .filter(|&k| self.next_at[k].is_finite())
            .min_by(|&a, &b| self.next_at[a].total_cmp(&self.next_at[b]))
            .map(|k| (self.next_at[k], self.kinds[k].0))
    }
    /// Takes the event `peek` named.
    pub fn take(&mut self) {
        if let Some((t, kind)) = self.peek() {
            let k = self.kinds.iter().position(|x| x.0 == kind).unwrap_or(0);
            self.next_at[k] = t + self.gap(k);
        }
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
    fn an_update_leaves_at_the_change_unless_the_cap_holds_it_and_changes_share_it() {
        let mut u = Updates::new(30.0);
        assert_eq!(u.due_at(), None);
        assert!(!u.change(1.0));
        assert_eq!(u.due_at(), Some(1.0));
        u.sent(1.0);
        assert!(!u.pending());
        // A change 10 ms later waits for the cap (1/30 s after the last update); a second one
        // joins it.
        assert!(!u.change(1.010));
        assert!(u.change(1.020));
        let cap = 1.0 + (1.0 - CAP_SLACK) / 30.0;
        assert!((u.due_at().unwrap() - cap).abs() < 1e-12);
        u.sent(1.04);
        // A change long after the last update leaves at once.
        u.change(2.0);
        assert_eq!(u.due_at(), Some(2.0));
    }

    #[test]
    fn inputs_arrive_at_their_rates_and_only_moves_leave_the_screen_alone() {
        let mut i = Inputs::new(4.0, 20.0, 1.0, 7);
        let (mut seen, mut last) = (Vec::new(), 0.0);
        while let Some((t, k)) = i.peek() {
            if t >= 200.0 {
                break;
            }
            assert!(t >= last, "in order");
            last = t;
            seen.push(k);
            i.take();
        }
        let n = |k| seen.iter().filter(|x| **x == k).count() as f64 / 200.0;
        assert!(
            (3.6..4.4).contains(&n(InputKind::Key)),
            "{}",
            n(InputKind::Key)
        );
        assert!(
            (18.0..22.0).contains(&n(InputKind::Move)),
            "{}",
            n(InputKind::Move)
        );
        assert!(
            (0.8..1.2).contains(&n(InputKind::Click)),
            "{}",
            n(InputKind::Click)
        );
        // Reproducible per desktop, different across desktops.
        let first = |seed| Inputs::new(4.0, 0.0, 0.0, seed).peek().unwrap().0;
        assert_eq!(first(3), first(3));
        assert_ne!(first(3), first(4));
        assert!(Inputs::new(0.0, 0.0, 0.0, 1).peek().is_none());
        assert!(!InputKind::Move.changes_screen());
        assert!(InputKind::Key.changes_screen() && InputKind::Click.changes_screen());
        for k in [InputKind::Key, InputKind::Move, InputKind::Click] {
            assert_eq!(InputKind::of_byte(k.byte()), k);
        }
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
