//! The lab stage: builds, describes and removes the virtual-NIC datapaths on this host.
//! It knows topologies, never workloads: other stages reach a lab through `state::LabRecord`
//! and `exec::command`.

pub mod addr;
pub mod build;
pub mod cgroup;
pub mod cpus;
pub mod exec;
pub mod hostcmd;
pub mod journal;
pub mod names;
pub mod plan;
pub mod probe;
pub mod state;
pub mod status;
pub mod steer;
pub mod topology;

/// Why the lab stage could not do what it was asked. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was asked cannot be built as given (a bad topology, a name in use, a range that
    /// overlaps the host's routes, a capability this host lacks) or names no lab: nothing was made.
    #[error("{0}")]
    Input(String),
    /// Another lab took the name while this one was being built: nothing was made.
    #[error("{0}")]
    Taken(String),
    /// SIGINT/SIGTERM or a closed output stopped the build; what was made is removed.
    #[error("{0}")]
    Interrupted(String),
    /// Building or removing a lab failed on the host.
    #[error("{0}")]
    Failed(String),
}
