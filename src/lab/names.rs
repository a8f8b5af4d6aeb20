//! Names of lab objects. Every one starts with `vl` and the lab name, so a lab's objects are
//! recognisable and never collide with the host's; interface names fit Linux's 15 characters.

use crate::lab::Error;

pub const MAX_GUESTS: u32 = 9999;
const MAX_LAB_NAME: usize = 6;

/// Lab names: 1–6 of [a-z0-9], starting with a letter.
pub fn check_lab_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= MAX_LAB_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.chars().next().unwrap().is_ascii_lowercase();
    if ok {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "bad lab name '{name}': use 1 to {MAX_LAB_NAME} lowercase letters or digits, starting with a letter (e.g. lab, demo1)"
        )))
    }
}

/// An interface `--uplink` may name: a plain Linux interface name, not loopback and not one of
/// vnetlab's own (`vl…`, another lab's wire or port).
pub fn check_uplink_name(name: &str) -> Result<(), Error> {
    let plain = !name.is_empty()
        && name.len() <= 15
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    if !plain || name == "lo" || name.starts_with("vl") {
        return Err(Error::Input(format!(
            "--uplink '{}': name an existing interface of this machine other than lo and vnetlab's own vl… ones",
            crate::text::clip(name)
        )));
    }
    Ok(())
}

/// The names of one lab's objects.
#[derive(Clone, Debug)]
pub struct Names {
    pub lab: String,
}

impl Names {
    pub fn new(lab: &str) -> Names {
        Names {
            lab: lab.to_string(),
        }
    }
    fn p(&self) -> String {
        format!("vl{}", self.lab)
    }
    /// The hypervisor host's network stack: bridge, NAT, wire's host end, backends.
    pub fn host_ns(&self) -> String {
        format!("{}-host", self.p())
    }
    pub fn client_ns(&self) -> String {
        format!("{}-client", self.p())
    }
    pub fn guest_ns(&self, i: u32) -> String {
        format!("{}-g{i}", self.p())
    }
    /// Prefix shared by every namespace of this lab.
    pub fn ns_prefix(&self) -> String {
        format!("{}-", self.p())
    }
    /// The wire's host end (stands for the physical NIC).
    pub fn wire_host(&self) -> String {
        format!("{}w", self.p())
    }
    /// The wire's client end.
    pub fn wire_client(&self) -> String {
        format!("{}c", self.p())
    }
    pub fn bridge(&self) -> String {
        format!("{}br", self.p())
    }
    /// The guest's NIC, inside the guest.
    pub fn guest_if(&self, i: u32) -> String {
        format!("{}g{i}", self.p())
    }
    /// The host-side end of guest i's link (the vif / tap / port on the bridge).
    pub fn guest_port(&self, i: u32) -> String {
        format!("{}g{i}h", self.p())
    }
    pub fn nft_table(&self) -> String {
        format!("{}nat", self.p())
    }
    /// Cgroup folder of the lab, below vnetlab's own folder.
    pub fn cgroup(&self) -> String {
        self.p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_ifnamsiz_and_start_with_vl() {
        let n = Names::new("abcdef");
        for s in [
            n.guest_if(MAX_GUESTS),
            n.guest_port(MAX_GUESTS),
            n.wire_host(),
            n.wire_client(),
            n.bridge(),
        ] {
            assert!(s.len() <= 15, "{s} too long");
            assert!(s.starts_with("vl"));
        }
        assert_eq!(n.guest_ns(3), "vlabcdef-g3");
        assert!(n.guest_ns(3).starts_with(&n.ns_prefix()));
    }

    #[test]
    fn lab_names_are_checked() {
        for ok in ["lab", "a", "demo12", "x9"] {
            check_lab_name(ok).unwrap();
        }
        for bad in ["", "1lab", "Lab", "la-b", "toolong", "la b", "ląb"] {
            assert!(check_lab_name(bad).is_err(), "{bad}");
        }
    }
}
