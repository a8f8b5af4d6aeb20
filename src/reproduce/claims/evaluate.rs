//! A claim checked over a run's points: its figures read, its verdict, size and why; a claim
//! sized per pair checked pair by pair.

use super::claim::{Checked, Claim, EffectSize, Verdict};
use super::figure::Figure;
use super::pairs;
use crate::records::PointRecord;

impl Claim {
    /// The verdict over a run's points. A claim holds when its medians compare as it says and so
    /// do the repeats' ranges read against it; it does not hold when even the ranges read for it
    /// do not; in between, the difference is within the spread of the repeats. Where both sides
    /// were bound by the same limit it is a tie; a claim sized per pair is checked pair by pair.
    pub fn evaluate(&self, points: &[PointRecord]) -> Checked {
        let figures = self.figures(points);
        let (verdict, mut size, why) = match (&figures, self.pairs()) {
            (Err(why), _) => (Verdict::NotMeasurable, self.no_size(), why.to_string()),
            (Ok(_), Some(pairs)) => pairs::combine(
                pairs
                    .into_iter()
                    .map(|(name, c)| (name, c.evaluate(points)))
                    .collect(),
            ),
            (Ok(f), None) => {
                let (v, why) = match self.tie(f) {
                    Some(why) => (Verdict::Tie, why),
                    None => self.verdict(f),
                };
                (v, self.size(f), why)
            }
        };
        size.unit = self.size_unit();
        let ours = match &figures {
            Err(_) => "-".to_string(),
            Ok(f) => {
                let each: Vec<String> = f.iter().map(Figure::text).collect();
                format!("{} {}", each.join(", "), self.metric.unit())
            }
        };
        Checked {
            claim: self.text.clone(),
            source: self.source.clone(),
            verdict,
            size,
            stand_in: self.stand_in.clone(),
            origin: self.origin,
            ours,
            paper: self.paper.clone(),
            why,
            note: self.note.clone(),
            figures: figures
                .unwrap_or_default()
                .into_iter()
                .map(|f| (f.name, f.value))
                .collect(),
            unit: self.metric.unit().to_string(),
        }
    }

    /// The size of a claim whose figures could not be read: the paper's alone.
    fn no_size(&self) -> EffectSize {
        EffectSize {
            paper: self.paper_ratio,
            ..EffectSize::default()
        }
    }
}
