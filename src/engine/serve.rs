//! `vnetlab serve`: the netserver of vnetlab. Listens for control connections on one address,
//! checks each one's token, and runs an agent session per connection.

use std::io::BufReader;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

/// Idle control connections are dropped after this long.
pub const IDLE: Duration = Duration::from_secs(600);

pub fn random_token() -> String {
    use rand::Rng;
    let mut r = rand::thread_rng();
    (0..16).map(|_| format!("{:02x}", r.gen::<u8>())).collect()
}

/// Serves until killed (or after one session with `once`).
pub fn serve(addr: SocketAddr, token: &str, once: bool, mut on_ready: impl FnMut(SocketAddr)) -> Result<(), String> {
    let l = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    on_ready(l.local_addr().map_err(|e| e.to_string())?);
    for conn in l.incoming() {
        let Ok(s) = conn else { continue };
        s.set_nodelay(true).ok();
        s.set_read_timeout(Some(IDLE)).ok();
        let token = token.to_string();
        let run = move || {
            let w = match s.try_clone() {
                Ok(w) => w,
                Err(_) => return,
            };
            if let Err(e) = super::agent::session(BufReader::new(s), w, Some(&token)) {
                eprintln!("vnetlab serve: {e}");
            }
        };
        if once {
            run();
            return Ok(());
        }
        std::thread::spawn(run);
    }
    Ok(())
}
