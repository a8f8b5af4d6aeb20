//! Userspace vNIC device models: the hypervisor side of a guest's NIC, between a tap in the guest
//! and a tap on the host's bridge. `emulated` moves one frame per syscall with no offloads (an
//! emulated e1000); `paravirt` uses virtio-net headers, offloads and super-frames, with optional
//! software LRO toward the guest (virtio-net, Xen netfront/netback).

pub mod backend;
pub mod frame;
mod frames;
pub mod lro;
mod rw;
pub mod tap;
mod uring;

/// Why a vNIC backend could not start or stopped. Its `Display` is the one line users see.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The backend's configuration is wrong (flags, tap names).
    #[error("{0}")]
    Input(String),
    /// A tap, epoll or the kernel refused while forwarding.
    #[error("{0}")]
    Failed(String),
    /// A namespace could not be entered.
    #[error(transparent)]
    Netns(#[from] crate::sys::Error),
}
