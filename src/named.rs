//! Named fields in documents for pairs that code keeps as tuples: a time series' `(t, value)`
//! is written `{"t": …, "gbps": …}`, a CPU part `{"name", "kind", "busy_pct", "cores"}`, so a
//! reader of `--json` never counts positions. Each reads back either form: documents written
//! before the fields were named hold arrays.

/// A serde `with` module for `Vec<(f64, f64)>` written as objects with two named fields.
macro_rules! pairs {
    ($(#[$doc:meta])* $m:ident, $a:ident, $b:ident) => {
        $(#[$doc])*
        pub mod $m {
            use serde::{Deserialize, Deserializer, Serialize, Serializer};

            #[derive(Serialize, Deserialize)]
            struct Named {
                $a: f64,
                $b: f64,
            }

            #[derive(Deserialize)]
            #[serde(untagged)]
            enum Either {
                Named(Named),
                Pair((f64, f64)),
            }

            pub fn serialize<S: Serializer>(v: &[(f64, f64)], s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(v.iter().map(|&($a, $b)| Named { $a, $b }))
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(
                d: D,
            ) -> Result<Vec<(f64, f64)>, D::Error> {
                Ok(Vec::<Either>::deserialize(d)?
                    .into_iter()
                    .map(|e| match e {
                        Either::Named(n) => (n.$a, n.$b),
                        Either::Pair(p) => p,
                    })
                    .collect())
            }
        }
    };
}

pairs!(
    /// A point's throughput per interval: `{"t": seconds into the window, "gbps": …}`.
    rate_samples,
    t,
    gbps
);
pairs!(
    /// The host's busy share at 10 Hz: `{"t": seconds into the window, "busy_pct": …}`.
    busy_series,
    t,
    busy_pct
);

/// A stored point's CPU parts, `(name, kind, busy % of the host, cores)`, written as
/// `{"name", "kind", "busy_pct", "cores"}`.
pub mod parts {
    use crate::vocab::PartKind;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Part = (String, PartKind, f64, f64);

    #[derive(Serialize, Deserialize)]
    struct Named {
        name: String,
        kind: PartKind,
        busy_pct: f64,
        cores: f64,
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Named(Named),
        Tuple(Part),
    }

    pub fn serialize<S: Serializer>(v: &[Part], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|(name, kind, busy_pct, cores)| Named {
            name: name.clone(),
            kind: *kind,
            busy_pct: *busy_pct,
            cores: *cores,
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
        Ok(Vec::<Either>::deserialize(d)?
            .into_iter()
            .map(|e| match e {
                Either::Named(n) => (n.name, n.kind, n.busy_pct, n.cores),
                Either::Tuple(t) => t,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Doc {
        #[serde(with = "super::rate_samples")]
        samples: Vec<(f64, f64)>,
        #[serde(with = "super::parts")]
        parts: Vec<(String, crate::vocab::PartKind, f64, f64)>,
    }

    #[test]
    fn pairs_are_written_by_name_and_read_in_either_form() {
        let d = Doc {
            samples: vec![(0.5, 1.25)],
            parts: vec![("g1".into(), crate::vocab::PartKind::Guest, 4.5, 0.045)],
        };
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(
            text,
            r#"{"samples":[{"t":0.5,"gbps":1.25}],"parts":[{"name":"g1","kind":"guest","busy_pct":4.5,"cores":0.045}]}"#
        );
        assert_eq!(serde_json::from_str::<Doc>(&text).unwrap(), d);
        let old = r#"{"samples":[[0.5,1.25]],"parts":[["g1","guest",4.5,0.045]]}"#;
        assert_eq!(serde_json::from_str::<Doc>(old).unwrap(), d);
    }
}
