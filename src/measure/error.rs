//! Why a point could not be measured: the measuring core's one error, below every part of it.

/// Why a point could not be measured. Its `Display` is the one line users see; the stages it
/// drives keep their own errors inside.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The test as asked is wrong: nothing was measured.
    #[error("{0}")]
    Input(String),
    /// Measuring failed on the host.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Lab(#[from] crate::lab::Error),
    #[error(transparent)]
    Engine(#[from] crate::engine::Error),
    #[error(transparent)]
    Meter(#[from] crate::meter::Error),
}
