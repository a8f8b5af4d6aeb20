//! A small eBPF assembler for the meter's own tracing programs: the few instructions they use,
//! encoded as linux/bpf_common.h says, with named jump targets resolved when the program ends.

use std::collections::BTreeMap;

/// Registers: r0 return value, r1–r5 arguments (lost across calls; r5 unused here), r6–r9 kept,
/// r10 the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum R {
    R0 = 0,
    R1 = 1,
    R2 = 2,
    R3 = 3,
    R4 = 4,
    R6 = 6,
    R7 = 7,
    R8 = 8,
    R9 = 9,
    R10 = 10,
}

/// Kernel helpers the programs call (enum bpf_func_id).
#[derive(Clone, Copy, Debug)]
pub enum Helper {
    MapLookup = 1,
    MapUpdate = 2,
    KtimeNs = 5,
    CurrentPidTgid = 14,
    ProbeReadKernel = 113,
}

/// Access widths.
#[derive(Clone, Copy, Debug)]
pub enum W {
    U32 = 0x00,
    U64 = 0x18,
}

/// Conditional jumps against an immediate (unsigned).
#[derive(Clone, Copy, Debug)]
pub enum Cond {
    Eq = 0x10,
    Ne = 0x50,
    Ge = 0x30,
}

/// A program being written.
#[derive(Default)]
pub struct Asm {
    insns: Vec<u64>,
    labels: BTreeMap<&'static str, usize>,
    /// (instruction index, label) of each jump to patch.
    jumps: Vec<(usize, &'static str)>,
}

fn insn(code: u8, dst: R, src: u8, off: i16, imm: i32) -> u64 {
    (code as u64)
        | ((dst as u64) << 8)
        | ((src as u64) << 12)
        | ((off as u16 as u64) << 16)
        | ((imm as u32 as u64) << 32)
}

impl Asm {
    fn push(&mut self, i: u64) -> &mut Asm {
        self.insns.push(i);
        self
    }
    /// dst = imm.
    pub fn mov_imm(&mut self, dst: R, imm: i32) -> &mut Asm {
        self.push(insn(0xb7, dst, 0, 0, imm))
    }
    /// dst = src.
    pub fn mov(&mut self, dst: R, src: R) -> &mut Asm {
        self.push(insn(0xbf, dst, src as u8, 0, 0))
    }
    /// dst += imm.
    pub fn add_imm(&mut self, dst: R, imm: i32) -> &mut Asm {
        self.push(insn(0x07, dst, 0, 0, imm))
    }
    /// dst += src.
    pub fn add(&mut self, dst: R, src: R) -> &mut Asm {
        self.push(insn(0x0f, dst, src as u8, 0, 0))
    }
    /// dst -= src.
    pub fn sub(&mut self, dst: R, src: R) -> &mut Asm {
        self.push(insn(0x1f, dst, src as u8, 0, 0))
    }
    /// dst <<= imm.
    pub fn lsh_imm(&mut self, dst: R, imm: i32) -> &mut Asm {
        self.push(insn(0x67, dst, 0, 0, imm))
    }
    /// dst >>= imm (logical).
    pub fn rsh_imm(&mut self, dst: R, imm: i32) -> &mut Asm {
        self.push(insn(0x77, dst, 0, 0, imm))
    }
    /// dst = *(w *)(src + off).
    pub fn load(&mut self, w: W, dst: R, src: R, off: i16) -> &mut Asm {
        self.push(insn(0x61 | w as u8, dst, src as u8, off, 0))
    }
    /// *(w *)(dst + off) = src.
    pub fn store(&mut self, w: W, dst: R, off: i16, src: R) -> &mut Asm {
        self.push(insn(0x63 | w as u8, dst, src as u8, off, 0))
    }
    /// *(w *)(dst + off) = imm.
    pub fn store_imm(&mut self, w: W, dst: R, off: i16, imm: i32) -> &mut Asm {
        self.push(insn(0x62 | w as u8, dst, 0, off, imm))
    }
    /// dst = the map whose fd is `fd` (a two-slot load the kernel rewrites to the map).
    pub fn load_map(&mut self, dst: R, fd: i32) -> &mut Asm {
        self.push(insn(0x18, dst, 1, 0, fd));
        self.push(0)
    }
    /// r0 = helper(r1, …, r5).
    pub fn call(&mut self, h: Helper) -> &mut Asm {
        self.push(insn(0x85, R::R0, 0, 0, h as i32))
    }
    /// if (dst cond imm) goto label.
    pub fn jump_if(&mut self, c: Cond, dst: R, imm: i32, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(insn(0x05 | c as u8, dst, 0, 0, imm))
    }
    /// goto label.
    pub fn jump(&mut self, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(insn(0x05, R::R0, 0, 0, 0))
    }
    /// Marks where `label` jumps to.
    pub fn label(&mut self, label: &'static str) -> &mut Asm {
        self.labels.insert(label, self.insns.len());
        self
    }
    /// return 0.
    pub fn exit0(&mut self) -> &mut Asm {
        self.mov_imm(R::R0, 0);
        self.push(insn(0x95, R::R0, 0, 0, 0))
    }

    /// The instructions, each jump's offset set (relative to the instruction after it).
    pub fn finish(&self) -> Result<Vec<u64>, String> {
        let mut out = self.insns.clone();
        for &(at, label) in &self.jumps {
            let to = *self
                .labels
                .get(label)
                .ok_or_else(|| format!("jump to undefined label {label}"))?;
            let off = to as i64 - at as i64 - 1;
            let off = i16::try_from(off).map_err(|_| format!("jump to {label} too far"))?;
            out[at] = (out[at] & !0xffff_0000) | ((off as u16 as u64) << 16);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_encode_as_the_kernel_reads_them() {
        let mut a = Asm::default();
        a.mov_imm(R::R0, 7)
            .load(W::U64, R::R2, R::R1, 8)
            .store(W::U32, R::R10, -4, R::R3)
            .jump_if(Cond::Ne, R::R2, 3, "out")
            .load_map(R::R1, 5)
            .label("out")
            .exit0();
        let p = a.finish().unwrap();
        // mov64 r0, 7
        assert_eq!(p[0], 0x0000_0007_0000_00b7);
        // ldxdw r2, [r1+8]: code 0x79, dst 2, src 1
        assert_eq!(p[1], 0x0000_0000_0008_1279);
        // stxw [r10-4], r3: code 0x63, dst 10, src 3, off 0xfffc
        assert_eq!(p[2], 0x0000_0000_fffc_3a63);
        // jne r2, 3, +2 (over the two-slot map load)
        assert_eq!(p[3], 0x0000_0003_0002_0255);
        // ld_imm64 r1, map fd 5 (src 1: BPF_PSEUDO_MAP_FD)
        assert_eq!((p[4], p[5]), (0x0000_0005_0000_1118, 0));
        assert_eq!(p[7], 0x95);
    }

    #[test]
    fn an_undefined_label_is_an_error() {
        let mut a = Asm::default();
        a.jump("nowhere").exit0();
        assert!(a.finish().unwrap_err().contains("nowhere"));
    }
}
