//! The measuring core, between the lab, the engine and the meter below and the experiments,
//! tests, benches and paper reproductions above; this face names its parts:
//! where a test runs (`Target`), what moves its bytes (`TrafficSource`: vnetlab's engine or a stock
//! iperf3), the loads beside it, what bound it, and one measured point (`Measured`) from a run of
//! the source with the meter on over exactly the measured window, repeated as asked with the
//! spread kept.

pub mod agents;
pub mod bound;
pub mod desc;
pub mod iperf3;
pub mod load;
pub mod source;
pub mod target;

pub mod error;
pub mod one;
pub mod rounds;

pub use crate::records::measured::Measured;
pub use agents::lab_agents;
pub use error::Error;
pub use one::{cpu_of, measure, repeat_of};
pub use rounds::{combined, cost_units, met, repeated, repeats, units, Stopping, EFFECT_FLOOR};
pub use source::TrafficSource;
pub use target::{place_driver, Target};
