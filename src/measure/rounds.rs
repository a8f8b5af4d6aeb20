//! Rounds of a point: repeated until its confidence goal is met or its rounds run out, the
//! median round kept as the point's result, and every figure's spread and interval over them.

use super::error::Error;
use super::one::{measure, repeat_of};
use super::source::TrafficSource;
use super::target::Target;
use crate::engine::spec::Spec;
use crate::records::measured::Measured;
use crate::records::{Repeat, Repeats};
use crate::stats;

/// The effect floor the papers' verdicts use: a difference below this share of a median is no
/// verdict either way on this host.
pub const EFFECT_FLOOR: f64 = 0.10;

/// How many units a point takes and when it may stop: at least `iterations.min`, at most
/// `iterations.max`, stopping once its headline figures reach `goal` (None: always the most).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stopping {
    pub goal: Option<stats::Goal>,
    pub iterations: stats::Iterations,
}

impl Stopping {
    /// Exactly `n` units, held to the default goal only when read.
    pub fn fixed(n: u32) -> Stopping {
        Stopping {
            goal: None,
            iterations: stats::Iterations {
                min: n.max(1),
                max: n.max(1),
            },
        }
    }

    /// The units a goal takes by default: at least enough to reach its level, at most 30.
    pub fn default_iterations(g: stats::Goal) -> stats::Iterations {
        stats::Iterations {
            min: stats::units_for(g.level) as u32,
            max: 30,
        }
    }

    /// Whether a point with these units may stop now: at its most, or past its least with its
    /// figures within the goal.
    pub fn done(&self, runs: &[Repeat]) -> bool {
        let n = runs.len() as u32;
        n >= self.iterations.max
            || (n >= self.iterations.min && self.goal.is_some_and(|g| met(runs, g)))
    }
}

/// A point's headline figures over its units: throughput (or transactions/s) and its cost.
struct Headline {
    rate: stats::Spread,
    cost: Option<stats::Spread>,
}

impl Headline {
    fn met(&self, g: &stats::Goal) -> bool {
        self.rate.meets(g) && self.cost.as_ref().is_none_or(|c| c.meets(g))
    }
}

/// Whether the units' headline figures reach `goal`.
pub fn met(units: &[Repeat], goal: stats::Goal) -> bool {
    headline(units, goal.level as u32).met(&goal)
}

/// The units a cost is read from: those the meter could read and, where at least three and more
/// than half of them were bound by nothing, only those (a bound unit's CPU per Gb/s is a
/// ceiling's, not a cost; `reproduce` leaves them out by the same rule). The bool: whether bound
/// units were left out.
pub fn cost_units(units: &[Repeat]) -> (Vec<&Repeat>, bool) {
    let read: Vec<&Repeat> = units.iter().filter(|r| r.unmeasurable.is_none()).collect();
    let free: Vec<&Repeat> = read
        .iter()
        .copied()
        .filter(|r| r.bound_by.is_none())
        .collect();
    match free.len() >= 3 && 2 * free.len() > units.len() {
        true => {
            let left = free.len() < read.len();
            (free, left)
        }
        false => (read, false),
    }
}

/// The units' headline spreads at `level` (the cost from `cost_units`).
fn headline(runs: &[Repeat], level: u32) -> Headline {
    let rate: Vec<f64> = runs
        .iter()
        .map(|r| r.transactions_per_s.unwrap_or(r.throughput_gbps))
        .collect();
    let cost: Vec<f64> = cost_units(runs)
        .0
        .iter()
        .filter_map(|r| r.normalized_pct_per_gbps.or(r.host_busy_pct))
        .collect();
    Headline {
        rate: stats::spread(&rate, level),
        cost: (!cost.is_empty()).then(|| stats::spread(&cost, level)),
    }
}

/// Runs a point as `stop` says and returns the median run with the spread of all of them.
pub fn repeated(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
    stop: &Stopping,
    progress: &dyn Fn(u32, u32),
) -> Result<Measured, Error> {
    let (runs, met) = repeats(target, spec, source, stop, progress)?;
    combined(runs, stop.goal, met, 1).ok_or_else(|| Error::Failed("the point ran no repeat".into()))
}

/// The runs of a point, each as measured, as many as `stop` says (and whether its goal was met).
pub fn repeats(
    target: &Target,
    spec: &Spec,
    source: &dyn TrafficSource,
    stop: &Stopping,
    progress: &dyn Fn(u32, u32),
) -> Result<(Vec<Measured>, Option<bool>), Error> {
    let mut runs: Vec<Measured> = Vec::new();
    let mut each: Vec<Repeat> = Vec::new();
    while !stop.done(&each) {
        if crate::sys::signals::stop_requested() {
            return Err(crate::engine::Error::Interrupted.into());
        }
        progress(runs.len() as u32 + 1, stop.iterations.max);
        let m = measure(target, spec, source)?;
        each.push(repeat_of(&m));
        runs.push(m);
    }
    let met = stop.goal.map(|g| met(&each, g));
    Ok((runs, met))
}

/// The spread of one figure over the units that have it (all of them, or None).
fn spread_of(
    each: &[Repeat],
    level: u32,
    f: impl Fn(&Repeat) -> Option<f64>,
) -> Option<stats::Spread> {
    let v: Vec<f64> = each.iter().filter_map(f).collect();
    (v.len() == each.len() && !v.is_empty()).then(|| stats::spread(&v, level))
}

/// The spread of a CPU figure over the units its cost is read from (`cost_units`).
fn cpu_spread(
    each: &[Repeat],
    level: u32,
    f: impl Fn(&Repeat) -> Option<f64>,
) -> Option<stats::Spread> {
    let read: Vec<Repeat> = cost_units(each).0.into_iter().cloned().collect();
    spread_of(&read, level, f)
}

/// What the repeats of a point say over its units, at the goal's level.
fn repeats_record(each: Vec<Repeat>, goal: Option<stats::Goal>, met: Option<bool>) -> Repeats {
    let g = goal.unwrap_or_default();
    let level = g.level as u32;
    let h = headline(&each, level);
    let wide = !h.rate.meets(&g) || h.cost.as_ref().is_some_and(|c| !c.meets(&g));
    let lost: Vec<&Repeat> = each.iter().filter(|r| r.unmeasurable.is_some()).collect();
    let bound_left_out = match cost_units(&each) {
        (kept, true) => each.len() - lost.len() - kept.len(),
        (_, false) => 0,
    };
    Repeats {
        bound_left_out,
        runs: each.len(),
        confidence_level: level,
        confidence_met: met,
        goal,
        throughput_gbps: h.rate,
        transactions_per_s: spread_of(&each, level, |r| r.transactions_per_s),
        host_busy_pct: cpu_spread(&each, level, |r| r.host_busy_pct),
        normalized_pct_per_gbps: cpu_spread(&each, level, |r| r.normalized_pct_per_gbps),
        wide,
        unmeasurable: lost.first().map(|r| crate::records::Unmeasured {
            count: lost.len(),
            why: r.unmeasurable.clone().unwrap_or_default(),
        }),
        shown: None,
        each,
        rounds: None,
    }
}

/// The index of the run whose cost (CPU per Gb/s, else host CPU, else rate) is the median of the
/// runs the meter could read: the run a point's details come from.
fn median_run(runs: &[Measured]) -> usize {
    let key = |m: &Measured| {
        let c = m.cpu.as_ref().filter(|c| c.unmeasurable.is_none());
        c.and_then(|c| c.normalized_pct_per_gbps.or(Some(c.host_busy_pct)))
    };
    let mut read: Vec<(usize, f64)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, key(m)?)))
        .collect();
    if read.is_empty() {
        read = runs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                (
                    i,
                    m.result
                        .transactions_per_s
                        .unwrap_or(m.result.throughput_gbps),
                )
            })
            .collect();
    }
    read.sort_by(|x, y| x.1.total_cmp(&y.1));
    read[(read.len() - 1) / 2].0
}

/// A point's independent units from its repeats in order: with `per_unit` repeats in each lab (a
/// round), the round's median figures (its repeats share the lab, so they are one unit, unmeasured
/// if most of them were); one repeat per lab is its own unit.
pub fn units(each: &[Repeat], per_unit: usize) -> Vec<Repeat> {
    if per_unit <= 1 {
        return each.to_vec();
    }
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| stats::spread(&v, 95).median);
    each.chunks(per_unit)
        .map(|c| {
            let read: Vec<&Repeat> = c.iter().filter(|r| r.unmeasurable.is_none()).collect();
            let over =
                |f: fn(&Repeat) -> Option<f64>| med(read.iter().filter_map(|r| f(r)).collect());
            Repeat {
                throughput_gbps: med(c.iter().map(|r| r.throughput_gbps).collect()).unwrap_or(0.0),
                transactions_per_s: med(c.iter().filter_map(|r| r.transactions_per_s).collect()),
                host_busy_pct: over(|r| r.host_busy_pct),
                normalized_pct_per_gbps: over(|r| r.normalized_pct_per_gbps),
                unmeasurable: (2 * read.len() <= c.len())
                    .then(|| c.iter().find_map(|r| r.unmeasurable.clone()))
                    .flatten(),
                bound_by: c.iter().find_map(|r| r.bound_by),
                ..Repeat::default()
            }
        })
        .collect()
}

/// One measurement of a point from its runs (from one lab or several, `per_unit` to a lab): the
/// run whose cost is the median (its CPU parts, series and latency are the point's details,
/// labelled as that run's), carrying every run's figures and their units' intervals when there
/// are two or more. None without a run.
pub fn combined(
    mut runs: Vec<Measured>,
    goal: Option<stats::Goal>,
    met: Option<bool>,
    per_unit: usize,
) -> Option<Measured> {
    if runs.is_empty() {
        return None;
    }
    let mid = median_run(&runs);
    let each: Vec<Repeat> = runs.iter().map(repeat_of).collect();
    let repeats = (runs.len() > 1).then(|| Repeats {
        shown: Some(mid + 1),
        runs: each.len(),
        each: each.clone(),
        ..repeats_record(units(&each, per_unit), goal, met)
    });
    let mut out = runs.swap_remove(mid);
    out.repeats = repeats;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::measure::one::*;

    fn unit(gbps: f64, cost: f64) -> Repeat {
        Repeat {
            throughput_gbps: gbps,
            normalized_pct_per_gbps: Some(cost),
            host_busy_pct: Some(cost * gbps),
            ..Repeat::default()
        }
    }

    fn goal(half: f64) -> Stopping {
        Stopping {
            goal: Some(stats::Goal {
                level: 95.0,
                half_width_pct: half,
            }),
            iterations: stats::Iterations { min: 6, max: 12 },
        }
    }

    #[test]
    fn a_point_stops_once_its_interval_is_narrow_enough_or_at_its_most() {
        let tight: Vec<Repeat> = [30.0, 30.5, 29.8, 30.2, 30.1, 29.9]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        let stop = goal(5.0);
        // Never before the least: five units do not reach 95 %.
        assert!(!stop.done(&tight[..5]));
        assert!(stop.done(&tight));
        // Wide: one more round, up to the most.
        let wide: Vec<Repeat> = [30.0, 36.0, 25.0, 31.0, 29.0, 40.0]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        assert!(!stop.done(&wide));
        let twelve: Vec<Repeat> = wide.iter().cycle().take(12).cloned().collect();
        assert!(stop.done(&twelve));
        // Without a goal: exactly the count.
        assert!(!Stopping::fixed(3).done(&tight[..2]) && Stopping::fixed(3).done(&tight[..3]));
        // The throughput must be within the goal too.
        let shaky: Vec<Repeat> = [0.3, 0.2, 0.3, 0.25, 0.3, 0.1]
            .iter()
            .map(|&g| unit(g, 30.0))
            .collect();
        assert!(!stop.done(&shaky));
    }

    #[test]
    fn a_cost_leaves_out_bound_and_unmeasurable_units_while_most_are_free() {
        let mut u: Vec<Repeat> = [30.0, 31.0, 29.0, 30.5, 90.0, 45.0]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        u[4].bound_by = Some(crate::vocab::Bound::Latency);
        u[5].unmeasurable = Some("steal".into());
        let (kept, left) = cost_units(&u);
        assert!(left && kept.len() == 4);
        let r = repeats_record(u.clone(), None, None);
        assert_eq!(
            (r.bound_left_out, r.unmeasurable.as_ref().unwrap().count),
            (1, 1)
        );
        assert_eq!(r.normalized_pct_per_gbps.unwrap().max, 31.0);
        // Bound in half the units: the cost cannot leave them out, and the point stays bound.
        for x in &mut u[..2] {
            x.bound_by = Some(crate::vocab::Bound::Latency);
        }
        assert!(!cost_units(&u).1);
    }

    #[test]
    fn a_rounds_repeats_make_one_unit() {
        let each: Vec<Repeat> = [10.0, 12.0, 11.0, 20.0, 22.0, 21.0]
            .iter()
            .map(|&c| unit(0.3, c))
            .collect();
        let u = units(&each, 3);
        assert_eq!(u.len(), 2);
        assert_eq!(
            (u[0].normalized_pct_per_gbps, u[1].normalized_pct_per_gbps),
            (Some(11.0), Some(21.0))
        );
        assert_eq!(units(&each, 1).len(), 6);
    }
}
