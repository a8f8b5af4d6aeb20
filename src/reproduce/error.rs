//! Why a paper file could not be used or a reproduction not done: the one error of the
//! reproduction's parts, below all of them.

/// Why a paper file could not be used. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A paper file, a selection or a store that does not answer what was asked.
    #[error("{0}")]
    Input(String),
    /// SIGINT/SIGTERM stopped a suite: no verdicts computed.
    #[error("{0}")]
    Interrupted(String),
    /// A page could not be written, or QEMU guests asked for cannot run here.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error(transparent)]
    Experiment(#[from] crate::experiment::Error),
    #[error(transparent)]
    Report(#[from] crate::report::Error),
}
