//! Why a report could not be drawn or written: the one error of the report's parts.

/// Why a report could not be drawn or written. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The page or a chart could not be drawn or written.
    #[error("{0}")]
    Failed(String),
}
