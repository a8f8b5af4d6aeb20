//! What moves a measured test's bytes: the `TrafficSource` trait and vnetlab's own engine. A
//! source runs the test between the target's endpoints and opens the meter's window over exactly
//! the seconds its figures cover; everything else (loads, the meter, what bound the point) is the
//! measuring core's, the same for every source. The other source is a stock iperf3 (`iperf3`).

use std::time::{Duration, Instant};

use super::error::Error;
use super::target::Target;
use crate::engine::controller;
use crate::engine::spec::Spec;
use crate::records::test::TestResult;

/// Moves a test's bytes and says which seconds its figures cover.
pub trait TrafficSource {
    /// Who moved the bytes, as results say it.
    fn engine(&self) -> crate::vocab::Engine;
    /// Whether this source can run `spec` between the target's endpoints (a one-line reason).
    fn check(&self, target: &Target, spec: &Spec) -> Result<(), Error>;
    /// Runs the test; `window(start, end)` is called once, with the measured window, as soon as
    /// it is known.
    fn run(
        &self,
        target: &Target,
        spec: &Spec,
        window: &mut dyn FnMut(Instant, Instant),
    ) -> Result<TestResult, Error>;
}

/// vnetlab's own engine: an agent in each endpoint, one clock for every stream.
pub struct Engine;

impl TrafficSource for Engine {
    fn engine(&self) -> crate::vocab::Engine {
        crate::vocab::Engine::Vnetlab
    }

    fn check(&self, _: &Target, _: &Spec) -> Result<(), Error> {
        Ok(())
    }

    fn run(
        &self,
        target: &Target,
        spec: &Spec,
        window: &mut dyn FnMut(Instant, Instant),
    ) -> Result<TestResult, Error> {
        let (mut agents, pairs) = target.agents()?;
        let mut on_start = |t: Instant| {
            let a = t + Duration::from_secs_f64(spec.warmup);
            window(a, a + Duration::from_secs_f64(spec.duration));
        };
        let r = controller::run_test(spec, &mut agents, &pairs, &mut on_start);
        drop(agents);
        Ok(r?)
    }
}
