//! Frames as the device models see them: the 12-byte virtio-net header (little-endian, as tun
//! writes it on x86) and the Ethernet/IPv4/IPv6/TCP headers the LRO coalescer needs, with the
//! Internet checksum. Parsing never panics: anything unexpected is `Err` with the reason.

pub const VNET_HDR_LEN: usize = 12;
pub const ETH_LEN: usize = 14;

pub const F_NEEDS_CSUM: u8 = 1;
pub const F_DATA_VALID: u8 = 2;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
/// UDP segmentation (USO): a super-frame of datagrams of gso_size each.
pub const GSO_UDP_L4: u8 = 5;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
    pub num_buffers: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        if b.len() < VNET_HDR_LEN {
            return None;
        }
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
            num_buffers: u(10),
        })
    }
    pub fn write(&self, out: &mut [u8]) {
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        out[10..12].copy_from_slice(&self.num_buffers.to_le_bytes());
    }
}

/// Adds bytes to a one's-complement sum (big-endian 16-bit words).
pub fn csum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        if sum & 0x8000_0000 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

pub fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The TCP pseudo-header's sum for a segment of `tcp_len` bytes (header + payload).
pub fn pseudo_sum(src: &[u8], dst: &[u8], tcp_len: usize) -> u32 {
    let mut s = csum_add(0, src);
    s = csum_add(s, dst);
    if src.len() == 4 {
        s + 6 + tcp_len as u32
    } else {
        s + 6 + (tcp_len as u32 >> 16) + (tcp_len as u32 & 0xffff)
    }
}

pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;
pub const TCP_URG: u8 = 0x20;
pub const TCP_ECE: u8 = 0x40;
pub const TCP_CWR: u8 = 0x80;

/// A TCP segment inside an Ethernet frame (offsets into the frame, without the vnet header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSeg {
    pub v6: bool,
    pub l4_off: usize,
    pub payload_off: usize,
    pub payload_len: usize,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// IPv4 only: identification and "don't fragment".
    pub ip_id: u16,
    pub df: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotTcp {
    Short,
    NotIp,
    IpOptions,
    Fragment,
    ExtensionHeaders,
    NotTcpProto,
    BadLength,
}

impl TcpSeg {
    /// The IP source and destination address bytes.
    pub fn addrs<'a>(&self, f: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        if self.v6 {
            (
                &f[ETH_LEN + 8..ETH_LEN + 24],
                &f[ETH_LEN + 24..ETH_LEN + 40],
            )
        } else {
            (
                &f[ETH_LEN + 12..ETH_LEN + 16],
                &f[ETH_LEN + 16..ETH_LEN + 20],
            )
        }
    }
    pub fn ports<'a>(&self, f: &'a [u8]) -> &'a [u8] {
        &f[self.l4_off..self.l4_off + 4]
    }
    pub fn tcp_options<'a>(&self, f: &'a [u8]) -> &'a [u8] {
        &f[self.l4_off + 20..self.payload_off]
    }
    pub fn header_len(&self) -> usize {
        self.payload_off
    }
}

/// Parses Ethernet + IPv4 (no options, not fragmented) or IPv6 (no extension headers) + TCP.
pub fn parse_tcp(f: &[u8]) -> Result<TcpSeg, NotTcp> {
    if f.len() < ETH_LEN + 20 {
        return Err(NotTcp::Short);
    }
    let ethertype = u16::from_be_bytes([f[12], f[13]]);
    let ip = &f[ETH_LEN..];
    let (v6, l4_off, ip_end, ip_id, df) = match ethertype {
        0x0800 => {
            if ip[0] >> 4 != 4 {
                return Err(NotTcp::NotIp);
            }
            if ip[0] & 0x0f != 5 {
                return Err(NotTcp::IpOptions);
            }
            let frag = u16::from_be_bytes([ip[6], ip[7]]);
            if frag & 0x3fff != 0 {
                return Err(NotTcp::Fragment);
            }
            if ip[9] != 6 {
                return Err(NotTcp::NotTcpProto);
            }
            let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            if total < 40 || ETH_LEN + total > f.len() {
                return Err(NotTcp::BadLength);
            }
            (
                false,
                ETH_LEN + 20,
                ETH_LEN + total,
                u16::from_be_bytes([ip[4], ip[5]]),
                frag & 0x4000 != 0,
            )
        }
        0x86dd => {
            if f.len() < ETH_LEN + 40 + 20 {
                return Err(NotTcp::Short);
            }
            if ip[0] >> 4 != 6 {
                return Err(NotTcp::NotIp);
            }
            if ip[6] != 6 {
                return Err(NotTcp::ExtensionHeaders);
            }
            let plen = u16::from_be_bytes([ip[4], ip[5]]) as usize;
            if plen < 20 || ETH_LEN + 40 + plen > f.len() {
                return Err(NotTcp::BadLength);
            }
            (true, ETH_LEN + 40, ETH_LEN + 40 + plen, 0, false)
        }
        _ => return Err(NotTcp::NotIp),
    };
    if f.len() < l4_off + 20 {
        return Err(NotTcp::Short);
    }
    let t = &f[l4_off..];
    let doff = (t[12] >> 4) as usize * 4;
    if doff < 20 || l4_off + doff > ip_end {
        return Err(NotTcp::BadLength);
    }
    Ok(TcpSeg {
        v6,
        l4_off,
        payload_off: l4_off + doff,
        payload_len: ip_end - l4_off - doff,
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: t[13],
        window: u16::from_be_bytes([t[14], t[15]]),
        ip_id,
        df,
    })
}

/// Whether the segment's TCP checksum (and IPv4 header checksum) is right.
pub fn checksums_ok(f: &[u8], s: &TcpSeg) -> bool {
    if !s.v6 && fold(csum_add(0, &f[ETH_LEN..ETH_LEN + 20])) != 0xffff {
        return false;
    }
    let (src, dst) = s.addrs(f);
    let end = s.payload_off + s.payload_len;
    let tcp_len = end - s.l4_off;
    fold(csum_add(pseudo_sum(src, dst, tcp_len), &f[s.l4_off..end])) == 0xffff
}

/// Computes and writes the IPv4 header checksum.
pub fn set_ipv4_checksum(f: &mut [u8]) {
    f[ETH_LEN + 10] = 0;
    f[ETH_LEN + 11] = 0;
    let c = !fold(csum_add(0, &f[ETH_LEN..ETH_LEN + 20]));
    f[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
pub mod build {
    //! Builds test frames.
    use super::*;

    pub struct Seg {
        pub v6: bool,
        pub seq: u32,
        pub ack: u32,
        pub flags: u8,
        pub window: u16,
        pub options: Vec<u8>,
        pub payload: Vec<u8>,
        pub ip_id: u16,
        pub sport: u16,
    }

    impl Default for Seg {
        fn default() -> Self {
            Seg {
                v6: false,
                seq: 1000,
                ack: 77,
                flags: TCP_ACK,
                window: 500,
                options: vec![],
                payload: vec![0xab; 100],
                ip_id: 1,
                sport: 5001,
            }
        }
    }

    /// An Ethernet frame with correct checksums.
    pub fn frame(s: &Seg) -> Vec<u8> {
        let tcp_len = 20 + s.options.len() + s.payload.len();
        let mut f = vec![0u8; ETH_LEN];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        let (src, dst): (Vec<u8>, Vec<u8>) = if s.v6 {
            f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
            let mut ip = vec![0x60, 0, 0, 0];
            ip.extend_from_slice(&(tcp_len as u16).to_be_bytes());
            ip.extend_from_slice(&[6, 64]);
            let src = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
            let dst = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
            ip.extend_from_slice(&src);
            ip.extend_from_slice(&dst);
            f.extend_from_slice(&ip);
            (src.to_vec(), dst.to_vec())
        } else {
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            let mut ip = vec![0x45, 0];
            ip.extend_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
            ip.extend_from_slice(&s.ip_id.to_be_bytes());
            ip.extend_from_slice(&[0x40, 0, 64, 6, 0, 0, 10, 213, 0, 2, 10, 213, 0, 3]);
            f.extend_from_slice(&ip);
            set_ipv4_checksum(&mut f);
            (vec![10, 213, 0, 2], vec![10, 213, 0, 3])
        };
        let l4 = f.len();
        f.extend_from_slice(&s.sport.to_be_bytes());
        f.extend_from_slice(&80u16.to_be_bytes());
        f.extend_from_slice(&s.seq.to_be_bytes());
        f.extend_from_slice(&s.ack.to_be_bytes());
        f.push((((20 + s.options.len()) / 4) as u8) << 4);
        f.push(s.flags);
        f.extend_from_slice(&s.window.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(&s.options);
        f.extend_from_slice(&s.payload);
        let c = !fold(csum_add(pseudo_sum(&src, &dst, tcp_len), &f[l4..]));
        f[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
        f
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;

    #[test]
    fn parses_ipv4_and_ipv6_tcp() {
        let f = frame(&Seg {
            options: vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            ..Default::default()
        });
        let s = parse_tcp(&f).unwrap();
        assert_eq!(
            (s.v6, s.seq, s.ack, s.payload_len, s.window),
            (false, 1000, 77, 100, 500)
        );
        assert_eq!(s.tcp_options(&f).len(), 12);
        assert!(checksums_ok(&f, &s));
        let f6 = frame(&Seg {
            v6: true,
            ..Default::default()
        });
        let s6 = parse_tcp(&f6).unwrap();
        assert!(s6.v6 && s6.payload_len == 100 && checksums_ok(&f6, &s6));
    }

    #[test]
    fn refuses_what_lro_must_not_touch() {
        let mut f = frame(&Seg::default());
        f[ETH_LEN] = 0x46;
        assert_eq!(parse_tcp(&f), Err(NotTcp::IpOptions));
        let mut f = frame(&Seg::default());
        f[ETH_LEN + 6] = 0x20; // more fragments
        assert_eq!(parse_tcp(&f), Err(NotTcp::Fragment));
        let mut f = frame(&Seg::default());
        f[ETH_LEN + 9] = 17;
        assert_eq!(parse_tcp(&f), Err(NotTcp::NotTcpProto));
        assert_eq!(parse_tcp(&[0u8; 20]), Err(NotTcp::Short));
        let mut f = frame(&Seg::default());
        f[ETH_LEN + 2] = 0xff; // total length past the frame
        assert_eq!(parse_tcp(&f), Err(NotTcp::BadLength));
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let mut f = frame(&Seg::default());
        let n = f.len();
        f[n - 1] ^= 1;
        let s = parse_tcp(&f).unwrap();
        assert!(!checksums_ok(&f, &s));
    }

    #[test]
    fn vnet_header_round_trips() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 54,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
            num_buffers: 0,
        };
        let mut b = [0u8; 12];
        h.write(&mut b);
        assert_eq!(VnetHdr::parse(&b), Some(h));
        assert_eq!(VnetHdr::parse(&b[..5]), None);
    }
}
