//! Process-wide stop requests: SIGINT and SIGTERM (counted, so a second Ctrl-C can skip waiting)
//! and a closed output (the reader of our stdout or stderr went away, as with `| head`). Long
//! commands poll `stop_requested()` and end cleanly: the lab removed, the run marked interrupted.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

static SIGNALS: AtomicUsize = AtomicUsize::new(0);
static OUTPUT_CLOSED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// From now on SIGINT and SIGTERM no longer end the process: they are counted for the command to
/// act on. SIGPIPE stays ignored (Rust's default), so a write to a closed pipe is an error.
pub fn install() {
    INSTALL.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the handler only increments an atomic counter, which is async-signal-safe.
            let r = unsafe {
                signal_hook::low_level::register(sig, || {
                    SIGNALS.fetch_add(1, Ordering::SeqCst);
                })
            };
            if let Err(e) = r {
                crate::errln!("vnetlab: cannot handle signal {sig}: {e}");
            }
        }
    });
}

/// Whether the command should stop: a signal arrived or the output went away.
pub fn stop_requested() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0 || OUTPUT_CLOSED.load(Ordering::SeqCst)
}

/// How many SIGINT/SIGTERM arrived (2 or more: skip waiting, still clean up).
pub fn signals() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}

/// Records that the reader of our output went away (EPIPE): stop, quietly.
pub fn output_closed() {
    OUTPUT_CLOSED.store(true, Ordering::SeqCst);
}

pub fn is_output_closed() -> bool {
    OUTPUT_CLOSED.load(Ordering::SeqCst)
}

/// Counts a stop request as a signal would (for tests and for commands that stop themselves).
pub fn request_stop() {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}
