//! A paper's claims as checks over stored points: which points a check reads (selectors over the
//! point's key), the figure it compares and how; the verdict is computed from the run, never
//! written down. A claim whose points were not measured is "not measurable", with why.
//!
//! `claim` holds what a paper file writes and what a check yields; `figure` reads the points;
//! one module per claim kind says how that kind compares (`ordered`: lowest, highest, greater;
//! `near`; `above`), `kind` hands a claim to its kind's; `verdict` turns the comparisons into a
//! verdict; `pairs` splits a claim that names a size per pair of series; `evaluate` puts them
//! together over a run's points.

mod above;
mod claim;
mod evaluate;
mod figure;
mod kind;
mod metric;
mod near;
mod ordered;
mod pairs;
#[cfg(test)]
mod quote;
mod selector;
#[cfg(test)]
mod tests;
mod verdict;

pub use claim::{Checked, Claim, EffectSize, Kind, Origin, PairSize, Quote, Verdict, EFFECT_FLOOR};
pub use figure::{Unmeasurable, TAIL_BEYOND};
pub use metric::Metric;
pub use selector::Selector;
