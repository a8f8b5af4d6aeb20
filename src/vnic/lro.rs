//! Software LRO toward the guest (paper 2's "LRO in the virtual driver"): consecutive TCP
//! segments of one flow are merged into one super-frame, written to the guest's tap with the
//! virtio-net header's GSO fields so the guest stack takes it whole. Merges only what Linux GRO
//! would: same flow, ACK, window and TCP options; contiguous sequence; equal-size segments (a
//! shorter one ends the train); no SYN/RST/URG/CWR/ECE/FIN; IPv4 without options and with a
//! steady TTL/TOS and an incrementing or fixed ID. Each segment's checksum is verified first
//! (unless the kernel marked it partial or valid). Flushes on PSH and FIN, at 64 KB, and at the
//! end of each batch.

use serde::Serialize;
use std::collections::BTreeMap;

use super::frame::{
    self, TcpSeg, VnetHdr, ETH_LEN, F_DATA_VALID, F_NEEDS_CSUM, GSO_NONE, GSO_TCPV4, GSO_TCPV6,
    VNET_HDR_LEN,
};

const MAX_FLOWS: usize = 8;
/// The largest IP packet a super-frame may carry.
const MAX_IP: usize = 65535;

/// Why a held train of segments was written out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flush {
    Psh,
    Flags,
    SizeLimit,
    BatchEnd,
    OutOfOrder,
    Mismatch,
    ShortSegment,
    PureAck,
    BadChecksum,
    TableFull,
    GsoInput,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct LroStats {
    pub frames_in: u64,
    pub frames_out: u64,
    /// TCP data segments that came in, and the buffers they left in (merged or not).
    pub segments_in: u64,
    pub buffers_out: u64,
    /// Buffers holding two or more segments.
    pub superframes_out: u64,
    pub bad_checksum: u64,
    /// Buffers by segments merged, counted per bucket of `BUCKETS` (no allocation per frame).
    pub merge_hist: [u64; BUCKETS.len()],
    pub flush_reasons: BTreeMap<Flush, u64>,
}

impl Flush {
    /// The reason's name as results show it.
    pub fn name(self) -> &'static str {
        match self {
            Flush::Psh => "psh",
            Flush::Flags => "flags",
            Flush::SizeLimit => "size_limit",
            Flush::BatchEnd => "batch_end",
            Flush::OutOfOrder => "out_of_order",
            Flush::Mismatch => "mismatch",
            Flush::ShortSegment => "short_segment",
            Flush::PureAck => "pure_ack",
            Flush::BadChecksum => "bad_checksum",
            Flush::TableFull => "table_full",
            Flush::GsoInput => "gso_input",
        }
    }
}

impl LroStats {
    /// Paper 2's LRO ratio: average segments merged per buffer.
    pub fn ratio(&self) -> f64 {
        if self.buffers_out == 0 {
            0.0
        } else {
            self.segments_in as f64 / self.buffers_out as f64
        }
    }
}

/// Segments per buffer, as results name the histogram's buckets.
pub const BUCKETS: [&str; 7] = ["1", "2", "3-4", "5-8", "9-16", "17-32", "33+"];

fn bucket(n: u32) -> usize {
    match n {
        0 | 1 => 0,
        2 => 1,
        3..=4 => 2,
        5..=8 => 3,
        9..=16 => 4,
        17..=32 => 5,
        _ => 6,
    }
}

impl LroStats {
    /// The merge histogram by bucket name, for results.
    pub fn merge_hist_named(&self) -> BTreeMap<String, u64> {
        BUCKETS
            .iter()
            .zip(self.merge_hist)
            .filter(|(_, n)| *n > 0)
            .map(|(b, n)| (b.to_string(), n))
            .collect()
    }
}

/// The most spare buffers the pool keeps (the held flows and a batch's worth out).
const POOL_MAX: usize = 2 * MAX_FLOWS + 64;
/// A buffer's room: a vnet header, an Ethernet frame and a full 64 KB IP packet.
const BUF_CAP: usize = VNET_HDR_LEN + ETH_LEN + 40 + 60 + 65536;

struct Held {
    /// vnet header + Ethernet frame, payload appended as segments merge.
    buf: Vec<u8>,
    hdr: VnetHdr,
    seg: TcpSeg,
    key: FlowKey,
    next_seq: u32,
    mss: usize,
    count: u32,
    last_id: u16,
    /// A shorter segment ended the train.
    closed: bool,
}

pub struct Lro {
    held: Vec<Held>,
    /// Buffers the backend has written and handed back: reused, so no frame allocates.
    pool: Vec<Vec<u8>>,
    pub stats: LroStats,
}

/// Flow key: addresses and ports (IPv6: 16 + 16 + 4 bytes), built without allocating.
type FlowKey = [u8; 36];

fn key(f: &[u8], s: &TcpSeg) -> FlowKey {
    let (a, b) = s.addrs(f);
    let mut k = [0u8; 36];
    k[..a.len()].copy_from_slice(a);
    k[16..16 + b.len()].copy_from_slice(b);
    k[32..].copy_from_slice(s.ports(f));
    k
}

impl Default for Lro {
    fn default() -> Self {
        Lro {
            held: Vec::with_capacity(MAX_FLOWS),
            pool: Vec::with_capacity(POOL_MAX),
            stats: LroStats::default(),
        }
    }
}

impl Lro {
    /// Takes one frame (vnet header + Ethernet frame) from the host side; merged or passed-through
    /// frames ready for the guest are appended to `out`.
    pub fn push(&mut self, pkt: &[u8], out: &mut Vec<Vec<u8>>) {
        self.stats.frames_in += 1;
        let Some(hdr) = VnetHdr::parse(pkt) else {
            return self.pass(pkt, out);
        };
        let f = &pkt[VNET_HDR_LEN..];
        let seg = match frame::parse_tcp(f) {
            Ok(s) => s,
            Err(_) => return self.pass(pkt, out),
        };
        let k = key(f, &seg);
        let slot = self.held.iter().position(|h| h.key == k);
        if hdr.gso_type != GSO_NONE {
            self.flush_slot(slot, Flush::GsoInput, out);
            return self.pass(pkt, out);
        }
        if seg.payload_len == 0 {
            self.flush_slot(slot, Flush::PureAck, out);
            return self.pass(pkt, out);
        }
        self.stats.segments_in += 1;
        if seg.flags & !(frame::TCP_ACK | frame::TCP_PSH) != 0 || seg.flags & frame::TCP_ACK == 0 {
            self.flush_slot(slot, Flush::Flags, out);
            return self.pass_data(pkt, out);
        }
        let trusted = hdr.flags & (F_NEEDS_CSUM | F_DATA_VALID) != 0;
        if !trusted && !frame::checksums_ok(f, &seg) {
            self.stats.bad_checksum += 1;
            self.flush_slot(slot, Flush::BadChecksum, out);
            return self.pass_data(pkt, out);
        }
        if let Some(i) = slot {
            match self.can_merge(i, f, &seg) {
                Ok(()) => {
                    self.append(i, f, &seg);
                    if seg.flags & frame::TCP_PSH != 0 {
                        self.flush_slot(Some(i), Flush::Psh, out);
                    }
                    return;
                }
                Err(reason) => self.flush_slot(Some(i), reason, out),
            }
        }
        if seg.flags & frame::TCP_PSH != 0 {
            // Nothing to merge with and the sender wants it delivered now.
            self.stats
                .flush_reasons
                .entry(Flush::Psh)
                .and_modify(|c| *c += 1)
                .or_insert(1);
            return self.pass_data(pkt, out);
        }
        if self.held.len() == MAX_FLOWS {
            self.flush_slot(Some(0), Flush::TableFull, out);
        }
        let buf = self.buffer_with(pkt);
        self.held.push(Held {
            buf,
            hdr,
            seg,
            key: k,
            next_seq: seg.seq.wrapping_add(seg.payload_len as u32),
            mss: seg.payload_len,
            count: 1,
            last_id: seg.ip_id,
            closed: false,
        });
    }

    fn can_merge(&self, i: usize, f: &[u8], s: &TcpSeg) -> Result<(), Flush> {
        let h = &self.held[i];
        let hf = &h.buf[VNET_HDR_LEN..];
        if s.seq != h.next_seq {
            return Err(Flush::OutOfOrder);
        }
        if h.closed {
            return Err(Flush::ShortSegment);
        }
        if s.v6 != h.seg.v6
            || s.ack != h.seg.ack
            || s.window != h.seg.window
            || s.tcp_options(f) != h.seg.tcp_options(hf)
        {
            return Err(Flush::Mismatch);
        }
        if !s.v6 {
            let (ip, hip) = (&f[ETH_LEN..], &hf[ETH_LEN..]);
            // TOS and TTL steady; the ID increments (or is fixed, with DF).
            if ip[1] != hip[1] || ip[8] != hip[8] || s.df != h.seg.df {
                return Err(Flush::Mismatch);
            }
            if s.ip_id != h.last_id.wrapping_add(1) && !(s.df && s.ip_id == h.last_id) {
                return Err(Flush::Mismatch);
            }
        }
        if s.payload_len > h.mss {
            return Err(Flush::Mismatch);
        }
        let ip_len = h.buf.len() - VNET_HDR_LEN - ETH_LEN + s.payload_len;
        if ip_len > MAX_IP {
            return Err(Flush::SizeLimit);
        }
        Ok(())
    }

    fn append(&mut self, i: usize, f: &[u8], s: &TcpSeg) {
        let h = &mut self.held[i];
        h.buf
            .extend_from_slice(&f[s.payload_off..s.payload_off + s.payload_len]);
        h.next_seq = h.next_seq.wrapping_add(s.payload_len as u32);
        h.count += 1;
        h.last_id = s.ip_id;
        if s.payload_len < h.mss {
            h.closed = true;
        }
        if s.flags & frame::TCP_PSH != 0 {
            let off = VNET_HDR_LEN + h.seg.l4_off + 13;
            h.buf[off] |= frame::TCP_PSH;
        }
    }

    fn pass(&mut self, pkt: &[u8], out: &mut Vec<Vec<u8>>) {
        self.stats.frames_out += 1;
        let b = self.buffer_with(pkt);
        out.push(b);
    }

    /// A pooled buffer (or a new one while the pool fills) holding a copy of `pkt`.
    fn buffer_with(&mut self, pkt: &[u8]) -> Vec<u8> {
        let mut b = self
            .pool
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BUF_CAP));
        b.clear();
        b.extend_from_slice(pkt);
        b
    }

    /// Hands a buffer from `out` back once it has been written, for reuse.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        if self.pool.len() < POOL_MAX && buf.capacity() >= BUF_CAP {
            self.pool.push(buf);
        }
    }

    fn pass_data(&mut self, pkt: &[u8], out: &mut Vec<Vec<u8>>) {
        self.stats.buffers_out += 1;
        self.stats.merge_hist[bucket(1)] += 1;
        self.pass(pkt, out);
    }

    fn flush_slot(&mut self, slot: Option<usize>, reason: Flush, out: &mut Vec<Vec<u8>>) {
        let Some(i) = slot else { return };
        let h = self.held.remove(i);
        *self.stats.flush_reasons.entry(reason).or_insert(0) += 1;
        self.stats.buffers_out += 1;
        self.stats.frames_out += 1;
        self.stats.merge_hist[bucket(h.count)] += 1;
        if h.count == 1 {
            out.push(h.buf);
            return;
        }
        self.stats.superframes_out += 1;
        out.push(finish(h));
    }

    /// End of a batch: everything held goes out.
    pub fn flush_all(&mut self, out: &mut Vec<Vec<u8>>) {
        while !self.held.is_empty() {
            self.flush_slot(Some(0), Flush::BatchEnd, out);
        }
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// Fixes the merged frame's lengths and checksums and writes its GSO header.
fn finish(h: Held) -> Vec<u8> {
    let mut buf = h.buf;
    let s = h.seg;
    let f = &mut buf[VNET_HDR_LEN..];
    let ip_len = f.len() - ETH_LEN;
    let tcp_len = f.len() - s.l4_off;
    if s.v6 {
        f[ETH_LEN + 4..ETH_LEN + 6].copy_from_slice(&((ip_len - 40) as u16).to_be_bytes());
    } else {
        f[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&(ip_len as u16).to_be_bytes());
        frame::set_ipv4_checksum(f);
    }
    // CHECKSUM_PARTIAL: the field holds the pseudo-header sum; the guest finishes it.
    let (src, dst) = s.addrs(f);
    let seed = frame::fold(frame::pseudo_sum(src, dst, tcp_len));
    f[s.l4_off + 16..s.l4_off + 18].copy_from_slice(&seed.to_be_bytes());
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if s.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: s.header_len() as u16,
        gso_size: h.mss as u16,
        csum_start: s.l4_off as u16,
        csum_offset: 16,
        num_buffers: h.hdr.num_buffers,
    };
    hdr.write(&mut buf[..VNET_HDR_LEN]);
    buf
}

#[cfg(test)]
mod tests {
    use super::super::frame::build::{frame, Seg};
    use super::*;

    fn pkt(s: &Seg) -> Vec<u8> {
        let mut p = vec![0u8; VNET_HDR_LEN];
        p.extend(frame(s));
        p
    }

    fn train(v6: bool, n: u32, len: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                pkt(&Seg {
                    v6,
                    seq: 1000 + i * len as u32,
                    ip_id: 1 + i as u16,
                    payload: (0..len).map(|b| (b as u32 + i) as u8).collect(),
                    ..Default::default()
                })
            })
            .collect()
    }

    /// Completes a partial checksum as a NIC (or the guest stack) would, and checks it.
    fn completed_checksum_ok(p: &[u8]) -> bool {
        let h = VnetHdr::parse(p).unwrap();
        let f = &p[VNET_HDR_LEN..];
        let start = h.csum_start as usize;
        let sum = frame::csum_add(0, &f[start..]);
        let mut g = f.to_vec();
        let c = !frame::fold(sum);
        g[start + h.csum_offset as usize..start + h.csum_offset as usize + 2]
            .copy_from_slice(&c.to_be_bytes());
        let s = frame::parse_tcp(&g).unwrap();
        frame::checksums_ok(&g, &s)
    }

    fn coalesce_all(frames: &[Vec<u8>]) -> (Lro, Vec<Vec<u8>>) {
        let mut l = Lro::default();
        let mut out = Vec::new();
        for f in frames {
            l.push(f, &mut out);
        }
        l.flush_all(&mut out);
        (l, out)
    }

    #[test]
    fn in_order_segments_merge_into_one_gso_frame_v4_and_v6() {
        for v6 in [false, true] {
            let (l, out) = coalesce_all(&train(v6, 10, 1448));
            assert_eq!(out.len(), 1, "v6={v6}");
            let h = VnetHdr::parse(&out[0]).unwrap();
            assert_eq!(h.gso_type, if v6 { GSO_TCPV6 } else { GSO_TCPV4 });
            assert_eq!(
                (h.gso_size, h.flags, h.csum_offset),
                (1448, F_NEEDS_CSUM, 16)
            );
            let f = &out[0][VNET_HDR_LEN..];
            let s = frame::parse_tcp(f).unwrap();
            assert_eq!((s.seq, s.payload_len), (1000, 14480));
            assert_eq!(h.hdr_len as usize, s.header_len());
            assert_eq!(h.csum_start as usize, s.l4_off);
            // The IPv4 header checksum is right; the TCP field holds the pseudo-header sum.
            if !v6 {
                assert_eq!(
                    frame::fold(frame::csum_add(0, &f[ETH_LEN..ETH_LEN + 20])),
                    0xffff
                );
            }
            let (src, dst) = s.addrs(f);
            let seed = frame::fold(frame::pseudo_sum(src, dst, f.len() - s.l4_off));
            assert_eq!(&f[s.l4_off + 16..s.l4_off + 18], &seed.to_be_bytes());
            assert!(completed_checksum_ok(&out[0]));
            // The payload is the ten segments' payloads in order.
            let want: Vec<u8> = (0..10u32)
                .flat_map(|i| (0..1448usize).map(move |b| (b as u32 + i) as u8))
                .collect();
            assert_eq!(&f[s.payload_off..], &want[..]);
            assert_eq!(l.stats.ratio(), 10.0);
            assert_eq!(l.stats.flush_reasons[&Flush::BatchEnd], 1);
        }
    }

    #[test]
    fn out_of_order_and_retransmissions_are_not_merged() {
        let mut t = train(false, 4, 100);
        t.swap(1, 2); // 0, 2, 1, 3
        let (l, out) = coalesce_all(&t);
        assert!(out.len() >= 3, "{}", out.len());
        assert!(l.stats.flush_reasons[&Flush::OutOfOrder] >= 1);
        let mut t = train(false, 3, 100);
        t.insert(2, t[1].clone()); // a retransmission of segment 1
        let (l, _) = coalesce_all(&t);
        assert!(l.stats.flush_reasons[&Flush::OutOfOrder] >= 1);
        // Every byte still goes out exactly once per segment given.
        assert_eq!(l.stats.segments_in, 4);
    }

    #[test]
    fn control_flags_are_never_merged() {
        for flag in [
            frame::TCP_SYN,
            frame::TCP_FIN,
            frame::TCP_RST,
            frame::TCP_URG,
            frame::TCP_CWR,
            frame::TCP_ECE,
        ] {
            let mut t = train(false, 3, 100);
            t.push(pkt(&Seg {
                seq: 1300,
                ip_id: 4,
                flags: frame::TCP_ACK | flag,
                ..Default::default()
            }));
            let (l, out) = coalesce_all(&t);
            assert_eq!(out.len(), 2, "flag {flag:#x}");
            assert_eq!(l.stats.flush_reasons[&Flush::Flags], 1);
            let last = frame::parse_tcp(&out[1][VNET_HDR_LEN..]).unwrap();
            assert!(last.flags & flag != 0);
        }
    }

    #[test]
    fn psh_ends_the_train_with_it() {
        let mut t = train(false, 3, 100);
        t.push(pkt(&Seg {
            seq: 1300,
            ip_id: 4,
            flags: frame::TCP_ACK | frame::TCP_PSH,
            payload: vec![1; 100],
            ..Default::default()
        }));
        t.extend(train(false, 1, 100).into_iter().map(|_| {
            pkt(&Seg {
                seq: 1400,
                ip_id: 5,
                ..Default::default()
            })
        }));
        let (l, out) = coalesce_all(&t);
        assert_eq!(out.len(), 2);
        let s = frame::parse_tcp(&out[0][VNET_HDR_LEN..]).unwrap();
        assert_eq!(s.payload_len, 400);
        assert!(s.flags & frame::TCP_PSH != 0);
        assert_eq!(l.stats.flush_reasons[&Flush::Psh], 1);
    }

    #[test]
    fn option_window_and_ack_changes_start_a_new_buffer() {
        for change in 0..3 {
            let mut t = train(false, 2, 100);
            let mut s = Seg {
                seq: 1200,
                ip_id: 3,
                ..Default::default()
            };
            match change {
                0 => s.window = 501,
                1 => s.ack = 78,
                _ => {
                    s.options = vec![1, 1, 1, 1];
                }
            }
            t.push(pkt(&s));
            let (l, out) = coalesce_all(&t);
            assert_eq!(out.len(), 2, "change {change}");
            assert_eq!(l.stats.flush_reasons[&Flush::Mismatch], 1);
        }
    }

    #[test]
    fn a_bad_checksum_is_not_merged_but_passed_on() {
        let mut t = train(false, 3, 100);
        let n = t[1].len();
        t[1][n - 1] ^= 0xff;
        let (l, out) = coalesce_all(&t);
        assert_eq!(l.stats.bad_checksum, 1);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1], t[1], "passed on untouched for the guest to drop");
    }

    #[test]
    fn trains_stop_at_64k_and_after_a_short_segment() {
        let (l, out) = coalesce_all(&train(false, 60, 1448));
        assert!(out.len() >= 2);
        for o in &out {
            assert!(o.len() - VNET_HDR_LEN - ETH_LEN <= MAX_IP);
        }
        assert!(l.stats.flush_reasons[&Flush::SizeLimit] >= 1);
        let mut t = train(false, 2, 100);
        t.push(pkt(&Seg {
            seq: 1200,
            ip_id: 3,
            payload: vec![7; 50],
            ..Default::default()
        }));
        t.push(pkt(&Seg {
            seq: 1250,
            ip_id: 4,
            payload: vec![7; 100],
            ..Default::default()
        }));
        let (l, out) = coalesce_all(&t);
        assert_eq!(out.len(), 2);
        assert_eq!(l.stats.flush_reasons[&Flush::ShortSegment], 1);
    }

    #[test]
    fn other_traffic_and_gso_frames_pass_through() {
        let mut not_tcp = vec![0u8; VNET_HDR_LEN + 60];
        not_tcp[VNET_HDR_LEN + 12] = 0x08;
        not_tcp[VNET_HDR_LEN + 13] = 0x06; // ARP
        let mut gso = pkt(&Seg::default());
        gso[1] = GSO_TCPV4;
        let (l, out) = coalesce_all(&[not_tcp.clone(), gso.clone(), vec![1, 2, 3]]);
        assert_eq!(out, vec![not_tcp, gso, vec![1, 2, 3]]);
        assert_eq!(l.stats.segments_in, 0);
    }

    #[test]
    fn flows_are_kept_apart() {
        let mut t = Vec::new();
        for i in 0..4u32 {
            for port in [5001u16, 5002] {
                t.push(pkt(&Seg {
                    seq: 1000 + i * 100,
                    ip_id: 1 + i as u16,
                    sport: port,
                    ..Default::default()
                }));
            }
        }
        let (l, out) = coalesce_all(&t);
        assert_eq!(out.len(), 2);
        assert_eq!(l.stats.ratio(), 4.0);
    }
}
