//! Experiments: files, matrix expansion, and the run loop that measures each point (through the
//! measuring core) into the store, lab by lab and round by round.

pub mod facts;
pub mod file;
pub mod matrix;
pub mod outlet;
pub mod run;

/// Why an experiment or a test could not run. Its `Display` is the one line users see; the
/// stages it drives keep their own errors inside.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The experiment file or the test as asked is wrong: nothing was measured.
    #[error("{0}")]
    Input(String),
    /// Measuring failed on the host.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Measure(#[from] crate::measure::Error),
    #[error(transparent)]
    Lab(#[from] crate::lab::Error),
    #[error(transparent)]
    Engine(#[from] crate::engine::Error),
    #[error(transparent)]
    Meter(#[from] crate::meter::Error),
    #[error(transparent)]
    Store(#[from] crate::store::Error),
}
