//! What a `vnetlab serve` session may aim test traffic at: loopback and the networks `--allow`
//! names, never every address, never a privileged port. Checked before any socket is made, so a
//! client holding the token cannot use `serve` to reach anything else.

use std::net::{IpAddr, SocketAddr};

use super::Error;
use crate::units::Cidr;

/// The lowest port a session may listen on or connect to (below it are privileged services).
pub const MIN_PORT: u16 = 1024;

/// The networks a session may reach besides loopback.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reach {
    pub allow: Vec<Cidr>,
}

impl Reach {
    pub fn may_reach(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_loopback() || self.allow.iter().any(|c| c.contains(ip))
    }

    fn where_allowed(&self) -> String {
        match self.allow.as_slice() {
            [] => "loopback (start serve with --allow CIDR for more)".to_string(),
            a => format!(
                "loopback and {}",
                a.iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// A listen on `bind`, within `ports`.
    pub fn check_listen(&self, bind: IpAddr, ports: Option<[u16; 2]>) -> Result<(), Error> {
        if bind.is_unspecified() {
            return Err(Error::Input(format!(
                "listen on {bind}: serve listens only on one address of {}, never on every address",
                self.where_allowed()
            )));
        }
        if !self.may_reach(bind) {
            return Err(Error::Input(format!(
                "listen on {bind}: serve listens only on {}",
                self.where_allowed()
            )));
        }
        match ports {
            Some([lo, hi]) if lo < MIN_PORT || hi < lo => Err(Error::Input(format!(
                "ports {lo}-{hi}: use a range of ports {MIN_PORT} and above"
            ))),
            _ => Ok(()),
        }
    }

    /// Connects to each of `to`.
    pub fn check_connect(&self, to: &[SocketAddr]) -> Result<(), Error> {
        for a in to {
            if !self.may_reach(a.ip()) || a.ip().is_unspecified() {
                return Err(Error::Input(format!(
                    "connect to {a}: serve reaches only {}",
                    self.where_allowed()
                )));
            }
            if a.port() < MIN_PORT {
                return Err(Error::Input(format!(
                    "connect to {a}: use ports {MIN_PORT} and above"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_reach_loopback_and_allowed_networks_only() {
        let r = Reach::default();
        let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
        r.check_connect(&[sa("127.0.0.1:5001"), sa("[::1]:5001")])
            .unwrap();
        for bad in [
            "10.255.255.1:8080",
            "8.8.8.8:5353",
            "0.0.0.0:5001",
            "127.0.0.1:80",
        ] {
            assert!(r.check_connect(&[sa(bad)]).is_err(), "{bad}");
        }
        r.check_listen("127.0.0.1".parse().unwrap(), None).unwrap();
        assert!(r.check_listen("0.0.0.0".parse().unwrap(), None).is_err());
        assert!(r.check_listen("::".parse().unwrap(), None).is_err());
        assert!(r
            .check_listen("127.0.0.1".parse().unwrap(), Some([1, 1]))
            .is_err());
        assert!(r
            .check_listen("127.0.0.1".parse().unwrap(), Some([3000, 2000]))
            .is_err());
        r.check_listen("127.0.0.1".parse().unwrap(), Some([20000, 20099]))
            .unwrap();
        let lab = Reach {
            allow: vec!["10.213.0.0/16".parse().unwrap()],
        };
        lab.check_connect(&[sa("10.213.0.3:5001")]).unwrap();
        lab.check_listen("10.213.0.2".parse().unwrap(), None)
            .unwrap();
        assert!(lab.check_connect(&[sa("10.214.0.3:5001")]).is_err());
        assert!(lab
            .check_connect(&[sa("[::ffff:10.214.0.3]:5001")])
            .is_err());
        lab.check_connect(&[sa("[::ffff:10.213.0.3]:5001")])
            .unwrap();
        let e = r
            .check_connect(&[sa("8.8.8.8:5353")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--allow"), "{e}");
    }
}
