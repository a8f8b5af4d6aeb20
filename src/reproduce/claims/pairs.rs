//! A lowest or highest claim that names the paper's size for each pair ("3.9x less than
//! CHELSIO_Bridge and 5.3x less than GNIC_Bridge") is checked pair by pair, each against its
//! own size, as a greater claim on that pair; the claim reads as its weakest pair.

use super::claim::{Checked, Claim, EffectSize, Kind, PairSize, Verdict};
use super::selector::Selector;

impl Claim {
    /// One greater claim per pair, named by the series the first is weighed against; None for
    /// a claim not sized per pair.
    pub(super) fn pairs(&self) -> Option<Vec<(String, Claim)>> {
        let sizes = self.sizes.as_ref()?;
        let first = &self.series[0];
        let each = self.series[1..].iter().zip(sizes).map(|(other, &size)| {
            let series = match self.kind {
                Kind::Lowest => vec![other.clone(), first.clone()],
                _ => vec![first.clone(), other.clone()],
            };
            let pair = Claim {
                kind: Kind::Greater,
                series,
                paper_ratio: Some(size),
                sizes: None,
                ..self.clone()
            };
            (other.over(&Selector::default()).name(), pair)
        });
        Some(each.collect())
    }
}

/// The claim's verdict from its pairs' checks (the weakest), each pair's size, and each pair's
/// why, every pair named by the series the first is weighed against.
pub(super) fn combine(checked: Vec<(String, Checked)>) -> (Verdict, EffectSize, String) {
    let verdict = checked
        .iter()
        .map(|(_, c)| c.verdict)
        .reduce(Verdict::weakest)
        .unwrap_or(Verdict::NotMeasurable);
    let why: Vec<String> = checked
        .iter()
        .map(|(name, c)| {
            let why = if c.why.is_empty() { "" } else { ": " };
            format!("against {name}, {}{why}{}", c.verdict.text(), c.why)
        })
        .collect();
    let size = EffectSize {
        pairs: checked
            .into_iter()
            .map(|(against, c)| PairSize {
                against,
                size: c.size,
            })
            .collect(),
        ..EffectSize::default()
    };
    (verdict, size, why.join("; "))
}
