//! Experiments: files, matrix expansion, measuring one point, and the run loop that ties the lab,
//! the engine, the meter and the store together.

pub mod bound;
pub mod facts;
pub mod file;
pub mod matrix;
pub mod measure;
pub mod run;
