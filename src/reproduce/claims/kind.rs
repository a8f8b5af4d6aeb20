//! How each kind of claim compares its figures, handed to the kind's own module.

use super::claim::{Claim, Kind};
use super::figure::{Figure, Read};
use super::{above, near, ordered};

impl Claim {
    /// Whether the figures compare as the claim says, in one reading of them.
    pub(super) fn compare(&self, f: &[Figure], read: Read) -> bool {
        match self.kind {
            Kind::Near => near::compare(self, f, read),
            Kind::Above => above::compare(self, f, read),
            _ => ordered::compare(self, f, read),
        }
    }

    /// Which way these figures go, sized against the effect floor: for the claim, against it,
    /// or neither.
    pub(super) fn way(&self, f: &[Figure]) -> Option<bool> {
        match self.kind {
            Kind::Near => near::way(self, f),
            Kind::Above => above::way(self, f),
            _ => ordered::way(self, f),
        }
    }

    /// The claim's ratio over one set of values, one per series, without `by`: see
    /// `paper_ratio`. For `above`, the first series' figure itself.
    pub(super) fn ratio(&self, v: &[f64]) -> f64 {
        match self.kind {
            Kind::Near => v[0] / v[1],
            Kind::Above => v[0],
            _ => ordered::ratio(self.kind, v),
        }
    }
}
