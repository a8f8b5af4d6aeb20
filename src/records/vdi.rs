//! A VDI test's result per desktop and in total as the stored document keeps it: the client's
//! frames, delays and latencies, the engine's skipped ticks, the bytes each way, and how the two
//! machines' clocks were set against each other. The engine fills it (`engine::vdi_result`).

use serde::{Deserialize, Serialize};

/// Percentiles of a latency, microseconds.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// One desktop's session as its user felt it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Desktop {
    pub name: String,
    pub target_fps: f64,
    /// Frames that arrived whole per second of the window.
    pub fps: f64,
    /// A frame's first byte sent to its last byte received.
    pub frame_delay_us: Option<Percentiles>,
    /// An input event's send to the whole arrival of the frame that answers it.
    pub input_latency_us: Option<Percentiles>,
    /// Frames later than one frame interval.
    pub late_frames: u64,
    /// Changes that got no update of their own (back-pressure, or the engine was busy).
    pub skipped_frames: u64,
    pub bytes_screen: u64,
    pub bytes_input: u64,
    /// USB redirection, both ways together.
    pub usb_gbps: f64,
    /// The engine's own CPU for this session (vnetlab's work, not the kernel's), % of a core.
    pub engine_own_pct: f64,
    /// The kernel's CPU in the engine's sends and receives for this session, % of a core.
    pub engine_kernel_pct: f64,
}

/// Every desktop together.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Total {
    pub desktops: usize,
    pub target_fps: f64,
    pub fps: f64,
    pub frame_delay_us: Option<Percentiles>,
    pub input_latency_us: Option<Percentiles>,
    pub late_frames: u64,
    /// Late frames as a share of the frames due (a session "breaks" above 1 %).
    pub late_pct: f64,
    pub skipped_frames: u64,
    pub bytes_screen: u64,
    pub bytes_input: u64,
    pub screen_gbps: f64,
    pub usb_gbps: f64,
    /// The engine's own CPU and its kernel's, summed over the sessions, % of a core.
    pub engine_own_pct: f64,
    pub engine_kernel_pct: f64,
}

/// A VDI test's sessions: the profile, each desktop and their total.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct VdiResult {
    pub profile: String,
    pub desktops: Vec<Desktop>,
    pub total: Total,
    /// Frame delays cross machines (engine on the host, client elsewhere): how the two clocks
    /// were set against each other, and so how far off each delay may be. None: one machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSync>,
}

/// How one machine's clock was set against another's for one-way delays: the offset (theirs less
/// ours), and how far off it may be (half the fastest round trip of the exchange). On one machine
/// both are 0 and `shared` says the clock is the same.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct ClockSync {
    pub shared: bool,
    pub offset_ns: i64,
    pub uncertainty_ns: u64,
}
