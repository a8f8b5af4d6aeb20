//! What bound a measured point: a saturated side or core, a single-threaded backend, the wire's
//! rate, or nothing. Per-Gbit costs for plans come only from points nothing bound.

pub use crate::vocab::Bound;

/// A limit counts as reached at this share.
pub const SATURATED: f64 = 0.95;

/// What the classification reads: per-core busy % of each side, backends' cores, the delivered
/// rate and the wire's.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    pub host_cores: Vec<(usize, f64)>,
    pub client_cores: Vec<(usize, f64)>,
    pub backends: Vec<(String, f64)>,
    pub gbps: f64,
    pub wire_bps: Option<u64>,
    /// The paced load offered (all streams), bits/s; None: as fast as it goes.
    pub offered_bps: Option<f64>,
}

fn mean(v: &[(usize, f64)]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64)
}

/// The first limit reached, in the order: wire, host, client, one host core, one client core, a
/// backend; else None when a paced load was carried in full below every limit, and latency when
/// it was not (or nothing paced it).
pub fn classify(l: &Limits) -> Option<Bound> {
    let carried = matches!(l.offered_bps, Some(o) if l.gbps * 1e9 >= SATURATED * o);
    saturated(l).or(if carried { None } else { Some(Bound::Latency) })
}

fn saturated(l: &Limits) -> Option<Bound> {
    let pct = SATURATED * 100.0;
    if l.wire_bps
        .is_some_and(|w| l.gbps * 1e9 >= SATURATED * w as f64)
    {
        return Some(Bound::Wire);
    }
    if mean(&l.host_cores).is_some_and(|m| m >= pct) {
        return Some(Bound::Host);
    }
    if mean(&l.client_cores).is_some_and(|m| m >= pct) {
        return Some(Bound::Client);
    }
    if let Some((c, _)) = l.host_cores.iter().find(|x| x.1 >= pct) {
        return Some(Bound::HostCore(*c));
    }
    if let Some((c, _)) = l.client_cores.iter().find(|x| x.1 >= pct) {
        return Some(Bound::ClientCore(*c));
    }
    l.backends
        .iter()
        .find(|b| b.1 >= SATURATED)
        .map(|b| Bound::Backend(b.0.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(host: &[f64], client: &[f64]) -> Limits {
        Limits {
            host_cores: host.iter().enumerate().map(|(i, &v)| (i, v)).collect(),
            client_cores: client
                .iter()
                .enumerate()
                .map(|(i, &v)| (i + host.len(), v))
                .collect(),
            gbps: 1.0,
            offered_bps: Some(1e9),
            ..Default::default()
        }
    }

    #[test]
    fn a_paced_point_below_every_limit_is_unbound() {
        assert_eq!(classify(&lim(&[40.0], &[30.0])), None);
        assert_eq!(
            classify(&Limits {
                wire_bps: Some(10_000_000_000),
                ..lim(&[40.0], &[30.0])
            }),
            None
        );
    }

    #[test]
    fn a_load_not_carried_in_full_without_a_saturated_core_is_latency_bound() {
        assert_eq!(
            classify(&Limits {
                offered_bps: None,
                ..lim(&[94.0], &[60.0])
            }),
            Some(Bound::Latency)
        );
        assert_eq!(
            classify(&Limits {
                gbps: 0.5,
                ..lim(&[40.0], &[30.0])
            }),
            Some(Bound::Latency)
        );
        assert_eq!(
            classify(&Limits {
                offered_bps: None,
                ..lim(&[99.0], &[60.0])
            }),
            Some(Bound::Host)
        );
    }

    #[test]
    fn the_first_limit_reached_is_named() {
        assert_eq!(classify(&lim(&[99.0], &[60.0])), Some(Bound::Host));
        assert_eq!(classify(&lim(&[60.0], &[97.0])), Some(Bound::Client));
        assert_eq!(
            classify(&lim(&[99.0, 20.0], &[60.0])),
            Some(Bound::HostCore(0))
        );
        assert_eq!(
            classify(&lim(&[50.0, 50.0], &[96.0, 10.0])),
            Some(Bound::ClientCore(2))
        );
        let wire = Limits {
            wire_bps: Some(1_000_000_000),
            gbps: 0.96,
            ..lim(&[99.0], &[99.0])
        };
        assert_eq!(classify(&wire), Some(Bound::Wire));
        let be = Limits {
            backends: vec![("g1".into(), 0.97)],
            ..lim(&[80.0, 60.0], &[20.0])
        };
        assert_eq!(classify(&be).unwrap().to_string(), "backend g1");
        assert_eq!(Bound::HostCore(3).to_string(), "host core 3");
    }
}
