//! The lab stage: builds, describes and removes the virtual-NIC datapaths on this host.
//! It knows topologies, never workloads: other stages reach a lab through `state::LabRecord`
//! and `exec::command`.

pub mod addr;
pub mod build;
pub mod cgroup;
pub mod cpus;
pub mod exec;
pub mod folder;
pub mod hostcmd;
pub mod journal;
pub mod names;
pub mod owned;
pub mod pacing;
pub mod plan;
pub mod probe;
pub mod state;
pub mod status;
pub mod steer;
pub mod topology;
pub mod uplink;
pub mod vfio;
pub mod vms;

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
    /// A host tool (ip, tc, nft, ethtool, …) could not run or refused.
    #[error(transparent)]
    Host(#[from] hostcmd::Error),
    /// A namespace could not be entered.
    #[error(transparent)]
    Netns(#[from] crate::sys::Error),
    /// A quantity in the topology is not written as vnetlab reads it.
    #[error(transparent)]
    Quantity(#[from] crate::units::Error),
    /// A word in the topology (mode, gro, …) names nothing vnetlab knows.
    #[error(transparent)]
    Word(#[from] crate::vocab::Error),
    /// A topology file could not be read.
    #[error(transparent)]
    File(#[from] crate::text::Error),
    /// A QEMU guest's image, acceleration probe or boot failed.
    #[error(transparent)]
    Guest(#[from] crate::guest::Error),
}

impl Error {
    /// Whether the fault is in what was asked (exit 2) rather than on the host. A name another
    /// `up` took a moment earlier is the same refusal as a name taken long ago.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            Error::Input(_)
                | Error::Taken(_)
                | Error::Quantity(_)
                | Error::Word(_)
                | Error::File(_)
        )
    }

    /// The same message, classed as the user's input (a named lab's journal or record that
    /// cannot be read is reported as a bad name, exit 2, as it always was).
    pub fn as_input(self) -> Error {
        match self {
            Error::Failed(m) => Error::Input(m),
            e => e,
        }
    }
}

/// A shield that cannot be raised as asked is the user's to change; one the host refused is not.
impl From<crate::shield::Error> for Error {
    fn from(e: crate::shield::Error) -> Error {
        match e {
            crate::shield::Error::Input(m) => Error::Input(m),
            e => Error::Failed(e.to_string()),
        }
    }
}

/// A range that cannot be taken is what was asked.
impl From<addr::Error> for Error {
    fn from(e: addr::Error) -> Error {
        Error::Input(e.to_string())
    }
}

/// What this host lacks for `mode` (one line naming the closest mode that works), if anything:
/// QEMU and its devices for the VM modes, a datapath's own needs for the rest.
pub fn lacks(mode: crate::vocab::Mode) -> Option<String> {
    match plan::datapath::of(mode).vm() {
        Some(_) => vms::missing(mode),
        None => plan::datapath::of(mode).missing(),
    }
}
