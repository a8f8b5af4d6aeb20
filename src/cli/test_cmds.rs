//! The engine commands: `test` (driving side, standalone or in a lab), `serve` (netserver-like)
//! and the hidden `agent` (an agent on stdin/stdout, started by `test` inside lab namespaces).

use clap::Args;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use super::{input, need_root, print_json, running, CmdResult, Fail};
use crate::engine::controller::{self, AgentConn, Pair, TestResult};
use crate::engine::spec::{self, Spec, TestKind};
use crate::lab::state::{self, LabRecord};

pub const DEFAULT_PORT: u16 = 12866;

#[derive(Args)]
pub struct TestArgs {
    /// Test: TCP_STREAM, TCP_MAERTS, UDP_STREAM, TCP_RR, UDP_RR, TCP_CRR
    #[arg(short = 't', long = "test", default_value = "TCP_STREAM")]
    test: TestKind,
    /// Send size for streams (e.g. 64, 1K, 64K) [default: 16K]
    #[arg(short = 'm', long = "msg")]
    msg: Option<String>,
    /// Request,response sizes for RR tests [default: 1,1]
    #[arg(short = 'r', long = "rr")]
    rr: Option<String>,
    /// Socket buffer (SO_SNDBUF and SO_RCVBUF) of the initiator's sockets
    #[arg(short = 's')]
    local_buf: Option<String>,
    /// Socket buffer of the server's sockets
    #[arg(short = 'S')]
    remote_buf: Option<String>,
    /// Measured seconds (after the warm-up)
    #[arg(short = 'l', long = "len", default_value_t = 10.0)]
    duration: f64,
    /// Warm-up seconds, excluded from the figures
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Parallel streams (or RR connections) per sender
    #[arg(short = 'P', long, default_value_t = 1)]
    parallel: u32,
    /// Pace each stream to this rate, e.g. 100mbit (paper 1's per-desktop load)
    #[arg(long)]
    rate: Option<String>,
    /// TCP_NODELAY on every connection
    #[arg(long)]
    nodelay: bool,
    /// Send streams with MSG_ZEROCOPY
    #[arg(long)]
    zerocopy: bool,
    /// Length of a reported interval, seconds
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Standalone: the host running `vnetlab serve` (loopback or a lab address)
    #[arg(short = 'H', long = "host")]
    host: Option<String>,
    /// Standalone: the control port of `vnetlab serve`
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Standalone: the token `vnetlab serve` printed
    #[arg(long)]
    token: Option<String>,
    /// In a lab: which lab (default: the only one)
    #[arg(long)]
    lab: Option<String>,
    /// In a lab: the initiator: g1…, client, host, or `guests` (every guest at once)
    #[arg(long)]
    from: Option<String>,
    /// In a lab: the server side: g1…, client or host
    #[arg(long)]
    to: Option<String>,
    /// One JSON document on stdout
    #[arg(long)]
    json: bool,
}

impl TestArgs {
    pub fn spec(&self) -> Result<Spec, String> {
        let d = Spec::default();
        let (req, resp) = match &self.rr {
            Some(r) => spec::parse_rr(r)?,
            None => (d.req, d.resp),
        };
        let s = Spec {
            test: self.test,
            msg: self.msg.as_deref().map(spec::parse_size).transpose()?.unwrap_or(d.msg),
            req,
            resp,
            local_buf: self.local_buf.as_deref().map(spec::parse_size).transpose()?,
            remote_buf: self.remote_buf.as_deref().map(spec::parse_size).transpose()?,
            duration: self.duration,
            warmup: self.warmup,
            parallel: self.parallel,
            rate: self.rate.as_deref().map(spec::parse_rate).transpose()?,
            nodelay: self.nodelay,
            zerocopy: self.zerocopy,
            interval: self.interval,
        };
        s.validate()?;
        Ok(s)
    }
}

pub fn test(a: TestArgs) -> CmdResult {
    let spec = input(a.spec())?;
    let result = if a.from.is_some() || a.to.is_some() {
        if a.host.is_some() {
            return Err(Fail::Input("use either -H (standalone) or --from/--to (in a lab), not both".into()));
        }
        need_root("vnetlab test in a lab")?;
        let lab = input(state::resolve(a.lab.as_deref()))?;
        let rec = input(state::load(&lab))?;
        let from = a.from.as_deref().ok_or(Fail::Input("--to needs --from (g1…, client, host or guests)".into()))?;
        let to = a.to.as_deref().ok_or(Fail::Input("--from needs --to (g1…, client or host)".into()))?;
        let (mut agents, pairs) = input(lab_agents(&rec, from, to))?;
        running(controller::run(&spec, &mut agents, &pairs))?
    } else if let Some(h) = &a.host {
        let ip = input(resolve_host(h))?;
        input(check_allowed(ip))?;
        let token = a.token.as_deref().ok_or(Fail::Input("-H needs --token: pass the token `vnetlab serve` printed".into()))?;
        let remote = running(AgentConn::tcp(h, SocketAddr::new(ip, a.port), token))?;
        let local = running(AgentConn::local("local"))?;
        let mut agents = vec![local, remote];
        let pair = Pair { initiator: 0, server: 1, listen_on: ip, connect_to: ip, ports: None, from: "local".into(), to: h.clone() };
        running(controller::run(&spec, &mut agents, &[pair]))?
    } else {
        return Err(Fail::Input("say where to test: -H HOST (with `vnetlab serve` there) or --from/--to inside a lab".into()));
    };
    if a.json {
        print_json(&result);
    } else {
        print_result(&result);
    }
    Ok(())
}

fn resolve_host(h: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = h.parse::<IpAddr>() {
        return Ok(ip);
    }
    (h, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
        .ok_or_else(|| format!("cannot resolve host '{h}': give an address"))
}

/// vnetlab sends test traffic only on loopback or inside a lab's own range.
fn check_allowed(ip: IpAddr) -> Result<(), String> {
    if ip.is_loopback() {
        return Ok(());
    }
    let in_lab = state::labs().iter().filter_map(|l| state::load(l).ok()).any(|r| match ip {
        IpAddr::V4(v4) => {
            let n = r.topology.subnet;
            let mask = if n.len == 0 { 0 } else { u32::MAX << (32 - n.len) };
            u32::from(v4) & mask == u32::from(n.base) & mask
        }
        _ => false,
    });
    if in_lab {
        Ok(())
    } else {
        Err(format!("{ip} is neither loopback nor a lab address: vnetlab sends test traffic only there (use --from/--to in a lab)"))
    }
}

/// Starts an agent in each named endpoint (through the lab's exec) and pairs them.
fn lab_agents(rec: &LabRecord, from: &str, to: &str) -> Result<(Vec<AgentConn>, Vec<Pair>), String> {
    let to_ep = rec.endpoint(to)?;
    let froms: Vec<&str> = if from == "guests" {
        rec.guests().map(|g| g.name.as_str()).collect()
    } else {
        rec.endpoint(from)?;
        vec![from]
    };
    if froms.contains(&to) {
        return Err(format!("--from and --to both name {to}: pick two different endpoints"));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let start = |name: &str| -> Result<AgentConn, String> {
        let ep = rec.endpoint(name)?;
        let cmd = crate::lab::exec::command(ep, &[exe.display().to_string(), "agent".into()])?;
        AgentConn::spawn(name, cmd)
    };
    let mut agents = vec![start(to)?];
    let mut pairs = Vec::new();
    for (k, f) in froms.iter().enumerate() {
        agents.push(start(f)?);
        let via_nat = *f == "client" && to_ep.reach_from_client.is_some();
        let (connect_to, ports) = match (&to_ep.reach_from_client, via_nat) {
            (Some(r), true) => (IpAddr::V4(r.address), Some(r.ports)),
            _ => (IpAddr::V4(to_ep.address), None),
        };
        pairs.push(Pair {
            initiator: k + 1,
            server: 0,
            listen_on: IpAddr::V4(to_ep.address),
            connect_to,
            ports,
            from: f.to_string(),
            to: to.to_string(),
        });
    }
    Ok((agents, pairs))
}

pub fn print_result(r: &TestResult) {
    println!(
        "{} {} → {}: {} B messages, {} stream(s), {:.1} s measured after a {:.1} s warm-up",
        r.test, r.from, r.to, r.message_bytes, r.parallel, r.duration_s, r.warmup_s
    );
    match (&r.transactions_per_s, &r.latency_us) {
        (Some(tps), Some(l)) => {
            println!("  {:.0} transactions/s   latency µs: p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}", tps, l.p50, l.p90, l.p99, l.p999, l.max);
        }
        (Some(tps), None) => println!("  {:.0} transactions/s (none completed in the window)", tps),
        _ => {
            println!("  throughput {:.3} Gb/s", r.throughput_gbps);
            if r.per_source_gbps.len() > 1 {
                for (src, g) in &r.per_source_gbps {
                    println!("    {src:<8} {:.3} Gb/s", g.as_f64().unwrap_or(0.0));
                }
            }
            let iv: Vec<String> = r.intervals.iter().map(|i| format!("{:.2}", i.gbps)).collect();
            if !iv.is_empty() {
                println!("  per {:.1} s: {}", r.intervals[0].t, iv.join(" "));
            }
        }
    }
    if let Some(x) = r.tcp_retransmits {
        println!("  TCP retransmissions: {x}");
    }
    if let Some(l) = r.udp_loss_pct {
        println!("  UDP loss: {l:.2} %");
    }
    if let Some(z) = &r.zerocopy {
        println!("  MSG_ZEROCOPY: {} sends completed, {:.0} % copied by the kernel anyway", z["sends_completed"], z["copied_pct"].as_f64().unwrap_or(0.0));
    }
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on for control connections
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Control port
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Token clients must present (default: a random one, printed)
    #[arg(long)]
    token: Option<String>,
    /// Exit after one test session
    #[arg(long)]
    once: bool,
}

pub fn serve(a: ServeArgs) -> CmdResult {
    let token = a.token.clone().unwrap_or_else(crate::engine::serve::random_token);
    running(crate::engine::serve::serve(SocketAddr::new(a.bind, a.port), &token, a.once, |addr| {
        eprintln!("vnetlab serve: listening on {addr}; token {token} (pass it to vnetlab test --token)");
    }))
}

/// The agent started inside a lab endpoint: a session on stdin/stdout.
pub fn agent() -> CmdResult {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    running(crate::engine::agent::session(stdin.lock(), stdout.lock(), None))
}
