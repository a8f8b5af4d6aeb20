//! Benchmarks run side by side with a named peer tool, reported as ratios.

pub mod engine;
pub mod vnic;
