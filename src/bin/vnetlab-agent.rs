//! The agent alone, for QEMU guests: what a guest's `/init` runs (`agent --serial DEV`) and the
//! CPU burner a load starts in a guest (`burn --pct P --seconds S`), without the rest of vnetlab
//! (store, reports, plans), so the guest image is a fraction of the size and boots sooner under
//! TCG. `vnetlab agent` and `vnetlab burn` are the same code.

use std::path::PathBuf;

const USAGE: &str = "usage: vnetlab-agent agent [--serial DEV] | burn --pct P --seconds S";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).take(8).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let code = match a.as_slice() {
        ["agent", "--serial", dev] => {
            let e = vnetlab::engine::agent::serve_serial(&PathBuf::from(dev));
            eprintln!("vnetlab-agent: {e}");
            1
        }
        ["agent"] => {
            let (i, o) = (std::io::stdin(), std::io::stdout());
            let mode = vnetlab::engine::agent::SessionMode::Local;
            match vnetlab::engine::agent::session(i.lock(), o.lock(), mode) {
                Ok(_) => 0,
                Err(e) => {
                    eprintln!("vnetlab-agent: {e}");
                    1
                }
            }
        }
        ["burn", "--pct", p, "--seconds", s] => match (p.parse::<f64>(), s.parse::<f64>()) {
            (Ok(p), Ok(s)) if p > 0.0 && p <= 100.0 && s > 0.0 && s <= 86_400.0 => {
                vnetlab::measure::load::burn(p, s);
                0
            }
            _ => {
                eprintln!("vnetlab-agent: burn: --pct 0 to 100 and --seconds up to 86400");
                2
            }
        },
        _ => {
            eprintln!("vnetlab-agent: {USAGE}");
            2
        }
    };
    std::process::exit(code);
}
