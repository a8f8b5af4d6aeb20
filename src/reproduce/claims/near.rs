//! Claims that put two series near each other: within the paper's bound where the sentence
//! gives one, else within the effect floor.

use super::claim::{Claim, EFFECT_FLOOR};
use super::figure::{Figure, Read};

/// How far a `near` claim's ratio may miss 1 before the claim fails: past the paper's bound
/// by more than the effect floor (a smaller miss is no difference this host resolves); where
/// the paper gives no bound, the floor is the bound and is counted once (past it this host
/// resolves a difference: a `greater` claim on the same figures would hold).
fn fails_past(c: &Claim) -> f64 {
    c.by_given.map_or(EFFECT_FLOOR, |by| by + EFFECT_FLOOR)
}

/// Whether the two figures are near, in one reading: the medians; against the claim, every
/// ratio the ranges allow is near; for it, the nearest one is, or misses by no more than
/// `fails_past`.
pub(super) fn compare(c: &Claim, f: &[Figure], read: Read) -> bool {
    let (a, b) = (&f[0], &f[1]);
    let ratios = match read {
        Read::Medians => vec![a.value / b.value],
        _ => vec![a.low / b.high, a.high / b.low],
    };
    let off = ratios.iter().map(|r| (r - 1.0).abs());
    match read {
        Read::Against | Read::Medians => off.fold(0.0, f64::max) <= c.by(),
        Read::For => {
            let straddles = ratios[0] <= 1.0 && ratios[ratios.len() - 1] >= 1.0;
            straddles || off.fold(f64::INFINITY, f64::min) <= fails_past(c)
        }
    }
}

/// Near within the bound goes for the claim; past `fails_past`, against; between, neither.
pub(super) fn way(c: &Claim, f: &[Figure]) -> Option<bool> {
    let off = (f[0].value / f[1].value - 1.0).abs();
    (off <= c.by())
        .then_some(true)
        .or((off > fails_past(c)).then_some(false))
}
