//! Which stored point a claim's series reads: fields of the point's key, as experiment files
//! write them.

use serde::{Deserialize, Serialize};

use super::super::error::Error;
use crate::experiment::file::{Offered, Size, SockBuf, WireRate};
use crate::records::PointRecord;
use crate::units::parse_size;
use crate::vocab::{Direction, Gro, Mode, TestKind};

/// Which point a check reads: every field given must equal the point's (as written in an
/// experiment file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    pub mode: Option<String>,
    pub test: Option<String>,
    pub direction: Option<String>,
    pub message: Option<String>,
    pub load: Option<String>,
    pub tso: Option<bool>,
    pub gro: Option<String>,
    pub lro: Option<bool>,
    pub wire: Option<String>,
    pub buffer: Option<String>,
    pub guests: Option<u32>,
    pub profile: Option<String>,
    pub interference: Option<String>,
    /// Paper 1's movie: the buffering time T_buffer (seconds) of the point's download.
    pub buffering: Option<f64>,
    pub label: Option<String>,
}

impl Selector {
    /// `self` with `base`'s fields where `self` gives none.
    pub fn over(&self, base: &Selector) -> Selector {
        fn or<T: Clone>(a: &Option<T>, b: &Option<T>) -> Option<T> {
            a.clone().or_else(|| b.clone())
        }
        Selector {
            mode: or(&self.mode, &base.mode),
            test: or(&self.test, &base.test),
            direction: or(&self.direction, &base.direction),
            message: or(&self.message, &base.message),
            load: or(&self.load, &base.load),
            tso: self.tso.or(base.tso),
            gro: or(&self.gro, &base.gro),
            lro: self.lro.or(base.lro),
            wire: or(&self.wire, &base.wire),
            buffer: or(&self.buffer, &base.buffer),
            guests: self.guests.or(base.guests),
            profile: or(&self.profile, &base.profile),
            interference: or(&self.interference, &base.interference),
            buffering: self.buffering.or(base.buffering),
            label: or(&self.label, &base.label),
        }
    }

    /// Checks every value parses as the experiment files write it.
    pub fn check(&self) -> Result<(), Error> {
        parses::<Mode>(&self.mode, "mode")?;
        parses::<TestKind>(&self.test, "test")?;
        parses::<Direction>(&self.direction, "direction")?;
        parses::<Size>(&self.message, "message")?;
        parses::<Offered>(&self.load, "load")?;
        parses::<Gro>(&self.gro, "gro")?;
        parses::<WireRate>(&self.wire, "wire")?;
        parses::<SockBuf>(&self.buffer, "buffer")
    }

    pub fn matches(&self, p: &PointRecord) -> bool {
        let k = &p.key;
        let eq = |want: &Option<String>, have: String| want.as_ref().is_none_or(|w| *w == have);
        eq(&self.mode, k.mode.to_string())
            && self
                .test
                .as_ref()
                .is_none_or(|t| t.parse::<TestKind>().ok() == Some(k.test))
            && eq(&self.direction, k.direction.name().to_string())
            && self
                .message
                .as_ref()
                .is_none_or(|m| parse_size(m).ok().map(|s| s as u64) == Some(k.message_bytes))
            && self
                .load
                .as_ref()
                .is_none_or(|l| l.parse::<Offered>().ok().map(|l| l.0) == Some(k.load_bps))
            && self.tso.is_none_or(|t| t == k.tso)
            && eq(&self.gro, k.gro.name().to_string())
            && self.lro.is_none_or(|l| l == k.lro)
            && self.wire.as_ref().is_none_or(|w| {
                w.parse::<WireRate>().ok().map(|w| w.0.map(|r| r.0)) == Some(k.wire_rate)
            })
            && self.buffer.as_ref().is_none_or(|b| {
                b.parse::<SockBuf>().ok().map(|b| b.0.map(|x| x as u64)) == Some(k.socket_buffer)
            })
            && self.guests.is_none_or(|g| g == k.guests)
            && self
                .profile
                .as_ref()
                .is_none_or(|p| Some(p) == k.profile.as_ref())
            && self.interference.as_ref().is_none_or(|i| {
                joined(i) == k.interference.as_deref().map_or("none".into(), joined)
            })
            && self
                .buffering
                .is_none_or(|t| movie_at(k.interference.as_deref(), t))
    }

    /// How the selector reads on the page: its label, else its mode and what else it names.
    pub fn name(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        let mut parts: Vec<String> = Vec::new();
        for (k, v) in [
            ("", &self.mode),
            ("", &self.direction),
            ("", &self.message),
            ("with ", &self.interference),
        ] {
            if let Some(v) = v {
                parts.push(format!("{k}{v}"));
            }
        }
        parts.join(" ")
    }
}

/// Whether a point's loads hold paper 1's movie buffered in `t` seconds: its download is paced
/// at S_VMNET / T_buffer, as the load writes it.
fn movie_at(interference: Option<&str>, t: f64) -> bool {
    let rate = crate::units::Rate((crate::measure::load::S_VMNET_BITS / t) as u64);
    interference.is_some_and(|i| {
        i.split(" + ")
            .any(|l| l.starts_with("VM-network download") && l.ends_with(&format!(" at {rate}")))
    })
}

/// Loads together as a point's key writes them (`cpu@host+cpu@g2` is `cpu@host + cpu@g2`).
fn joined(s: &str) -> String {
    s.split('+').map(str::trim).collect::<Vec<_>>().join(" + ")
}

/// Whether a selector's field, if given, parses as a `T`.
fn parses<T: std::str::FromStr>(v: &Option<String>, what: &str) -> Result<(), Error>
where
    T::Err: std::fmt::Display,
{
    match v {
        Some(s) => s
            .parse::<T>()
            .map(|_| ())
            .map_err(|e| Error::Input(format!("{what}: {e}"))),
        None => Ok(()),
    }
}
