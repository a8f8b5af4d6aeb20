//! Flags that iperf3 and netperf users type by habit and vnetlab spells otherwise: `test` refuses
//! them before parsing with one line naming vnetlab's equivalent (exit 2), instead of clap's
//! "unexpected argument" or, worse, a meaning of vnetlab's own (`-t 2` is a test name here).
//! Flags that mean the same (`-l`, `-m`, `-s`, `-S`, `-P`, `-H`, `-p`, `-i`, `-I`) just work.

/// The refusal for the first foreign flag among `vnetlab test`'s arguments, if any.
pub fn foreign(args: &[String]) -> Option<String> {
    if args.get(1).map(String::as_str) != Some("test") {
        return None;
    }
    let rest = &args[2..];
    rest.iter().enumerate().find_map(|(i, a)| {
        let next = rest.get(i + 1).map(String::as_str);
        why(a, next).map(|w| format!("{a}: {w}"))
    })
}

/// What vnetlab takes instead of flag `a` (followed by `next`), where it spells it otherwise.
fn why(a: &str, next: Option<&str>) -> Option<&'static str> {
    let number = next.is_some_and(|n| n.parse::<f64>().is_ok());
    Some(match a {
        "-t" | "--test" if number => {
            "iperf3's -t is seconds; vnetlab's -t names the test (TCP_STREAM, UDP_STREAM, TCP_RR, …): give the seconds as -l N"
        }
        "--time" => "give the seconds as -l N (netperf's -l)",
        "-u" | "--udp" => "iperf3's -u is vnetlab's -t UDP_STREAM (with --rate to pace it)",
        "-w" | "--window" => {
            "iperf3's -w is vnetlab's -s SIZE (the initiator's socket buffer) and -S SIZE (the server's)"
        }
        "-f" | "--format" => {
            "vnetlab prints Gb/s and transactions/s; --json prints every figure for scripts"
        }
        "-O" | "--omit" => {
            "iperf3's -O is vnetlab's --warmup SECONDS (0.5 by default, left out of every figure)"
        }
        "--logfile" => "redirect the output instead: vnetlab test … > FILE (or --json > FILE)",
        "--" if next.is_some_and(|n| n.starts_with('-')) => {
            "netperf's test-specific options after -- are vnetlab's own: give -m SIZE, -s/-S SIZE or -r REQ,RESP without the --"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_peers_habit_is_refused_naming_vnetlabs_equivalent() {
        let refused = |s: &str| foreign(&args(s)).unwrap_or_default();
        assert!(refused("vnetlab test -t 2").contains("-l N"));
        assert!(refused("vnetlab test -P 2 -u").contains("-t UDP_STREAM"));
        assert!(refused("vnetlab test -w 64K").contains("-s SIZE"));
        assert!(refused("vnetlab test -O 1").contains("--warmup"));
        assert!(refused("vnetlab test --logfile out.txt").contains("> FILE"));
        assert!(refused("vnetlab test -f m").contains("Gb/s"));
        assert!(refused("vnetlab test -t TCP_STREAM -- -m 8K").contains("-m SIZE"));
        assert!(refused("vnetlab test -t 2").starts_with("-t: "));
    }

    #[test]
    fn vnetlabs_own_flags_and_other_commands_pass() {
        for ok in [
            "vnetlab test -t TCP_STREAM -l 2 -m 8K -s 64K -S 64K -P 2",
            "vnetlab test -t UDP_STREAM --rate 100mbit",
            "vnetlab test -i 3,3 -I 95,5",
            "vnetlab run -u x.toml",
            "vnetlab exec --lab lab g1 -- -t 2",
            "vnetlab",
        ] {
            assert_eq!(foreign(&args(ok)), None, "{ok}");
        }
    }
}
