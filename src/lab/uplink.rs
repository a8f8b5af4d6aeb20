//! `--uplink IFACE`: an existing interface of this machine (a real NIC to a client on another
//! machine) becomes the lab's wire, as `--pf` lends a PF. Before anything changes, its state is
//! read and journaled: the namespace it is in (the root one), its MTU, addresses, offloads, root
//! qdisc and whether it is up. The lab moves it into its host namespace and uses it as the wire's
//! host end; `down` (and `cleanup` after a crash) moves it back and puts every setting back.

use serde::{Deserialize, Serialize};
use std::process::Command;

use super::hostcmd::{self, HostCmd, IpCmd};
use super::Error;

/// An uplink as it was before the lab took it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct UplinkState {
    pub mtu: u32,
    pub up: bool,
    /// Its global addresses as `ip addr` writes them ("10.0.0.7/24", "fd00::7/64"); link-local
    /// IPv6 addresses come back by themselves.
    pub addrs: Vec<String>,
    pub gro: Option<bool>,
    pub tso: Option<bool>,
    pub gso: Option<bool>,
    /// The root qdisc's kind and, for pfifo, its limit.
    pub qdisc: Option<String>,
    #[serde(default)]
    pub qdisc_limit: Option<u32>,
    /// Its handle ("8001:"), so the qdisc put back is the same one to `tc qdisc show`.
    #[serde(default)]
    pub qdisc_handle: Option<String>,
}

fn ip_json(args: &[&str]) -> Result<serde_json::Value, Error> {
    let out = hostcmd::read(args)?;
    serde_json::from_str(&out)
        .map_err(|e| Error::Failed(format!("cannot read `{}`: {e}", args.join(" "))))
}

/// Whether `name` may be the uplink: it exists in this (the root) namespace, carries no default
/// route (unless `force`), is no bridge's or bond's port and has no devices stacked on it.
pub fn check(name: &str, force: bool) -> Result<(), Error> {
    super::names::check_uplink_name(name)?;
    let link = ip_json(&["ip", "-j", "-d", "link", "show", "dev", name]).map_err(|_| {
        Error::Input(format!(
            "--uplink {name}: no such interface in this machine's namespace"
        ))
    })?;
    let l = &link[0];
    if let Some(m) = l["master"].as_str() {
        return Err(Error::Input(format!(
            "--uplink {name}: it is a port of {m}: give vnetlab a free interface (take it out of {m} first)"
        )));
    }
    let uppers: Vec<String> = std::fs::read_dir(format!("/sys/class/net/{name}"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("upper_")
                .map(str::to_string)
        })
        .collect();
    if let Some(u) = uppers.first() {
        return Err(Error::Input(format!(
            "--uplink {name}: {u} is stacked on it (a VLAN, macvlan or bond): give vnetlab a free interface"
        )));
    }
    let routes = ip_json(&["ip", "-j", "route", "show", "default"])?;
    let default = routes
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["dev"].as_str() == Some(name));
    if default && !force {
        return Err(Error::Input(format!(
            "--uplink {name}: this machine's default route leaves through it, and the lab would take it away (you would lose this machine's network): pick another interface, or add --force-uplink if that is meant"
        )));
    }
    Ok(())
}

/// Reads what the lab will change, before it changes anything.
pub fn read_state(name: &str) -> Result<UplinkState, Error> {
    let link = ip_json(&["ip", "-j", "link", "show", "dev", name])?;
    let l = &link[0];
    let up = l["flags"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == "UP"));
    let addrs = ip_json(&["ip", "-j", "addr", "show", "dev", name])?;
    let addrs = addrs[0]["addr_info"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["scope"] == "global")
        .filter_map(|a| {
            Some(format!(
                "{}/{}",
                a["local"].as_str()?,
                a["prefixlen"].as_u64()?
            ))
        })
        .collect();
    let k = hostcmd::read(&["ethtool", "-k", name]).unwrap_or_default();
    let k = super::status::parse_offloads(&k);
    let on = |f: &str| k.get(f).map(|v| v.starts_with("on"));
    let q = ip_json(&["tc", "-j", "qdisc", "show", "dev", name, "root"]).unwrap_or_default();
    let q = q
        .as_array()
        .and_then(|a| a.first())
        .cloned()
        .unwrap_or_default();
    Ok(UplinkState {
        mtu: l["mtu"].as_u64().unwrap_or(1500) as u32,
        up,
        addrs,
        gro: on("gro"),
        tso: on("tso"),
        gso: on("gso"),
        qdisc: q["kind"].as_str().map(str::to_string),
        qdisc_limit: q["options"]["limit"].as_u64().map(|l| l as u32),
        qdisc_handle: q["handle"]
            .as_str()
            .filter(|h| {
                h.len() <= 10
                    && h.ends_with(':')
                    && h[..h.len() - 1].chars().all(|c| c.is_ascii_hexdigit())
            })
            .map(str::to_string),
    })
}

/// Runs a command in the root namespace; one line of what failed.
fn run(argv: &[&str]) -> Result<(), Error> {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]);
    let out = hostcmd::run_child(&mut c, None, hostcmd::TIMEOUT)?;
    if out.status != 0 {
        return Err(Error::Failed(format!(
            "`{}` failed: {}",
            argv.join(" "),
            hostcmd::one_line(&out.stderr)
        )));
    }
    Ok(())
}

/// Moves the uplink back from the lab's namespace `netns` into this machine's and puts back what
/// `before` recorded: MTU, addresses, offloads, qdisc, up or down. Already back: only the settings.
pub fn give_back(name: &str, netns: &str, before: &UplinkState) -> Result<(), Error> {
    let in_lab = std::path::Path::new("/run/netns").join(netns).exists()
        && hostcmd::read(&["ip", "-n", netns, "link", "show", "dev", name]).is_ok();
    if in_lab {
        HostCmd::ip(
            Some(netns),
            vec![IpCmd::ToNetns {
                dev: name.into(),
                netns: "1".into(),
            }],
        )
        .run()?;
    }
    if hostcmd::read(&["ip", "link", "show", "dev", name]).is_err() {
        return Err(Error::Failed(format!(
            "the uplink {name} is neither in lab namespace {netns} nor in this machine's: it cannot be given back (was it unplugged?)"
        )));
    }
    restore(name, before)
}

/// Puts back each setting of `before` on `name` (in the root namespace).
fn restore(name: &str, s: &UplinkState) -> Result<(), Error> {
    let mtu = s.mtu.to_string();
    run(&["ip", "link", "set", "dev", name, "down"])?;
    run(&["ip", "link", "set", "dev", name, "mtu", &mtu])?;
    run(&["ip", "addr", "flush", "dev", name, "scope", "global"])?;
    for a in &s.addrs {
        run(&["ip", "addr", "add", a, "dev", name])?;
    }
    let onoff = |b: bool| if b { "on" } else { "off" };
    for (feature, v) in [("gro", s.gro), ("tso", s.tso), ("gso", s.gso)] {
        if let Some(v) = v {
            // A feature the driver fixes is refused; what can be set is set.
            let _ = run(&["ethtool", "-K", name, feature, onoff(v)]);
        }
    }
    restore_qdisc(name, s)?;
    if s.up {
        run(&["ip", "link", "set", "dev", name, "up"])?;
    }
    Ok(())
}

/// The root qdisc as it was: a default one comes back by itself (moving an interface between
/// namespaces resets it); pfifo and fq-type ones are put back.
fn restore_qdisc(name: &str, s: &UplinkState) -> Result<(), Error> {
    let mut root = vec!["tc", "qdisc", "replace", "dev", name, "root"];
    if let Some(h) = &s.qdisc_handle {
        root.extend(["handle", h]);
    }
    match s.qdisc.as_deref() {
        None | Some("noqueue" | "mq" | "pfifo_fast") => Ok(()),
        Some("pfifo") => {
            let limit = s.qdisc_limit.unwrap_or(1000).to_string();
            root.extend(["pfifo", "limit", &limit]);
            run(&root)
        }
        Some(kind @ ("fq_codel" | "fq" | "sfq" | "cake")) => {
            root.push(kind);
            run(&root)
        }
        Some(other) => Err(Error::Failed(format!(
            "the uplink {name} had a {other} qdisc with settings vnetlab does not record: set it again by hand"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_uplink_state_round_trips_through_the_journal() {
        let s = UplinkState {
            mtu: 9000,
            up: true,
            addrs: vec!["192.0.2.7/24".into(), "fd00::7/64".into()],
            gro: Some(true),
            tso: Some(false),
            gso: Some(true),
            qdisc: Some("pfifo".into()),
            qdisc_limit: Some(500),
            qdisc_handle: Some("8001:".into()),
        };
        let back: UplinkState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
