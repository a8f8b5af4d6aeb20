//! Benchmarks run side by side with a named peer tool, reported as ratios.

pub mod crowd;
pub mod engine;
pub mod hop;
pub mod labs;
pub mod meter;
pub mod paced;
pub mod store;
pub mod table;
pub mod vnic;

/// Why a bench could not finish. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A lab, test setting or peer tool was refused or is missing.
    #[error("{0}")]
    Input(String),
    /// Building, measuring or removing a lab, or running a peer tool, failed.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Lab(#[from] crate::lab::Error),
    #[error(transparent)]
    Host(#[from] crate::lab::hostcmd::Error),
    #[error(transparent)]
    Meter(#[from] crate::meter::Error),
    #[error(transparent)]
    Experiment(#[from] crate::experiment::Error),
    #[error(transparent)]
    Measure(#[from] crate::measure::Error),
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error(transparent)]
    Report(#[from] crate::report::Error),
    #[error(transparent)]
    Hop(#[from] hop::Error),
}

/// A one-guest lab of `mode` under the first free name `b1`, `b2`, …, so two benches at once
/// never take the same lab; removed when dropped.
pub fn one_guest_lab(mode: crate::vocab::Mode) -> Result<crate::lab::owned::Lab, Error> {
    Ok(crate::lab::owned::Lab::build_free("b", |name| {
        crate::lab::topology::Topology {
            name: name.into(),
            mode,
            guests: 1,
            ..Default::default()
        }
    })?)
}
