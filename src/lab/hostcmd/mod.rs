//! The one place the host network is changed: iproute2, tc, ethtool, nft and sysctl commands,
//! run with a timeout (or printed, with `--dry-run`) and recorded in the lab's command log.
//! Commands arrive typed (`cmds`) and become text only here.

mod cmds;
pub mod netlink;
pub use cmds::{IpCmd, NftCmd, Offloads, TcCmd};

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long any one host command may take before it is killed and reported.
pub const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, PartialEq)]
pub enum HostCmd {
    /// `ip [-n NS] -batch -`, one command per line (a single line runs without -batch).
    Ip {
        netns: Option<String>,
        cmds: Vec<IpCmd>,
    },
    /// `tc [-n NS] -batch -`.
    Tc {
        netns: Option<String>,
        cmds: Vec<TcCmd>,
    },
    /// `ip netns exec NS ethtool -K …`.
    Ethtool { netns: String, offloads: Offloads },
    /// `ip netns exec NS nft -f -` with the table's script.
    Nft { netns: String, table: NftCmd },
    /// `ip netns exec NS sysctl -qw KEY=VALUE`.
    Sysctl {
        netns: String,
        key: String,
        value: String,
    },
    /// Writes a sysfs or cgroup file.
    Write { path: PathBuf, value: String },
    /// Creates a folder (a cgroup); `exist_ok`: a shared folder another lab may have made.
    Mkdir { path: PathBuf, exist_ok: bool },
    /// Steers an interface's receive and transmit processing (inside its namespace): RPS and XPS
    /// masks on every queue, and threaded NAPI.
    Steer {
        netns: String,
        dev: String,
        rps: String,
        xps: String,
        threaded: bool,
    },
}

impl HostCmd {
    pub fn ip(netns: Option<&str>, cmds: Vec<IpCmd>) -> HostCmd {
        HostCmd::Ip {
            netns: netns.map(str::to_string),
            cmds,
        }
    }

    /// The lines of an `ip` or `tc` batch.
    fn batch_lines(&self) -> Vec<String> {
        match self {
            HostCmd::Ip { cmds, .. } => cmds.iter().map(ToString::to_string).collect(),
            HostCmd::Tc { cmds, .. } => cmds.iter().map(ToString::to_string).collect(),
            _ => vec![],
        }
    }

    /// The command as a shell line (what `--dry-run` prints and the log records).
    pub fn shell(&self) -> String {
        fn batch(tool: &str, netns: &Option<String>, lines: &[String]) -> String {
            let n = netns
                .as_ref()
                .map(|n| format!(" -n {n}"))
                .unwrap_or_default();
            match lines {
                [one] => format!("{tool}{n} {one}"),
                _ => format!("{tool}{n} -batch - <<'EOF'\n{}\nEOF", lines.join("\n")),
            }
        }
        match self {
            HostCmd::Ip { netns, .. } => batch("ip", netns, &self.batch_lines()),
            HostCmd::Tc { netns, .. } => batch("tc", netns, &self.batch_lines()),
            HostCmd::Ethtool { netns, offloads } => {
                format!(
                    "ip netns exec {netns} ethtool {}",
                    offloads.args().join(" ")
                )
            }
            HostCmd::Nft { netns, table } => {
                format!("ip netns exec {netns} nft -f - <<'EOF'\n{table}EOF")
            }
            HostCmd::Sysctl { netns, key, value } => {
                format!("ip netns exec {netns} sysctl -qw {key}={value}")
            }
            HostCmd::Write { path, value } => format!("echo {value} > {}", path.display()),
            HostCmd::Mkdir { path, exist_ok } => format!(
                "mkdir {}{}",
                if *exist_ok { "-p " } else { "" },
                path.display()
            ),
            HostCmd::Steer { netns, .. } => {
                format!("ip netns exec {netns} sh -c '{}'", self.steer_script())
            }
        }
    }

    /// The sysfs writes of a `Steer`, as one shell script.
    fn steer_script(&self) -> String {
        let HostCmd::Steer {
            dev,
            rps,
            xps,
            threaded,
            ..
        } = self
        else {
            return String::new();
        };
        let q = format!("/sys/class/net/{dev}/queues");
        let mut s = format!("for q in {q}/rx-*; do echo {rps} > $q/rps_cpus; done; for q in {q}/tx-*; do echo {xps} > $q/xps_cpus; done");
        if *threaded {
            s += &format!("; echo 1 > /sys/class/net/{dev}/threaded");
        }
        s
    }

    /// Runs the command; the error is one line with the command's own complaint. A namespace's
    /// link commands and offloads are made in-process over netlink and ioctl (`netlink`).
    pub fn run(&self) -> Result<(), Error> {
        match self {
            HostCmd::Ip {
                netns: Some(ns),
                cmds,
            } if netlink::handles(cmds) => {
                return netlink::run_ip(Some(ns), cmds).map_err(|(i, e)| {
                    let line = cmds.get(i).map(ToString::to_string).unwrap_or_default();
                    kernel_refused(&format!("ip -n {ns} {line}"), e)
                });
            }
            HostCmd::Ethtool { netns, offloads } => {
                let out = netlink::ethtool_in(netns, &offloads.args())
                    .map_err(|e| Error::Run(format!("{}: {e}", self.shell())))?;
                return self.judged(out);
            }
            _ => {}
        }
        self.run_tool()
    }

    /// Runs the command's tool as a child process.
    fn run_tool(&self) -> Result<(), Error> {
        let ns_exec = |netns: &str, tool: &str, args: &[String]| {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", netns, tool]).args(args);
            c
        };
        let (mut cmd, input) = match self {
            HostCmd::Ip { netns, .. } | HostCmd::Tc { netns, .. } => {
                let tool = if matches!(self, HostCmd::Ip { .. }) {
                    "ip"
                } else {
                    "tc"
                };
                let mut c = Command::new(tool);
                if let Some(n) = netns {
                    c.args(["-n", n]);
                }
                c.args(["-batch", "-"]);
                (c, Some(self.batch_lines().join("\n") + "\n"))
            }
            HostCmd::Ethtool { netns, offloads } => {
                (ns_exec(netns, "ethtool", &offloads.args()), None)
            }
            HostCmd::Nft { netns, table } => (
                ns_exec(netns, "nft", &["-f".into(), "-".into()]),
                Some(table.to_string()),
            ),
            HostCmd::Sysctl { netns, key, value } => (
                ns_exec(netns, "sysctl", &["-qw".into(), format!("{key}={value}")]),
                None,
            ),
            HostCmd::Write { path, value } => {
                return std::fs::write(path, value)
                    .map_err(|e| Error::Io(format!("writing {value} to {}: {e}", path.display())))
            }
            HostCmd::Mkdir { path, exist_ok } => {
                return match std::fs::create_dir(path) {
                    Err(e) if *exist_ok && e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                    r => r.map_err(|e| Error::Io(format!("creating {}: {e}", path.display()))),
                };
            }
            HostCmd::Steer { netns, .. } => (
                ns_exec(netns, "sh", &["-ec".into(), self.steer_script()]),
                None,
            ),
        };
        let out = run_child(&mut cmd, input.as_deref(), TIMEOUT)?;
        self.judged(out)
    }

    /// The command's outcome from its tool's exit status and complaint.
    fn judged(&self, out: Output) -> Result<(), Error> {
        if out.status == 0 {
            Ok(())
        } else {
            let cmd = self.shell().lines().next().unwrap_or_default().to_string();
            let failure = Failure::of(&out.stderr);
            Err(Error::Failed {
                cmd,
                stderr: one_line(&out.stderr),
                failure,
            })
        }
    }
}

/// Why a host command failed. Its `Display` is the one line users have always seen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tool could not be started, or did not finish in time.
    #[error("{0}")]
    Run(String),
    /// Writing a value under /sys or making a folder failed.
    #[error("{0}")]
    Io(String),
    /// The tool ran and refused.
    #[error("`{cmd}` failed: {stderr}")]
    Failed {
        cmd: String,
        stderr: String,
        failure: Failure,
    },
}

/// A command the kernel refused in-process, as the tool would have reported it.
fn kernel_refused(cmd: &str, e: std::io::Error) -> Error {
    let failure = if e.raw_os_error() == Some(libc::ENODEV) {
        Failure::NoSuchDevice
    } else {
        Failure::Other
    };
    Error::Failed {
        cmd: cmd.to_string(),
        stderr: format!("the kernel answered: {e}"),
        failure,
    }
}

/// What the kernel (through the tool) complained of, where a caller acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The device named is not there (already moved or removed).
    NoSuchDevice,
    /// The kernel has no such qdisc (e.g. netem not built).
    UnknownQdisc,
    Other,
}

impl Failure {
    /// The one place a tool's words are read: iproute2's messages for these two cases.
    fn of(stderr: &str) -> Failure {
        if stderr.contains("Cannot find device") {
            Failure::NoSuchDevice
        } else if stderr.contains("qdisc kind is unknown") {
            Failure::UnknownQdisc
        } else {
            Failure::Other
        }
    }
}

impl Error {
    pub fn failure(&self) -> Failure {
        match self {
            Error::Failed { failure, .. } => *failure,
            _ => Failure::Other,
        }
    }
}

/// The result of a finished child.
pub struct Output {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a child with input, collecting output, killing it after `timeout`; it dies with vnetlab,
/// and runs in its own process group, so a terminal's Ctrl-C never cuts a command in half.
pub fn run_child(
    cmd: &mut Command,
    input: Option<&str>,
    timeout: Duration,
) -> Result<Output, Error> {
    let name = cmd.get_program().to_string_lossy().into_owned();
    crate::sys::die_with_parent(cmd);
    cmd.process_group(0);
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Error::Run(format!(
                "cannot run {name}: {e} (is it installed? `make deps` installs it)"
            ))
        })?;
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = stdin.write_all(text.as_bytes());
    }
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .map_err(|e| Error::Run(format!("waiting for {name}: {e}")))?
        {
            break st;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Run(format!(
                "{name} did not finish within {}s and was killed",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_micros(500));
    };
    Ok(Output {
        status: status
            .code()
            .unwrap_or(128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)),
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}

/// Runs a read-only command and returns its stdout, or a one-line error.
pub fn read(args: &[&str]) -> Result<String, Error> {
    let mut c = Command::new(args[0]);
    c.args(&args[1..]);
    let out = run_child(&mut c, None, TIMEOUT)?;
    if out.status != 0 {
        return Err(Error::Failed {
            cmd: args.join(" "),
            stderr: one_line(&out.stderr),
            failure: Failure::of(&out.stderr),
        });
    }
    Ok(out.stdout)
}

pub fn one_line(s: &str) -> String {
    let t: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    t.join("; ")
}

/// The offloads `ethtool -k` shows that `status` reports, by their short names (gro, lro, tso,
/// gso, rx-csum, tx-csum): "on", "off", "on [fixed]".
pub fn parse_offloads(ethtool_k: &str) -> std::collections::HashMap<String, String> {
    let wanted = [
        ("generic-receive-offload", "gro"),
        ("large-receive-offload", "lro"),
        ("tcp-segmentation-offload", "tso"),
        ("generic-segmentation-offload", "gso"),
        ("rx-checksumming", "rx-csum"),
        ("tx-checksumming", "tx-csum"),
    ];
    let mut m = std::collections::HashMap::new();
    for line in ethtool_k.lines() {
        if let Some((k, v)) = line.trim().split_once(':') {
            if let Some((_, short)) = wanted.iter().find(|(long, _)| *long == k) {
                let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
                m.insert(short.to_string(), v);
            }
        }
    }
    m
}

/// Every feature `ethtool -k` shows: name → (on, fixed).
pub fn features(ethtool_k: &str) -> std::collections::BTreeMap<String, (bool, bool)> {
    ethtool_k
        .lines()
        .skip_while(|l| l.starts_with("Features for"))
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            let v = v.trim();
            let on = v.starts_with("on");
            (on || v.starts_with("off"))
                .then(|| (k.trim().to_string(), (on, v.contains("[fixed]"))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_complaints_are_classified_once() {
        assert_eq!(
            Failure::of("Cannot find device \"vlx1g1\""),
            Failure::NoSuchDevice
        );
        assert_eq!(
            Failure::of("Error: Specified qdisc kind is unknown."),
            Failure::UnknownQdisc
        );
        assert_eq!(
            Failure::of("RTNETLINK answers: File exists"),
            Failure::Other
        );
        let e = Error::Failed {
            cmd: "ip link add x".into(),
            stderr: "RTNETLINK answers: File exists".into(),
            failure: Failure::Other,
        };
        assert_eq!(
            e.to_string(),
            "`ip link add x` failed: RTNETLINK answers: File exists"
        );
    }

    #[test]
    fn shell_lines_show_the_exact_commands() {
        let c = HostCmd::ip(Some("vlx-host"), vec![IpCmd::Up("vlxw".into())]);
        assert_eq!(c.shell(), "ip -n vlx-host link set vlxw up");
        let c = HostCmd::ip(
            None,
            vec![IpCmd::NetnsAdd("a".into()), IpCmd::NetnsAdd("b".into())],
        );
        assert_eq!(
            c.shell(),
            "ip -batch - <<'EOF'\nnetns add a\nnetns add b\nEOF"
        );
        let c = HostCmd::Ethtool {
            netns: "n".into(),
            offloads: Offloads {
                dev: "d".into(),
                gro: false,
                tso: false,
            },
        };
        assert_eq!(
            c.shell(),
            "ip netns exec n ethtool -K d gro off tso off gso off"
        );
    }

    #[test]
    fn run_times_out_and_reports() {
        let mut c = Command::new("sleep");
        c.arg("5");
        let e = run_child(&mut c, None, Duration::from_millis(100))
            .err()
            .unwrap();
        assert!(matches!(e, Error::Run(_)), "{e}");
        assert!(e.to_string().contains("did not finish"), "{e}");
        let mut c = Command::new("sh");
        c.args(["-c", "cat; echo oops >&2; exit 3"]);
        let o = run_child(&mut c, Some("hi"), TIMEOUT).unwrap();
        assert_eq!(
            (o.status, o.stdout.as_str(), o.stderr.trim()),
            (3, "hi", "oops")
        );
    }

    #[test]
    fn ethtool_output_is_parsed() {
        let k = "Features for vllabg1:\nrx-checksumming: on\ntx-checksumming: on\n\ttx-checksum-ipv4: off [fixed]\ntcp-segmentation-offload: off\ngeneric-segmentation-offload: on\ngeneric-receive-offload: off\nlarge-receive-offload: off [fixed]\n";
        let m = super::parse_offloads(k);
        assert_eq!(m["gro"], "off");
        assert_eq!(m["tso"], "off");
        assert_eq!(m["gso"], "on");
        assert_eq!(m["lro"], "off [fixed]");
        assert_eq!(m.len(), 6);
    }
}
