//! Why the meter could not measure: the one error of its parts and of the meter itself, below
//! every reader of the kernel's files.

/// Why the meter could not measure. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kernel file (/proc/stat, a cgroup's counters) could not be read or parsed.
    #[error("{0}")]
    Unreadable(String),
    /// This host does not offer what was asked (hardware counters).
    #[error("{0}")]
    Unsupported(String),
}
