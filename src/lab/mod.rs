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
