//! Kernel pacing in a lab (`--pacing kernel`): for a test's length, the fq qdisc on each device
//! that sends its paced streams, so the kernel spaces every flow's packets at its socket's
//! SO_MAX_PACING_RATE; afterwards each device gets back the root qdisc it had. Where fq cannot go
//! (a QEMU guest's NIC is inside the VM; a shaped wire end keeps its tbf/netem), TCP paces with its
//! internal timer instead, and the report says so; UDP has no internal pacing, so a UDP sender
//! there is refused.

use crate::records::measured::KernelPacing;

use super::hostcmd::{self, HostCmd, TcCmd};
use super::state::LabRecord;
use super::Error;
use crate::vocab::Role;

/// What a root qdisc becomes again after the test.
#[derive(Clone, Debug, PartialEq)]
enum Restore {
    /// fq was there already.
    Nothing,
    /// The device's default (noqueue, pfifo_fast, fq_codel, mq): remove the root.
    Default,
    /// A wire end's planned queue.
    Pfifo(u32),
}

/// What to do with a device whose root qdisc is `kind` (with `limit`): replace it with fq and
/// put back what, or leave it (a shaped wire end) and let TCP pace.
fn plan(kind: &str, limit: Option<u32>) -> Option<Restore> {
    match kind {
        "fq" => Some(Restore::Nothing),
        "noqueue" | "pfifo_fast" | "fq_codel" | "mq" => Some(Restore::Default),
        "pfifo" => Some(Restore::Pfifo(limit.unwrap_or(1000))),
        _ => None,
    }
}

/// Puts fq back off the devices when dropped.
pub struct FqGuard {
    restore: Vec<(String, String, Restore)>,
    pub report: KernelPacing,
}

impl Drop for FqGuard {
    fn drop(&mut self) {
        for (ns, dev, r) in self.restore.drain(..) {
            let cmd = match r {
                Restore::Nothing => continue,
                Restore::Default => TcCmd::DelRoot { dev },
                Restore::Pfifo(limit) => TcCmd::PfifoReplace { dev, limit },
            };
            let _ = tc(&ns, cmd);
        }
    }
}

fn tc(ns: &str, cmd: TcCmd) -> Result<(), Error> {
    Ok(HostCmd::Tc {
        netns: Some(ns.to_string()),
        cmds: vec![cmd],
    }
    .run()?)
}

/// The root qdisc of `dev` in `ns`: its kind and, for pfifo, its limit.
fn root_qdisc(ns: &str, dev: &str) -> Result<(String, Option<u32>), Error> {
    let out = hostcmd::read(&["tc", "-n", ns, "-j", "qdisc", "show", "dev", dev, "root"])?;
    parse_root(&out).ok_or_else(|| {
        Error::Failed(format!(
            "cannot read the root qdisc of {dev} in {ns}: {}",
            hostcmd::one_line(&out)
        ))
    })
}

fn parse_root(json: &str) -> Option<(String, Option<u32>)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let q = v.as_array()?.iter().find(|q| q["root"] == true)?;
    let limit = q["options"]["limit"].as_u64().map(|l| l as u32);
    Some((q["kind"].as_str()?.to_string(), limit))
}

/// fq on the devices of `senders` for a kernel-paced test (`udp`: its streams are UDP, which
/// only fq paces).
pub fn fq_on_senders(rec: &LabRecord, senders: &[Role], udp: bool) -> Result<FqGuard, Error> {
    let mut g = FqGuard {
        restore: vec![],
        report: KernelPacing::default(),
    };
    for &role in senders {
        let ep = rec.endpoint(role)?;
        let why_not = if let Some(r) = &ep.remote {
            Some(format!(
                "{role} is another machine ({}): its qdisc is its own",
                r.address
            ))
        } else if ep.vm.is_some() {
            Some(format!(
                "{role} is a QEMU guest: its NIC's qdisc is inside the VM"
            ))
        } else {
            let (kind, limit) = root_qdisc(&ep.netns, &ep.iface)?;
            match plan(&kind, limit) {
                Some(Restore::Nothing) => None,
                Some(r) => match tc(
                    &ep.netns,
                    TcCmd::FqReplace {
                        dev: ep.iface.clone(),
                    },
                ) {
                    Ok(()) => {
                        g.restore.push((ep.netns.clone(), ep.iface.clone(), r));
                        None
                    }
                    // A kernel built without sch_fq says "Specified qdisc kind is unknown".
                    Err(e) if e.to_string().contains("kind is unknown") => {
                        Some("this kernel has no fq qdisc (sch_fq)".to_string())
                    }
                    Err(e) => Some(format!("fq cannot go on {}: {e}", ep.iface)),
                },
                None => Some(format!(
                    "{role}'s {} keeps its {kind} (the shaped wire)",
                    ep.iface
                )),
            }
        };
        let Some(why) = why_not else {
            g.report.fq.push(format!("{role} (fq on {})", ep.iface));
            continue;
        };
        if udp {
            return Err(Error::Input(format!(
                "--pacing kernel paces UDP only through fq on the sending device, and {why}: use --pacing app"
            )));
        }
        g.report
            .tcp_internal
            .push(format!("{role}: TCP's internal pacing ({why})"));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_qdiscs_are_read_and_planned() {
        let j =
            r#"[{"kind":"pfifo","handle":"1:","root":true,"refcnt":2,"options":{"limit":1000}}]"#;
        assert_eq!(parse_root(j), Some(("pfifo".into(), Some(1000))));
        assert_eq!(plan("pfifo", Some(500)), Some(Restore::Pfifo(500)));
        let j = r#"[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]"#;
        assert_eq!(parse_root(j), Some(("noqueue".into(), None)));
        assert_eq!(plan("noqueue", None), Some(Restore::Default));
        assert_eq!(plan("fq", None), Some(Restore::Nothing));
        // A shaped wire end keeps its shaping.
        assert_eq!(plan("tbf", None), None);
        assert_eq!(plan("netem", None), None);
        assert_eq!(parse_root("[]"), None);
        assert_eq!(parse_root("not json"), None);
    }
}
