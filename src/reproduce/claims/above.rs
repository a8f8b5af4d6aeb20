//! Claims that put the first series above a value the paper gives ("exceeds 2.5 Gb/s"): a
//! threshold, with no effect to size against a floor.

use super::claim::Claim;
use super::figure::{Figure, Read};

/// Whether the figure is above the value, in one reading of its range.
pub(super) fn compare(c: &Claim, f: &[Figure], read: Read) -> bool {
    read.at(&f[0], false) > c.value.unwrap_or(f64::INFINITY)
}

/// A threshold goes the way it compares.
pub(super) fn way(c: &Claim, f: &[Figure]) -> Option<bool> {
    Some(compare(c, f, Read::Medians))
}
