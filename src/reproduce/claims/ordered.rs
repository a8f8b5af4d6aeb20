//! Claims that order their series: the first lowest or highest of all, or greater than the
//! second, by a factor (`by`) or by the paper's own size (`Claim::sized`).

use super::claim::{Claim, Kind, EFFECT_FLOOR};
use super::figure::{Figure, Read};

/// Whether the figures compare as the claim says, in one reading: medians, or the repeats'
/// ranges read against the claim (its first series' worst against the others' best) or for it.
pub(super) fn compare(c: &Claim, f: &[Figure], read: Read) -> bool {
    let (first, rest) = (&f[0], &f[1..]);
    let by = c.by();
    match c.kind {
        Kind::Lowest => rest
            .iter()
            .all(|x| by * read.at(first, true) < read.at(x, false)),
        Kind::Highest => rest
            .iter()
            .all(|x| read.at(first, false) > by * read.at(x, true)),
        _ => read.at(first, false) > by * read.at(&f[1], true),
    }
}

/// Which way these figures go: against the paper's size where the claim gives it (past the
/// size less the floor: for; short of two-thirds of its effect: against), else against the
/// effect floor.
pub(super) fn way(c: &Claim, f: &[Figure]) -> Option<bool> {
    if let Some((hold, short)) = c.sized() {
        let r = ratio(c.kind, &f.iter().map(|x| x.value).collect::<Vec<_>>());
        return (r > hold).then_some(true).or((r < short).then_some(false));
    }
    let effect = effect(c, f);
    if compare(c, f, Read::Medians) {
        (effect > 1.0 + EFFECT_FLOOR).then_some(true)
    } else {
        (effect.is_infinite() || effect < 1.0 / (1.0 + EFFECT_FLOOR)).then_some(false)
    }
}

/// How far the medians go the claim's way, as a ratio (above 1 where they compare as it says):
/// the nearest other series against the first, or the first against the second, `by` times.
pub(super) fn effect(c: &Claim, f: &[Figure]) -> f64 {
    let v: Vec<f64> = f.iter().map(|x| x.value).collect();
    ratio(c.kind, &v) / c.by()
}

/// The claim's ratio over one set of values: the nearest other over the first (lowest), the
/// first over the largest other (highest), the first over the second (greater).
pub(super) fn ratio(kind: Kind, v: &[f64]) -> f64 {
    let (first, rest) = (v[0], v[1..].iter().copied());
    match kind {
        Kind::Lowest => rest.fold(f64::INFINITY, f64::min) / first,
        Kind::Highest => first / rest.fold(0.0, f64::max),
        _ => first / v[1],
    }
}
