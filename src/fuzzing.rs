//! One entry point that runs arbitrary input through every text parser vnetlab wrote; used by
//! the cargo-fuzz target (`make fuzz`) and by a randomized unit test that runs in `make test`.

/// Parses `data` every way vnetlab parses text. Errors are fine; panics are bugs.
pub fn all_text_parsers(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    use crate::lab::{addr, journal, topology};
    let _ = topology::TopologyFile::parse(s, "fuzz.toml")
        .map(|t| t.into_topology().map(|t| crate::lab::plan::validate(&t)));
    let _ = s.parse::<crate::units::Rate>();
    let _ = s.parse::<crate::units::Delay>();
    let _ = s.parse::<crate::units::Loss>();
    let _ = s.parse::<crate::vocab::Mode>();
    let _ = s.parse::<crate::vocab::Gro>();
    let _ = s.parse::<addr::Subnet>();
    let _ = s.parse::<crate::units::Cidr>();
    let _ = addr::overlapping_route(s, &"10.213.0.0/16".parse().unwrap());
    let lines: Vec<String> = s.lines().map(str::to_string).collect();
    if let Ok(es) = journal::parse(&lines, !s.ends_with('\n')) {
        let roots = [std::path::PathBuf::from("/sys/fs/cgroup/cpuacct")];
        let _ = journal::validate("x", &es, &roots);
        let _ = journal::usage(&es, |_, _| false);
    }
    let _ = crate::lab::hostcmd::parse_offloads(s);
    let _ = crate::meter::procstat::parse(s);
    let _ = crate::meter::procstat::timer_list_idle_ns(s);
    let _ = crate::meter::sched::parse_schedstat(s);
    let _ = crate::meter::sched::roots(s);
    let _ = crate::meter::kernel::Accounting::parse(s, s, "fuzz");
    if let Ok(r) = crate::meter::raw::Recording::parse(s) {
        let _ = r.cores();
    }
    let _ = crate::stats::parse_confidence(s);
    let _ = crate::stats::parse_netperf_confidence(s);
    let _ = crate::stats::parse_iterations(s);
    let _ = crate::stats::parse_netperf_iterations(s);
    let _ = crate::units::parse_size(s);
    let _ = crate::units::parse_rr(s);
    let _ = s.parse::<crate::vocab::TestKind>();
    control_protocol(s);
    let _ = serde_json::from_str::<crate::engine::proto::Reply>(s);
    let _ = s.parse::<crate::units::CpuList>();
    let _ = crate::lab::steer::mask_cpus(s);
    let _ = crate::meter::cgroupstat::parse_percpu(s);
    let _ = crate::experiment::file::parse(s, "fuzz.toml")
        .map(|e| crate::experiment::matrix::count(&e));
    let _ = crate::bench::engine::parse_sockperf(s);
    let _ = crate::engine::vdi::profile::parse(s, "fuzz.toml");
}

/// Runs arbitrary bytes through the VDI session's message reader, as a hostile peer would send
/// them: every header is bounded before its payload is read. Never panics.
pub fn vdi_messages(data: &[u8]) {
    let mut r = crate::engine::vdi::wire::Reader::new(data);
    while let Ok(Some(m)) = r.next_msg() {
        assert!(m.payload() <= crate::engine::vdi::wire::MAX_FRAME);
        if r.skip(m.payload()).is_err() {
            break;
        }
    }
}

/// What a control connection's bytes go through before anything runs: `serve`'s hello judge,
/// the bounded line reader, the request parser, every spec check (a request that passes would
/// allocate only what the checks allow) and the destination and port checks (a request that
/// passes aims only at loopback, on ports 1024 and above).
fn control_protocol(s: &str) {
    use crate::engine::proto::{self, Request};
    use crate::engine::reach::{Reach, MIN_PORT};
    let _ = crate::engine::serve::judge(s.as_bytes(), "fuzz-token");
    let reach = Reach::default();
    let mut r = std::io::BufReader::with_capacity(7, s.as_bytes());
    while let Ok(Some(line)) = proto::read_line(&mut r, 4096) {
        let req = serde_json::from_str::<Request>(&line);
        if let Ok(Request::Listen { spec, .. } | Request::Connect { spec, .. }) = &req {
            if spec.validate().is_ok() {
                assert!(
                    spec.msg.max(spec.req).max(spec.resp) * spec.parallel as usize
                        <= crate::engine::spec::MAX_BUFFERS
                );
            }
        }
        match req {
            Ok(Request::Listen { bind, ports, .. }) if reach.check_listen(bind, ports).is_ok() => {
                assert!(bind.to_canonical().is_loopback());
                assert!(ports.is_none_or(|[lo, hi]| lo >= MIN_PORT && hi >= lo));
            }
            Ok(Request::Connect { to, .. }) if reach.check_connect(&to).is_ok() => {
                assert!(to
                    .iter()
                    .all(|a| a.ip().to_canonical().is_loopback() && a.port() >= MIN_PORT));
            }
            _ => {}
        }
    }
}

/// Runs arbitrary bytes through the device models' frame handling (the guest-frame checks and
/// the LRO coalescer), the netlink answers a lab build reads (the input is cut into frames by
/// its own first bytes) and the kernel's type description (BTF) the softirq tracer reads. Never
/// panics.
pub fn frames(data: &[u8]) {
    let mut btf = vec![0x9f, 0xeb];
    btf.extend_from_slice(data);
    for b in [data, &btf[..]] {
        let _ =
            crate::meter::btf::Btf::parse(b).map(|t| t.offset("net_device", &["nd_net", "net"]));
    }
    use crate::vnic::{backend, lro::Lro};
    let mut l = Lro::default();
    let mut out = Vec::new();
    let mut rest = data;
    while rest.len() > 2 {
        let n = (u16::from_le_bytes([rest[0], rest[1]]) as usize % 2048).min(rest.len() - 2);
        let f = &rest[2..2 + n];
        let _ = backend::check_from_guest(f, crate::records::vnic::Model::Paravirt, 1500);
        let _ = backend::check_from_guest(f, crate::records::vnic::Model::Emulated, 1500);
        let _ = crate::vnic::frame::parse_tcp(f);
        let _ = crate::lab::hostcmd::netlink::acks(f);
        l.push(f, &mut out);
        rest = &rest[2 + n..];
    }
    l.flush_all(&mut out);
    for o in &out {
        assert!(
            o.len() <= 65535 + 14 + 12 + 60,
            "an output frame outgrew 64 KB"
        );
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    /// A quick stable-Rust stand-in for the fuzzer: random and mutated inputs, no panics.
    #[test]
    fn parsers_survive_random_input() {
        let seeds: &[&str] = &[
            "name = \"demo\"\nmode = \"nat\"\nguests = 4\n[wire]\nrate = \"1gbit\"\n",
            "1gbit", "5ms", "0.1%", "10.213.0.0/16", "128K", "64,1K",
            "cpu  100 0 50 800 10 5 20 0 30 0\ncpu0 1 2 3 4\n",
            "generic-receive-offload: on\ntcp-segmentation-offload: off [fixed]\n",
            "{\"kind\":\"netns\",\"name\":\"vlx-host\"}\n{\"kind\":\"cgroup\",\"path\":\"/x\",\"shared\":true}",
            "{\"op\":\"listen\",\"spec\":{},\"bind\":\"127.0.0.1\",\"ports\":[1,2],\"streams\":1,\"first_id\":0}",
            "{\"op\":\"listen\",\"spec\":{\"test\":\"TCP_RR\",\"msg\":4611686018427387904,\"req\":0,\"resp\":0,\"local_buf\":null,\"remote_buf\":null,\"duration\":1.0,\"warmup\":0.0,\"parallel\":256,\"rate\":0,\"nodelay\":false,\"zerocopy\":false,\"interval\":1.0},\"bind\":\"127.0.0.1\",\"ports\":null,\"streams\":9,\"first_id\":0}\n{\"op\":\"run\"}",
            "{\"op\":\"hello\",\"token\":\"\"}\n{\"op\":\"quit\"}",
            "{\"op\":\"hello\",\"token\":\"fuzz-token\"}\n",
            "{\"op\":\"connect\",\"spec\":{},\"to\":[\"8.8.8.8:53\",\"127.0.0.1:5001\",\"[::ffff:127.0.0.1]:80\"],\"first_id\":0}",
            "{\"op\":\"listen\",\"spec\":{},\"bind\":\"0.0.0.0\",\"ports\":[1,1],\"streams\":1,\"first_id\":0}",
            "10.213.0.0/16", "::ffff:10.0.0.1/104",
            "{\"kind\":\"owner\",\"pid\":1,\"start\":null,\"kept\":true}\n{\"kind\":\"cgroup\",\"path\":\"/sys/fs/cgroup/cpuacct/vnetlab/vlx/../..\",\"shared\":false}",
            "0-3,6", "00000002,00000001", "1500000000 500000000",
            "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nloads = [\"max\", \"1gbit\"]\n",
            "[{\"dst\":\"10.0.0.0/8\",\"dev\":\"eth0\"}]",
            "sockperf: [Valid Duration] RunTime=1.5 sec; SentMessages=2; ReceivedMessages=2\n---> percentile 50.000 = 1\n",
            "[cad]\nfps = 60\nframe_bytes = [[50000, 1], [9, 0.5]]\nusb_mbit = 100\nmax_unacked = 2\n",
            "window_s: 1\nticks_per_s: 100\nkernel: {}\nsched: schedstat\n--- a stat\ncpu  1 0 0 9 0 0 0 0 0 0\ncpu0 1 0 0 9 0 0 0 0\n--- a sched\ncpu0 0 0 0 0 0 0 5 0 0\n--- b stat\ncpu  2 0 0 18 0 0 0 3 0 0\ncpu0 2 0 0 18 0 0 0 3\n--- b cpuidle\n0 5\n",
            "now at 5 nsecs\ncpu: 0\n  .tick_stopped   : 1\n  .idle_entrytime : 9 nsecs\n  .idle_sleeptime : 3 nsecs\n",
            "95,5", "30,6",
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x766e6c);
        let alphabet = b" \n\t=\"'[]{},:%./-0123456789abcdefgkmnorstuwxyzKMGT\\#\xc3\xa9";
        for _ in 0..20_000 {
            let mut v: Vec<u8> = if rng.gen_bool(0.5) {
                seeds[rng.gen_range(0..seeds.len())].as_bytes().to_vec()
            } else {
                Vec::new()
            };
            for _ in 0..rng.gen_range(0..12) {
                let pos = if v.is_empty() {
                    0
                } else {
                    rng.gen_range(0..=v.len())
                };
                match rng.gen_range(0..3) {
                    0 => v.insert(pos, alphabet[rng.gen_range(0..alphabet.len())]),
                    1 if !v.is_empty() => {
                        v.remove(pos.min(v.len() - 1));
                    }
                    _ => v.insert(pos, rng.gen()),
                }
            }
            super::all_text_parsers(&v);
        }
    }

    /// Random bytes, and real VDI messages with random damage, through the session's reader.
    #[test]
    fn vdi_messages_survive_random_input() {
        use crate::engine::vdi::wire::Msg;
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x766469);
        for _ in 0..5000 {
            let mut v: Vec<u8> = Vec::new();
            for _ in 0..rng.gen_range(0..6) {
                let m = match rng.gen_range(0..4) {
                    0 => Msg::Frame {
                        seq: rng.gen(),
                        answers: rng.gen(),
                        sent_ns: rng.gen(),
                        len: rng.gen_range(0..300),
                    },
                    1 => Msg::Input {
                        seq: rng.gen(),
                        data: rng.gen(),
                    },
                    2 => Msg::Ack { seq: rng.gen() },
                    _ => Msg::Usb {
                        len: rng.gen_range(0..300),
                    },
                };
                v.extend(m.header());
                v.extend((0..m.payload()).map(|_| rng.gen::<u8>()));
            }
            for _ in 0..rng.gen_range(0..4) {
                if !v.is_empty() {
                    let i = rng.gen_range(0..v.len());
                    v[i] = rng.gen();
                }
            }
            super::vdi_messages(&v);
        }
    }

    /// Random frames, and real TCP trains with random damage, through the LRO and the checks.
    #[test]
    fn frame_handling_survives_random_input() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x6c726f);
        for _ in 0..3000 {
            let n = rng.gen_range(0..4000);
            let v: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            super::frames(&v);
        }
    }
}
