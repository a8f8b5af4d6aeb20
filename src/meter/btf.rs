//! Reads the kernel's own description of its types (BTF, `/sys/kernel/btf/vmlinux`) for the one
//! thing the softirq tracer needs from it: the byte offset of a field inside a kernel struct
//! (`sk_buff.dev`, `net_device.name`, …), which differs between kernel builds. Fields inside
//! anonymous structs and unions are found through them, as C finds them.

use super::error::Error;

/// The most BTF read (a distribution kernel's is about 6 MB).
pub const MAX_BYTES: u64 = 64 << 20;

const MAGIC: u16 = 0xeb9f;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_TYPE_TAG: u32 = 18;

/// One type record: its name, kind, and for a struct or union its members (name, type id, bit
/// offset); for a modifier or typedef the type it names.
#[derive(Clone, Debug, Default)]
struct Type {
    name: u32,
    kind: u32,
    to: u32,
    members: Vec<(u32, u32, u32)>,
}

/// A parsed BTF blob: its types (id 1 is `types[1]`) and its string section.
pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
}

fn bad(what: &str) -> Error {
    Error::Unsupported(format!("kernel BTF: {what}"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, Error> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated"))
}

/// Bytes that follow a type record's 12-byte head, by kind (linux/btf.h).
fn trailer(kind: u32, vlen: usize) -> Result<usize, Error> {
    Ok(match kind {
        1 | 14 | 17 => 4,
        3 => 12,
        4 | 5 | 15 | 19 => 12 * vlen,
        6 | 13 => 8 * vlen,
        2 | 7..=12 | 16 | 18 => 0,
        k => return Err(bad(&format!("unknown type kind {k}"))),
    })
}

impl Btf {
    /// Parses a little-endian BTF blob (the kernel writes its own byte order; vnetlab's hosts are
    /// little-endian).
    pub fn parse(b: &[u8]) -> Result<Btf, Error> {
        if b.len() < 24 || u16::from_le_bytes([b[0], b[1]]) != MAGIC {
            return Err(bad("no BTF header"));
        }
        let hdr = u32_at(b, 4)? as usize;
        let (toff, tlen) = (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize);
        let (soff, slen) = (u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let section = |off: usize, len: usize| {
            hdr.checked_add(off)
                .and_then(|s| Some((s, s.checked_add(len)?)))
                .and_then(|(s, e)| b.get(s..e))
                .ok_or_else(|| bad("a section lies past the end"))
        };
        let (types, strings) = (section(toff, tlen)?, section(soff, slen)?);
        Ok(Btf {
            types: Self::records(types)?,
            strings: strings.to_vec(),
        })
    }

    fn records(t: &[u8]) -> Result<Vec<Type>, Error> {
        let mut out = vec![Type::default()];
        let mut at = 0;
        while at < t.len() {
            let (name, info, to) = (u32_at(t, at)?, u32_at(t, at + 4)?, u32_at(t, at + 8)?);
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let bitfield = info >> 31 == 1;
            let mut ty = Type {
                name,
                kind,
                to,
                members: Vec::new(),
            };
            at += 12;
            if kind == KIND_STRUCT || kind == KIND_UNION {
                for m in 0..vlen {
                    let p = at + 12 * m;
                    let off = u32_at(t, p + 8)?;
                    let bits = if bitfield { off & 0xff_ffff } else { off };
                    ty.members.push((u32_at(t, p)?, u32_at(t, p + 4)?, bits));
                }
            }
            at += trailer(kind, vlen)?;
            out.push(ty);
        }
        Ok(out)
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = self.strings.get(off as usize..).unwrap_or_default();
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    }

    /// The struct or union a type id names, through typedefs and qualifiers.
    fn resolve(&self, mut id: u32) -> Option<&Type> {
        for _ in 0..32 {
            let t = self.types.get(id as usize)?;
            match t.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.to
                }
                KIND_STRUCT | KIND_UNION => return Some(t),
                _ => return None,
            }
        }
        None
    }

    /// The bit offset of `field` in `t`, looking inside anonymous members.
    fn member(&self, t: &Type, field: &str, depth: u32) -> Option<(u32, u32)> {
        if depth > 8 {
            return None;
        }
        for &(name, ty, bits) in &t.members {
            if self.name(name) == field.as_bytes() {
                return Some((bits, ty));
            }
            if name == 0 {
                let inner = self.resolve(ty)?;
                if let Some((b, t)) = self.member(inner, field, depth + 1) {
                    return Some((bits + b, t));
                }
            }
        }
        None
    }

    /// The byte offset of `path` (fields, each inside the one before) in struct `name`.
    pub fn offset(&self, name: &str, path: &[&str]) -> Result<u32, Error> {
        let whole = || format!("{name}.{}", path.join("."));
        let mut t = self
            .types
            .iter()
            .find(|t| {
                t.kind == KIND_STRUCT
                    && !t.members.is_empty()
                    && self.name(t.name) == name.as_bytes()
            })
            .ok_or_else(|| bad(&format!("no struct {name}")))?;
        let mut bits = 0;
        for (i, f) in path.iter().enumerate() {
            let (b, ty) = self
                .member(t, f, 0)
                .ok_or_else(|| bad(&format!("no field {}", whole())))?;
            bits += b;
            if i + 1 < path.len() {
                t = self
                    .resolve(ty)
                    .ok_or_else(|| bad(&format!("{f} of {} is not a struct", whole())))?;
            }
        }
        if bits % 8 != 0 {
            return Err(bad(&format!("{} is a bit field", whole())));
        }
        Ok(bits / 8)
    }

    /// The running kernel's BTF.
    pub fn this_kernel() -> Result<Btf, Error> {
        let path = std::path::Path::new("/sys/kernel/btf/vmlinux");
        let why = |e: &dyn std::fmt::Display| {
            bad(&format!(
                "{}: {e} (a kernel built without CONFIG_DEBUG_INFO_BTF has none)",
                path.display()
            ))
        };
        let mut b = Vec::new();
        let f = std::fs::File::open(path).map_err(|e| why(&e))?;
        std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_BYTES + 1), &mut b)
            .map_err(|e| why(&e))?;
        if b.len() as u64 > MAX_BYTES {
            return Err(why(&format!("larger than {MAX_BYTES} bytes")));
        }
        Btf::parse(&b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob of `types` (each a record's bytes) and `strings`.
    fn blob(types: &[Vec<u8>], strings: &[u8]) -> Vec<u8> {
        let t: Vec<u8> = types.concat();
        let mut b = Vec::new();
        b.extend(MAGIC.to_le_bytes());
        b.extend([1, 0]);
        for v in [
            24u32,
            0,
            t.len() as u32,
            t.len() as u32,
            strings.len() as u32,
        ] {
            b.extend(v.to_le_bytes());
        }
        b.extend(t);
        b.extend(strings);
        b
    }

    fn rec(name: u32, kind: u32, vlen: u32, to: u32, members: &[(u32, u32, u32)]) -> Vec<u8> {
        let mut r = Vec::new();
        for v in [name, kind << 24 | vlen, to] {
            r.extend(v.to_le_bytes());
        }
        for m in members {
            for v in [m.0, m.1, m.2] {
                r.extend(v.to_le_bytes());
            }
        }
        r
    }

    /// struct outer { int a; union { struct inner *p; long x; }; struct inner in; } with
    /// struct inner { long pad; int deep; }.
    fn sample() -> Vec<u8> {
        // strings: 0 "", 1 "int", 5 "outer", 11 "a", 13 "inner", 19 "p", 21 "x", 23 "in",
        // 26 "pad", 30 "deep"
        let s = b"\0int\0outer\0a\0inner\0p\0x\0in\0pad\0deep\0";
        let types = vec![
            // 1: int (4 bytes of trailer)
            [rec(1, 1, 0, 4, &[]), vec![0; 4]].concat(),
            // 2: struct inner
            rec(13, 4, 2, 16, &[(26, 1, 0), (30, 1, 64)]),
            // 3: ptr to 2
            rec(0, 2, 0, 2, &[]),
            // 4: anonymous union { p; x }
            rec(0, 5, 2, 8, &[(19, 3, 0), (21, 1, 0)]),
            // 5: struct outer { a @0, anon @64, in @128 }
            rec(5, 4, 3, 32, &[(11, 1, 0), (0, 4, 64), (23, 2, 128)]),
        ];
        blob(&types, s)
    }

    #[test]
    fn fields_are_found_through_anonymous_members_and_nested_structs() {
        let b = Btf::parse(&sample()).unwrap();
        assert_eq!(b.offset("outer", &["a"]).unwrap(), 0);
        assert_eq!(b.offset("outer", &["p"]).unwrap(), 8);
        assert_eq!(b.offset("outer", &["in", "deep"]).unwrap(), 24);
        let e = b.offset("outer", &["nope"]).unwrap_err().to_string();
        assert!(e.contains("no field outer.nope"), "{e}");
        assert!(b.offset("absent", &["a"]).is_err());
        assert!(b.offset("outer", &["a", "deep"]).is_err());
    }

    #[test]
    fn the_running_kernels_offsets_are_found_where_it_has_btf() {
        let Ok(b) = Btf::this_kernel() else { return };
        // sk_buff.dev sits after next and prev in every kernel since 2.6.
        assert_eq!(b.offset("sk_buff", &["dev"]).unwrap(), 16);
        assert!(b.offset("net_device", &["name"]).is_ok());
    }

    /// Fuzz: any bytes, and every truncation and bit flip of a good blob, give types or an
    /// error, never a panic.
    #[test]
    fn any_bytes_parse_or_fail_cleanly() {
        let good = sample();
        for n in 0..good.len() {
            let _ = Btf::parse(&good[..n]).map(|b| b.offset("outer", &["in", "deep"]));
        }
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let mut b = good.clone();
            let i = (rng as usize) % b.len();
            b[i] ^= (rng >> 32) as u8 | 1;
            if let Ok(p) = Btf::parse(&b) {
                let _ = p.offset("outer", &["in", "deep"]);
                let _ = p.offset("outer", &["p"]);
            }
        }
    }
}
