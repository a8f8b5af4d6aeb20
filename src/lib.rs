//! vnetlab: builds hypervisor virtual-NIC datapaths on one Linux host, drives traffic through
//! them, attributes the host's CPU to each part, and plans VDI capacity. See docs/architecture.md.

pub mod bench;
pub mod capacity;
pub mod cli;
pub mod engine;
pub mod experiment;
pub mod fleet;
pub mod fuzzing;
pub mod guest;
pub mod lab;
pub mod measure;
pub mod meter;
pub mod named;
pub mod records;
pub mod report;
pub mod reproduce;
pub mod shield;
pub mod stats;
pub mod store;
pub mod sys;
pub mod text;
pub mod units;
pub mod vnic;
pub mod vocab;
