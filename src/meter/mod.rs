//! The meter: where the host's CPU went while traffic flowed.

pub mod procstat;
