//! One desktop's session on its TCP connection, both ends. The engine (the protocol engine in
//! the hypervisor: the lab's host) sends a screen update when the screen changes — the desktop's
//! own activity, or input that changes it — at most at the profile's frame-rate cap, each
//! answering the input it has seen, holding back while too many are unacknowledged, and USB
//! chunks between them; its reader thread takes the client's inputs, acknowledgements and USB
//! and wakes it. The client reads updates (frame delay, input-to-screen latency, late frames)
//! and acknowledges each; its writer thread sends input events and USB at their rates and the
//! acknowledgements as they come.

use hdrhistogram::Histogram;
use std::io::{ErrorKind, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::flows::{Clock, Piece};
use super::intervals::{bucket_of, window};
use super::proto::{StreamReport, VdiReport};
use super::spec::Spec;
use super::vdi::pace::{may_send, Every, InputKind, InputLog, Inputs, Sizes, Ticks, Updates};
use super::vdi::profile::VdiSpec;
use super::vdi::wire::{Msg, Reader};

/// Bytes of one USB bulk chunk (a mass-storage transfer's usual 64 KB).
pub const USB_CHUNK: u32 = 64 << 10;
/// USB chunks at the profile's rate, each way.
fn usb_chunks(v: &VdiSpec) -> Every {
    Every {
        per_s: v.usb_bps as f64 / (f64::from(USB_CHUNK) * 8.0),
    }
}

/// How long a side waits for the next byte before it calls the peer stalled.
fn stall(v: &VdiSpec) -> Duration {
    Duration::from_secs_f64(10.0 + 2.0 / v.activity_fps)
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap()
}

fn pairs(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

fn in_window(clock: &Clock, t: f64) -> bool {
    t >= clock.warmup && t < clock.window_end()
}

/// Writes all of `b`, riding out the write timeout until the clock's hard end.
fn write_fully(s: &mut TcpStream, mut b: &[u8], clock: &Clock) -> std::io::Result<()> {
    while !b.is_empty() {
        match s.write(b) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => b = &b[n..],
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if clock.now() > clock.hard_end() {
                    return Err(ErrorKind::TimedOut.into());
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends a message with `payload` bytes of filler after its header.
fn send(s: &mut TcpStream, m: &Msg, filler: &[u8], clock: &Clock) -> std::io::Result<()> {
    write_fully(s, &m.header(), clock)?;
    let mut left = m.payload() as usize;
    while left > 0 {
        let n = left.min(filler.len());
        write_fully(s, &filler[..n], clock)?;
        left -= n;
    }
    Ok(())
}

fn sleep_until(clock: &Clock, t: f64) {
    let now = clock.now();
    if t > now {
        std::thread::sleep(Duration::from_secs_f64(t - now));
    }
}

/// What the engine's reader learns from the client.
#[derive(Default)]
struct FromClient {
    acked: AtomicU32,
    /// The latest input event of any kind, and the latest that changed the screen.
    inputs: AtomicU32,
    changed: AtomicU32,
    usb_in: AtomicU64,
    input_bytes: AtomicU64,
    error: Mutex<Option<String>>,
    /// The reader thread's own and system CPU, µs.
    user_us: AtomicU64,
    sys_us: AtomicU64,
}

/// A session is interactive whatever `--nodelay` says: its input and acknowledgements are small
/// messages that Nagle's algorithm would hold behind an unacknowledged one until the other end's
/// delayed ACK (up to 40 ms), as remote-display protocols set TCP_NODELAY to avoid. With Nagle on,
/// office's worst input-to-screen read 38.6–40.5 ms in three runs; without, 28.2 ms, inside the
/// 30 fps cap.
fn interactive(s: &TcpStream) {
    s.set_nodelay(true).ok();
}

/// The engine's end of desktop `id`'s session.
pub fn engine(mut s: TcpStream, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let v = spec.vdi.clone().expect("a VDI spec carries its profile");
    interactive(&s);
    let mut p = piece(id, false, &v);
    let (cpu0, t0) = (crate::sys::thread_user_sys_s(), clock.now());
    let heard = Arc::new(FromClient::default());
    // One pending word is enough: the loop reads what changed from `heard`.
    let (wake_tx, wake) = mpsc::sync_channel(1);
    let reader = match s.try_clone() {
        Ok(r) => {
            let (h, v2) = (heard.clone(), v.clone());
            std::thread::spawn(move || {
                let c0 = crate::sys::thread_user_sys_s();
                engine_reader(r, &v2, &h, clock, &wake_tx);
                let c1 = crate::sys::thread_user_sys_s();
                let us = |x: f64| (x * 1e6) as u64;
                h.user_us.store(us(c1.0 - c0.0), Ordering::Relaxed);
                h.sys_us.store(us(c1.1 - c0.1), Ordering::Relaxed);
            })
        }
        Err(e) => {
            p.error = Some(format!("desktop {id}: {e}"));
            return p;
        }
    };
    s.set_write_timeout(Some(Duration::from_millis(100))).ok();
    if let Err(e) = engine_loop(
        &mut s,
        id,
        &v,
        clock,
        &heard,
        &wake,
        p.report.vdi.as_mut().unwrap(),
    ) {
        p.error = Some(format!("desktop {id}: the client went away ({e})"));
    }
    let _ = s.shutdown(Shutdown::Write);
    let _ = reader.join();
    let r = p.report.vdi.as_mut().unwrap();
    let cpu1 = crate::sys::thread_user_sys_s();
    let reader_s = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
    r.engine_user_s = cpu1.0 - cpu0.0 + reader_s(&heard.user_us);
    r.engine_sys_s = cpu1.1 - cpu0.1 + reader_s(&heard.sys_us);
    r.session_s = clock.now() - t0;
    r.usb_in = heard.usb_in.load(Ordering::Relaxed);
    r.bytes_input = heard.input_bytes.load(Ordering::Relaxed);
    if let Some(e) = heard.error.lock().unwrap().take() {
        p.error.get_or_insert(format!("desktop {id}: {e}"));
    }
    p.report.total_bytes = r.bytes_screen + r.usb_out;
    p
}

fn piece(id: u32, receiver: bool, v: &VdiSpec) -> Piece {
    Piece {
        report: StreamReport {
            id,
            receiver,
            vdi: Some(VdiReport {
                target_fps: v.mean_fps(),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whether a change at `t` comes while an update that was already due waits (held back by the
/// client's acknowledgements, or passed while the engine was busy sending): the desktop's own
/// change then gets no update of its own, as an encoder drops a frame it cannot send in time.
fn overdue(updates: &Updates, t: f64) -> bool {
    updates.due_at().is_some_and(|d| d <= t)
}

/// The engine's updates: one leaves as soon as the screen has changed (the desktop's own
/// activity, or input that changes it) and the frame-rate cap and the acknowledgements allow;
/// USB chunks in between. Sleeps until the next change, chunk or the cap, or until the reader
/// says input or an acknowledgement came.
fn engine_loop(
    s: &mut TcpStream,
    id: u32,
    v: &VdiSpec,
    clock: Clock,
    heard: &FromClient,
    wake: &Receiver<()>,
    r: &mut VdiReport,
) -> std::io::Result<()> {
    let ticks = Ticks::for_desktop(v.activity_fps, id);
    let mut sizes = Sizes::new(&v.frame_bytes, id);
    let usb = usb_chunks(v);
    let filler = vec![0x5au8; 256 << 10];
    let mut updates = Updates::new(v.max_fps);
    let (mut k, mut u, mut seq, mut changed_seen) = (0u64, 0u64, 0u32, 0u32);
    let counted = |t: f64| in_window(&clock, t) as u64;
    loop {
        let now = clock.now();
        if now >= clock.window_end() {
            r.due = r.frames + r.skipped;
            return Ok(());
        }
        while ticks.at(k) <= now {
            let t = ticks.at(k);
            r.skipped += counted(t) * u64::from(overdue(&updates, t));
            updates.change(t);
            k += 1;
        }
        let changed = heard.changed.load(Ordering::Relaxed);
        if changed > changed_seen {
            changed_seen = changed;
            updates.change(now);
        }
        let usb_t = usb.at(u).unwrap_or(f64::INFINITY);
        if usb_t <= now {
            u += 1;
            let m = Msg::Usb { len: USB_CHUNK };
            send(s, &m, &filler, &clock)?;
            r.usb_out += counted(usb_t) * m.wire_bytes();
            continue;
        }
        let due = updates.due_at().unwrap_or(f64::INFINITY);
        let acked = heard.acked.load(Ordering::Relaxed);
        if due <= now && may_send(seq + 1, acked, v.max_unacked) {
            seq += 1;
            let m = Msg::Frame {
                seq,
                answers: heard.inputs.load(Ordering::Relaxed),
                sent_ns: crate::sys::monotonic_ns(),
                len: sizes.draw(),
            };
            updates.sent(now);
            send(s, &m, &filler, &clock)?;
            r.frames += counted(now);
            r.bytes_screen += counted(now) * m.wire_bytes();
            continue;
        }
        // Held back by acknowledgements, the update waits for the reader's word, not a time.
        let held = if due <= now { f64::INFINITY } else { due };
        let next = ticks.at(k).min(usb_t).min(held).min(clock.window_end());
        match wake.recv_timeout(Duration::from_secs_f64((next - now).max(0.0))) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            // The reader is gone: the client closed; the window's end still ends the loop.
            Err(RecvTimeoutError::Disconnected) => sleep_until(&clock, next),
        }
    }
}

/// The engine's reader: inputs, acknowledgements and USB from the client, until it closes; it
/// wakes the engine's loop on an acknowledgement and on input that changes the screen.
fn engine_reader(
    s: TcpStream,
    v: &VdiSpec,
    heard: &FromClient,
    clock: Clock,
    wake: &SyncSender<()>,
) {
    s.set_read_timeout(Some(stall(v))).ok();
    let mut rd = Reader::new(std::io::BufReader::with_capacity(64 << 10, s));
    let fail = |e: String| *heard.error.lock().unwrap() = Some(e);
    loop {
        let m = match rd.next_msg() {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => return fail(format!("the client's messages stopped ({e})")),
        };
        let counted = in_window(&clock, clock.now());
        match m {
            Msg::Input { seq, data } => {
                heard.inputs.fetch_max(seq, Ordering::Relaxed);
                if InputKind::of_byte(data[0]).changes_screen() {
                    heard.changed.fetch_max(seq, Ordering::Relaxed);
                    let _ = wake.try_send(());
                }
            }
            Msg::Ack { seq } => {
                heard.acked.fetch_max(seq, Ordering::Relaxed);
                let _ = wake.try_send(());
            }
            Msg::Usb { len } => {
                if let Err(e) = rd.skip(len) {
                    return fail(format!("a USB chunk was cut short ({e})"));
                }
                if counted {
                    heard.usb_in.fetch_add(m.wire_bytes(), Ordering::Relaxed);
                }
                continue;
            }
            Msg::Frame { .. } => return fail("the client sent a frame".into()),
        }
        if counted {
            heard
                .input_bytes
                .fetch_add(m.wire_bytes(), Ordering::Relaxed);
        }
    }
}

/// The client's end of desktop `id`'s session.
pub fn client(s: TcpStream, id: u32, spec: &Spec, clock: Clock) -> Piece {
    let v = spec.vdi.clone().expect("a VDI spec carries its profile");
    interactive(&s);
    let mut p = piece(id, true, &v);
    let (first, last) = window(spec.warmup, spec.duration);
    p.buckets = vec![0; last - first];
    let log = Arc::new(Mutex::new(InputLog::default()));
    let (acks, acks_rx) = mpsc::channel();
    let writer = match s.try_clone() {
        Ok(w) => {
            let (log, v2) = (log.clone(), v.clone());
            std::thread::spawn(move || client_writer(w, id, &v2, clock, &log, acks_rx))
        }
        Err(e) => {
            p.error = Some(format!("desktop {id}: {e}"));
            return p;
        }
    };
    s.set_read_timeout(Some(stall(&v))).ok();
    let mut rd = Reader::new(std::io::BufReader::with_capacity(64 << 10, s));
    let mut frame_delay = hist();
    let mut input_latency = hist();
    let r = p.report.vdi.as_mut().unwrap();
    // An update later than the cap's interval delays the next one.
    let interval_ns = 1e9 / v.max_fps;
    let result = loop {
        let m = match rd.next_msg() {
            Ok(Some(m)) => m,
            Ok(None) => break Ok(()),
            Err(e) => break Err(format!("the engine's messages stopped ({e})")),
        };
        if let Err(e) = rd.skip(m.payload()) {
            break Err(format!("a message was cut short ({e})"));
        }
        let now = clock.now();
        let counted = in_window(&clock, now);
        let b = bucket_of(now);
        if (first..last).contains(&b) {
            p.buckets[b - first] += m.wire_bytes();
        }
        match m {
            Msg::Frame {
                seq,
                answers,
                sent_ns,
                ..
            } => {
                let _ = acks.send(seq);
                // On two machines the engine's clock is this one's less the measured offset.
                let arrived = crate::sys::monotonic_ns() as i128 - spec.clock_offset_ns as i128;
                let delay = (arrived - sent_ns as i128).clamp(1, u64::MAX as i128) as u64;
                let answered = log.lock().unwrap().answered(answers, now);
                if counted {
                    r.frames += 1;
                    r.bytes_screen += m.wire_bytes();
                    r.late += u64::from(delay as f64 > interval_ns);
                    let _ = frame_delay.record(delay);
                    for l in answered {
                        let _ = input_latency.record((l * 1e9).max(1.0) as u64);
                    }
                }
            }
            Msg::Usb { .. } if counted => r.usb_in += m.wire_bytes(),
            Msg::Usb { .. } => {}
            _ => break Err("the engine sent a client's message".into()),
        }
    };
    drop(acks);
    let (bytes_input, usb_out) = writer.join().unwrap_or((0, 0));
    r.bytes_input = bytes_input;
    r.usb_out = usb_out;
    r.frame_delay_ns = pairs(&frame_delay);
    r.input_latency_ns = pairs(&input_latency);
    r.inputs_unanswered = log.lock().unwrap().dropped;
    p.report.window_bytes = r.bytes_screen;
    p.report.total_bytes = r.bytes_screen + r.usb_in;
    p.report.active_s = spec.duration;
    if let Err(e) = result {
        p.error = Some(format!("desktop {id}: {e}"));
    }
    p
}

/// The client's writer: input events and USB at their rates until the window ends, and every
/// acknowledgement until the reader is done. Returns (input and ack bytes, USB bytes) sent
/// inside the window.
fn client_writer(
    mut s: TcpStream,
    id: u32,
    v: &VdiSpec,
    clock: Clock,
    log: &Mutex<InputLog>,
    acks: Receiver<u32>,
) -> (u64, u64) {
    s.set_write_timeout(Some(Duration::from_millis(100))).ok();
    let mut inputs = Inputs::new(v.keyboard_per_s, v.mouse_per_s, v.clicks_per_s, id);
    let usb = usb_chunks(v);
    // Inputs start a little after the session does, out of phase across desktops.
    let offset = Ticks::for_desktop(v.activity_fps, id + 1).phase;
    let filler = vec![0xa5u8; USB_CHUNK as usize];
    let (mut u, mut seq) = (0u64, 0u32);
    let (mut input_bytes, mut usb_bytes) = (0u64, 0u64);
    loop {
        let input = inputs.peek().map(|(t, kind)| (t + offset, kind));
        let in_t = input.map_or(f64::INFINITY, |i| i.0);
        let usb_t = usb.at(u).unwrap_or(f64::INFINITY);
        let next = in_t.min(usb_t);
        let wait = if next < clock.window_end() {
            (next - clock.now()).max(0.0)
        } else {
            clock.hard_end() - clock.now()
        };
        let m = match acks.recv_timeout(Duration::from_secs_f64(wait.max(0.0))) {
            Ok(seq) => Msg::Ack { seq },
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) if next >= clock.window_end() => break,
            Err(RecvTimeoutError::Timeout) if usb_t < in_t => {
                u += 1;
                Msg::Usb { len: USB_CHUNK }
            }
            Err(RecvTimeoutError::Timeout) => {
                let kind = input.map_or(InputKind::Move, |i| i.1);
                inputs.take();
                seq += 1;
                // Only what changes the screen waits for an update to answer it.
                if kind.changes_screen() {
                    log.lock().unwrap().sent(seq, clock.now());
                }
                Msg::Input {
                    seq,
                    data: [kind.byte(), 1, (seq % 256) as u8, 0],
                }
            }
        };
        if send(&mut s, &m, &filler, &clock).is_err() {
            break;
        }
        if in_window(&clock, clock.now()) {
            match m {
                Msg::Usb { .. } => usb_bytes += m.wire_bytes(),
                _ => input_bytes += m.wire_bytes(),
            }
        }
    }
    let _ = s.shutdown(Shutdown::Write);
    (input_bytes, usb_bytes)
}
