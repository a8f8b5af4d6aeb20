//! The capacity planner (paper 1's model, generalized).

use crate::report::html::Section;
use crate::store::{PointRecord, RunRow};

/// Sections the planner adds to a run's HTML report.
pub fn report_sections(_run: &RunRow, _points: &[PointRecord]) -> Vec<Section> {
    Vec::new()
}
