//! The figures a claim can read from a stored point, and their units.

use serde::{Deserialize, Serialize};

use crate::records::{PointRecord, Repeat};

/// A figure of a stored point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    ThroughputGbps,
    HostBusyPct,
    NormalizedPctPerGbps,
    TransactionsPerS,
    LatencyP50Us,
    LatencyP99Us,
    /// The 99.9th percentile: the robust tail where a paper speaks of worst cases (one
    /// scheduler hiccup among thousands of samples makes the maximum a coin toss).
    LatencyP999Us,
    /// The largest request/response time (of the point's median repeat).
    LatencyMaxUs,
    /// Segments merged per buffer by the backend's software LRO.
    LroRatio,
    /// Paper 1's movie: host CPU while the desktops buffer their video (and play it).
    MovieBufferingPct,
    /// Paper 1's movie: host CPU once buffered, while the sessions only play.
    MoviePlayingPct,
}

impl Metric {
    pub fn of(self, p: &PointRecord) -> Option<f64> {
        match self {
            Metric::ThroughputGbps => p.throughput_gbps,
            Metric::HostBusyPct => p.host_busy_pct,
            Metric::NormalizedPctPerGbps => p.normalized_pct_per_gbps,
            Metric::TransactionsPerS => p.transactions_per_s,
            Metric::LatencyP50Us => p.latency_p50_us,
            Metric::LatencyP99Us => p.latency_p99_us,
            Metric::LatencyP999Us => p
                .result
                .as_ref()?
                .result
                .latency_us
                .as_ref()
                .map(|l| l.p999),
            Metric::LatencyMaxUs => p.result.as_ref()?.result.latency_us.as_ref().map(|l| l.max),
            Metric::LroRatio => p
                .result
                .as_ref()?
                .vnic
                .as_ref()?
                .values()
                .filter_map(|v| v.lro.as_ref())
                .map(|l| l.lro_ratio)
                .reduce(f64::max),
            Metric::MovieBufferingPct => p.result.as_ref()?.movie.as_ref()?.buffering.host_busy_pct,
            Metric::MoviePlayingPct => p.result.as_ref()?.movie.as_ref()?.play_only.host_busy_pct,
        }
    }
    /// The figure in one repeat, where repeats keep it.
    pub fn of_repeat(self, r: &Repeat) -> Option<f64> {
        match self {
            Metric::ThroughputGbps => Some(r.throughput_gbps),
            Metric::HostBusyPct => r.host_busy_pct,
            Metric::NormalizedPctPerGbps => r.normalized_pct_per_gbps,
            Metric::TransactionsPerS => r.transactions_per_s,
            Metric::LatencyP99Us => r.latency_p99_us,
            Metric::LatencyP999Us => r.latency_p999_us,
            Metric::LatencyMaxUs => r.latency_max_us,
            Metric::MovieBufferingPct => r.movie_buffering_pct,
            Metric::MoviePlayingPct => r.movie_playing_pct,
            _ => None,
        }
    }
    /// The quantile a tail figure reads (a share of the request/response samples it lies above).
    pub fn tail_quantile(self) -> Option<f64> {
        match self {
            Metric::LatencyP99Us => Some(0.99),
            Metric::LatencyP999Us => Some(0.999),
            _ => None,
        }
    }
    /// Whether the figure is a cost (host CPU, or host CPU per Gb/s): a cost is read only from
    /// points nothing bound, as plans read theirs. A saturated point's CPU is its ceiling's.
    pub fn is_cost(self) -> bool {
        matches!(
            self,
            Metric::HostBusyPct
                | Metric::NormalizedPctPerGbps
                | Metric::MovieBufferingPct
                | Metric::MoviePlayingPct
        )
    }
    pub fn unit(self) -> &'static str {
        match self {
            Metric::ThroughputGbps => "Gb/s",
            Metric::HostBusyPct | Metric::MovieBufferingPct | Metric::MoviePlayingPct => {
                "% host CPU"
            }
            Metric::NormalizedPctPerGbps => "% host CPU per Gb/s",
            Metric::TransactionsPerS => "transactions/s",
            Metric::LatencyP50Us
            | Metric::LatencyP99Us
            | Metric::LatencyP999Us
            | Metric::LatencyMaxUs => "µs",
            Metric::LroRatio => "segments per buffer",
        }
    }
}
