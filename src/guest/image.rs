//! The guest image, built on this host from Debian packages (no image is downloaded): the
//! generic kernel (`linux-image-amd64`'s dependency, fetched with `apt-get download`, its
//! `vmlinuz` and the NIC/virtio modules extracted), busybox-static, and this vnetlab binary with
//! the libraries it links, packed with an `/init` into an initramfs. Cached by content.

use super::cpio::{Archive, Entry};
use super::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Modules the guest loads, in dependency order (the generic kernel builds them as modules):
/// virtio (on MMIO for a microvm, on PCI for q35) and e1000 for the emulated devices
/// ([`BASE_MODULES`]), then the common SR-IOV VF
/// drivers a qemu-vfio guest may be handed (Intel igbvf/ixgbevf/iavf, Broadcom bnxt_en,
/// Mellanox mlx5_core), loaded only with `vnetlab.vf=on`.
pub const MODULES: [&str; 19] = [
    "virtio_ring",
    "virtio",
    "virtio_mmio",
    "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev",
    "virtio_pci",
    "failover",
    "net_failover",
    "virtio_net",
    "virtio_console",
    "e1000",
    "igbvf",
    "ixgbevf",
    "iavf",
    "bnxt_en",
    "psample",
    "pci-hyperv-intf",
    "mlxfw",
    "mlx5_core",
];

/// How many of [`MODULES`] every guest loads (the rest are VF drivers).
pub const BASE_MODULES: usize = 11;

/// Busybox applets the guest's `/init` uses (ethtool is the host's own, busybox has none).
const APPLETS: [&str; 10] = [
    "sh", "mount", "insmod", "ip", "cat", "sleep", "poweroff", "ls", "seq", "head",
];

/// How long one packaging step (apt-cache, apt-get download) may take, in seconds.
const TOOL_TIMEOUT: &str = "600";

/// A built image: kernel and initramfs.
#[derive(Debug, Clone)]
pub struct Image {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
}

/// What goes into the initramfs.
pub struct Parts {
    pub busybox: PathBuf,
    /// The kernel's extracted `lib/modules/<version>` folder.
    pub modules: PathBuf,
    pub vnetlab: PathBuf,
    /// The host's ethtool, if it has one (the guest sets its NIC's offloads with it).
    pub ethtool: Option<PathBuf>,
    /// Shared libraries vnetlab and ethtool link (absolute paths, kept at the same paths in
    /// the guest).
    pub libs: Vec<PathBuf>,
    /// The image is for a passed-through VF: it carries the VF drivers too (5 MB more to unpack
    /// at every boot, so only this image has them).
    pub vf: bool,
}

/// The guest's `/init`: mounts, loads the modules, sets up `eth0` from the kernel command line
/// (`vnetlab.addr=A/LEN vnetlab.mtu=N vnetlab.gro=on|off vnetlab.tso=on|off`), waits for its
/// carrier (frames flow from then; the operational state follows at the kernel's next linkwatch
/// run, up to a second later, and nothing here needs it), then serves vnetlab's agent on the virtio-serial port named `vnetlab.agent` (the host's
/// unix socket), never on the measured network. Powers off if the agent ends.
pub fn init_script() -> String {
    let mods = MODULES[..BASE_MODULES].join(" ");
    let vf_mods = MODULES[BASE_MODULES..].join(" ");
    format!(
        r#"#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "vnetlab guest: /init at $(cat /proc/uptime)"
for m in {mods}; do insmod /modules/$m.ko 2>/dev/null; done
case " $(cat /proc/cmdline) " in
  *" vnetlab.vf=on "*) for m in {vf_mods}; do insmod /modules/$m.ko 2>/dev/null; done;;
esac
ip link set lo up
addr=; mtu=1500; gro=on; tso=on
for w in $(cat /proc/cmdline); do
  case "$w" in
    vnetlab.addr=*) addr="${{w#*=}}";;
    vnetlab.mtu=*) mtu="${{w#*=}}";;
    vnetlab.gro=*) gro="${{w#*=}}";;
    vnetlab.tso=*) tso="${{w#*=}}";;
  esac
done
for i in $(seq 1 500); do [ -e /sys/class/net/eth0 ] && break; sleep 0.01; done
if [ -n "$addr" ]; then
  ip link set eth0 mtu "$mtu"
  ip addr add "$addr" dev eth0
  ethtool -K eth0 gro "$gro" tso "$tso" gso "$tso" >/dev/null 2>&1
  ip link set eth0 up
  for i in $(seq 1 500); do [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ] && break; sleep 0.01; done
fi
port=
for i in $(seq 1 500); do
  for p in /sys/class/virtio-ports/*; do
    [ "$(cat $p/name 2>/dev/null)" = vnetlab.agent ] && port=/dev/${{p##*/}}
  done
  [ -n "$port" ] && [ -e "$port" ] && break
  sleep 0.01
done
echo "vnetlab guest: eth0 $addr mtu $mtu gro $gro tso $tso, $(cat /sys/class/net/eth0/operstate); agent on $port at $(cat /proc/uptime)"
/bin/vnetlab agent --serial "$port"
echo "vnetlab guest: the agent ended"
poweroff -f
"#
    )
}

/// Packs the initramfs.
pub fn initramfs(p: &Parts) -> Result<Vec<u8>, Error> {
    let read = |f: &Path| {
        std::fs::read(f).map_err(|e| Error::Image(format!("cannot read {}: {e}", f.display())))
    };
    let mut a = Archive::default();
    for d in [
        "bin", "dev", "proc", "sys", "modules", "tmp", "lib", "lib64", "usr", "usr/lib",
    ] {
        a.add(&Entry::Dir {
            path: d,
            mode: 0o755,
        });
    }
    a.add(&Entry::File {
        path: "bin/busybox",
        mode: 0o755,
        data: &read(&p.busybox)?,
    });
    for app in APPLETS {
        a.add(&Entry::Symlink {
            path: &format!("bin/{app}"),
            target: "busybox",
        });
    }
    a.add(&Entry::File {
        path: "bin/vnetlab",
        mode: 0o755,
        data: &read(&p.vnetlab)?,
    });
    if let Some(e) = &p.ethtool {
        a.add(&Entry::File {
            path: "bin/ethtool",
            mode: 0o755,
            data: &read(e)?,
        });
    }
    let mut made = std::collections::BTreeSet::new();
    for lib in &p.libs {
        let rel = lib.strip_prefix("/").unwrap_or(lib);
        for dir in rel
            .ancestors()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let d = dir.to_string_lossy().to_string();
            if !d.is_empty() && made.insert(d.clone()) {
                a.add(&Entry::Dir {
                    path: &d,
                    mode: 0o755,
                });
            }
        }
        let data = read(&std::fs::canonicalize(lib).unwrap_or(lib.clone()))?;
        a.add(&Entry::File {
            path: &rel.to_string_lossy(),
            mode: 0o755,
            data: &data,
        });
    }
    let count = if p.vf { MODULES.len() } else { BASE_MODULES };
    for m in &MODULES[..count] {
        let f = find_module(&p.modules, m)
            .ok_or_else(|| Error::Image(format!("the kernel package has no {m}.ko")))?;
        a.add(&Entry::File {
            path: &format!("modules/{m}.ko"),
            mode: 0o644,
            data: &read(&f)?,
        });
    }
    a.add(&Entry::File {
        path: "init",
        mode: 0o755,
        data: init_script().as_bytes(),
    });
    Ok(a.finish())
}

fn find_module(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = find_module(&p, name) {
                return Some(f);
            }
        } else if p.file_name()? == format!("{name}.ko").as_str() {
            return Some(p);
        }
    }
    None
}

/// The shared libraries `bin` links, from the dynamic loader's list (`ld.so --list`).
pub fn linked_libs(bin: &Path) -> Result<Vec<PathBuf>, Error> {
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .map_err(|e| Error::Image(format!("cannot run ldd: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| {
            let path = l.split("=>").last()?.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Fetches and extracts the kernel package into `cache`: the `vmlinuz` and its modules folder.
pub fn kernel(cache: &Path) -> Result<(PathBuf, PathBuf), Error> {
    let fail = |what: &str| Error::Image(what.to_string());
    let deps = run(&["apt-cache", "depends", "linux-image-amd64"], cache)?;
    let pkg = deps
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: linux-image-"))
        .map(|v| format!("linux-image-{v}"))
        .ok_or_else(|| fail("apt knows no linux-image-amd64: run `apt-get update`"))?;
    let version = pkg.trim_start_matches("linux-image-").to_string();
    let root = cache.join(&pkg);
    let vmlinuz = root.join(format!("boot/vmlinuz-{version}"));
    let modules = root.join(format!("lib/modules/{version}"));
    if vmlinuz.exists() && MODULES.iter().all(|m| find_module(&modules, m).is_some()) {
        return Ok((vmlinuz, modules));
    }
    std::fs::create_dir_all(&root).map_err(|e| fail(&format!("{}: {e}", root.display())))?;
    run(&["apt-get", "download", &pkg], cache)?;
    let mut wanted = vec![format!("boot/vmlinuz-{version}")];
    wanted.extend(MODULES.iter().map(|m| format!("*/{m}.ko")));
    let debs: Vec<PathBuf> = std::fs::read_dir(cache)
        .map_err(|e| fail(&format!("{}: {e}", cache.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with(&format!("{pkg}_")) && n.ends_with(".deb")
        })
        .collect();
    let deb = debs.first().ok_or_else(|| {
        fail(&format!(
            "apt-get download {pkg} left no package in {}",
            cache.display()
        ))
    })?;
    let taken = super::deb::extract(deb, &root, |n| {
        wanted.iter().any(|w| super::deb::matches(w, n))
    });
    debs.iter().for_each(|d| {
        let _ = std::fs::remove_file(d);
    });
    if taken? == 0 {
        return Err(fail(&format!("{pkg} holds none of {}", wanted.join(", "))));
    }
    Ok((vmlinuz, modules))
}

/// The kernel's payload, decompressed (`vmlinux` beside `vmlinuz`): QEMU boots it straight at its
/// PVH entry, which saves the seconds an emulated CPU spends decompressing (6.0 -> 2.6 s to the
/// first panic under TCG here). None where the payload is not xz or not an ELF with a PVH note;
/// then the `vmlinuz` is booted as it is.
pub fn uncompressed(vmlinuz: &Path) -> Option<PathBuf> {
    let out = vmlinuz.with_file_name("vmlinux");
    if is_pvh_elf(&std::fs::read(&out).unwrap_or_default()) {
        return Some(out);
    }
    let data = std::fs::read(vmlinuz).ok()?;
    let at = data.windows(6).position(|w| w == b"\xfd7zXZ\0")?;
    let elf = xz_stream(&data[at..], 512 << 20)?;
    crate::sys::file::replace(&out, &elf, 0o644).ok()?;
    let ok = is_pvh_elf(&elf);
    if !ok {
        let _ = std::fs::remove_file(&out);
    }
    ok.then_some(out)
}

/// The first xz stream of `data`, decoded whole (what follows it, the kernel's own trailer, is
/// left unread); None if it is corrupt, cut short or larger than `max` bytes.
fn xz_stream(data: &[u8], max: usize) -> Option<Vec<u8>> {
    use xz2::stream::{Action, Status, Stream};
    let mut s = Stream::new_stream_decoder(u64::MAX, 0).ok()?;
    let mut out: Vec<u8> = Vec::new();
    loop {
        if out.len() > max {
            return None;
        }
        if out.len() == out.capacity() {
            out.reserve((16 << 20).min(max + 1 - out.len()));
        }
        let (read, wrote) = (s.total_in(), out.len());
        let input = data.get(s.total_in() as usize..)?;
        match s.process_vec(input, &mut out, Action::Run).ok()? {
            Status::StreamEnd => return Some(out),
            _ if s.total_in() == read && out.len() == wrote => return None,
            _ => {}
        }
    }
}

/// An ELF image that carries Xen's PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY, type 18).
fn is_pvh_elf(data: &[u8]) -> bool {
    // The note's header: name size 4, the descriptor's size, type 18, name "Xen\0".
    let tail = [18, 0, 0, 0, b'X', b'e', b'n', 0];
    data.starts_with(b"\x7fELF")
        && data
            .windows(16)
            .any(|w| w[..4] == [4, 0, 0, 0] && w[8..] == tail)
}

/// Runs a packaging tool in `dir`, killed after `TOOL_TIMEOUT` (coreutils' timeout).
fn run(argv: &[&str], dir: &Path) -> Result<String, Error> {
    let out = Command::new("timeout")
        .arg(TOOL_TIMEOUT)
        .args(argv)
        .current_dir(dir)
        .output()
        .map_err(|e| Error::Image(format!("cannot run {}: {e}", argv[0])))?;
    if !out.status.success() {
        return Err(Error::Image(format!(
            "{} failed (or took over {TOOL_TIMEOUT} s): {}",
            argv[0],
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The agent the guest runs: `vnetlab-agent` beside this binary (the agent alone, a fraction of
/// vnetlab's size), else this binary itself (its `agent` command is the same code).
fn agent_binary() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Image(format!("cannot find vnetlab's own binary: {e}")))?;
    let alone = exe.with_file_name("vnetlab-agent");
    Ok(if alone.is_file() { alone } else { exe })
}

/// A copy of `exe` without its debug information (a fifth of the size: the guest unpacks it into
/// its memory at every boot), or `exe` itself where binutils' strip is missing.
fn stripped(exe: &Path, cache: &Path) -> PathBuf {
    let out = cache.join("vnetlab.stripped");
    let tmp = cache.join(format!(".vnetlab.stripped.{}", std::process::id()));
    let ok = Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&tmp)
        .arg(exe)
        .status()
        .is_ok_and(|s| s.success())
        && std::fs::rename(&tmp, &out).is_ok();
    if ok {
        out
    } else {
        let _ = std::fs::remove_file(&tmp);
        exe.to_path_buf()
    }
}

/// How long a build of the image waits for another process building it.
const BUILDING: std::time::Duration = std::time::Duration::from_secs(900);

/// Holds `cache/image.lock` while one process builds or checks the image (two labs coming up
/// at once would otherwise build it over each other), waiting for another holder up to
/// `BUILDING`; let go when dropped (or by the kernel when the process ends).
fn lock_cache(cache: &Path) -> Result<std::fs::File, Error> {
    let path = cache.join("image.lock");
    crate::sys::file::lock_within(&path, 0o644, BUILDING, || {})
        .map_err(|e| Error::Image(format!("cannot lock {}: {e}", path.display())))?
        .ok_or_else(|| {
            Error::Image(format!(
                "another process held {} for {} s: is a guest image build stuck?",
                path.display(),
                BUILDING.as_secs()
            ))
        })
}

/// Builds (or reuses) the image under `cache`: the kernel from its package, the initramfs from
/// busybox-static and this build's agent, rebuilt whenever its bytes differ; `vf`: the image of
/// a passed-through VF's guest (with the VF drivers).
pub fn ensure(cache: &Path, vf: bool) -> Result<Image, Error> {
    let busybox = PathBuf::from("/bin/busybox");
    if !busybox.exists() {
        return Err(Error::Image(
            "no /bin/busybox: install busybox-static (`make deps` does)".into(),
        ));
    }
    let exe = agent_binary()?;
    let _held = lock_cache(cache)?;
    let stamp = Stamp::of(&exe, vf);
    if let Some(img) = stamp.as_ref().and_then(|s| s.reuse(cache)) {
        return Ok(img);
    }
    let img = build(cache, &busybox, &exe, vf)?;
    if let Some(s) = stamp {
        s.write(cache, &img);
    }
    Ok(img)
}

/// What an image was built from, kept beside it: every input's size and time, so an unchanged
/// image is reused without asking apt, stripping or packing anything (all that took 0.8 s of
/// every `up`). The kernel package is looked up again whenever the agent changes (every build).
struct Stamp(String);

impl Stamp {
    fn of(exe: &Path, vf: bool) -> Option<Stamp> {
        let meta = |p: &Path| -> Option<String> {
            let m = std::fs::metadata(p).ok()?;
            let t = m
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(format!("{}:{}:{}", p.display(), m.len(), t.as_nanos()))
        };
        let mut parts = vec![
            meta(exe)?,
            meta(Path::new("/bin/busybox"))?,
            format!("vf={vf}"),
            sha256_hex(init_script().as_bytes()),
            MODULES.join(","),
        ];
        for e in ["/usr/sbin/ethtool", "/sbin/ethtool"] {
            parts.extend(meta(Path::new(e)));
        }
        Some(Stamp(sha256_hex(parts.join("\n").as_bytes())))
    }

    fn path(cache: &Path, vf: bool) -> PathBuf {
        cache.join(if vf { "image-vf.stamp" } else { "image.stamp" })
    }

    /// The image this stamp names, if it was built from the same inputs and is still there.
    fn reuse(&self, cache: &Path) -> Option<Image> {
        for vf in [false, true] {
            let text = std::fs::read_to_string(Self::path(cache, vf)).ok()?;
            let mut l = text.lines();
            if l.next()? != self.0 {
                continue;
            }
            let (kernel, initrd) = (PathBuf::from(l.next()?), PathBuf::from(l.next()?));
            return (kernel.is_file() && initrd.is_file()).then_some(Image { kernel, initrd });
        }
        None
    }

    fn write(&self, cache: &Path, img: &Image) {
        let vf = img.initrd.ends_with("initramfs-vf.cpio");
        let text = format!(
            "{}\n{}\n{}\n",
            self.0,
            img.kernel.display(),
            img.initrd.display()
        );
        let _ = crate::sys::file::replace(&Self::path(cache, vf), text.as_bytes(), 0o644);
    }
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Builds the image under `cache` (see `ensure`).
fn build(cache: &Path, busybox: &Path, exe: &Path, vf: bool) -> Result<Image, Error> {
    let busybox = busybox.to_path_buf();
    let (vmlinuz, modules) = kernel(cache)?;
    let kernel = uncompressed(&vmlinuz).unwrap_or(vmlinuz);
    let vnetlab = stripped(exe, cache);
    let ethtool = ["/usr/sbin/ethtool", "/sbin/ethtool"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    let mut libs = linked_libs(exe)?;
    if let Some(e) = &ethtool {
        libs.extend(linked_libs(e)?);
    }
    libs.sort();
    libs.dedup();
    let bytes = initramfs(&Parts {
        busybox,
        modules,
        vnetlab,
        ethtool,
        libs,
        vf,
    })?;
    let initrd = cache.join(if vf {
        "initramfs-vf.cpio"
    } else {
        "initramfs.cpio"
    });
    let same = std::fs::read(&initrd)
        .map(|old| old == bytes)
        .unwrap_or(false);
    if !same {
        crate::sys::file::replace(&initrd, &bytes, 0o644)
            .map_err(|e| Error::Image(format!("cannot write {}: {e}", initrd.display())))?;
    }
    Ok(Image { kernel, initrd })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_elf_with_a_pvh_entry_note_is_booted_uncompressed() {
        let note = [4, 0, 0, 0, 8, 0, 0, 0, 18, 0, 0, 0, b'X', b'e', b'n', 0];
        let mut elf = b"\x7fELF....".to_vec();
        elf.extend(note);
        assert!(is_pvh_elf(&elf));
        let mut other_note = elf.clone();
        other_note[8 + 8] = 17;
        assert!(!is_pvh_elf(&other_note));
        let mut not_elf = elf.clone();
        not_elf[0] = 0;
        assert!(!is_pvh_elf(&not_elf));
        assert!(!is_pvh_elf(b""));
    }

    #[test]
    fn the_init_script_reads_every_nic_setting_and_serves_the_named_port() {
        let s = init_script();
        for w in [
            "vnetlab.addr=*",
            "vnetlab.mtu=*",
            "vnetlab.gro=*",
            "vnetlab.tso=*",
            "vnetlab.agent",
            "agent --serial",
            "poweroff -f",
            "vnetlab.vf=on",
        ] {
            assert!(s.contains(w), "{w}");
        }
        for m in MODULES {
            assert!(s.contains(m), "{m}");
        }
    }

    #[test]
    fn an_xz_payload_is_read_to_its_end_and_no_further() {
        let body: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut enc = xz2::write::XzEncoder::new(Vec::new(), 1);
        std::io::Write::write_all(&mut enc, &body).unwrap();
        let mut data = enc.finish().unwrap();
        let whole = data.len();
        data.extend_from_slice(b"the kernel's trailer");
        assert!(xz_stream(&data, 64 << 20).is_some_and(|b| b == body));
        assert!(
            xz_stream(&data[..whole - 20], 64 << 20).is_none(),
            "cut short"
        );
        assert!(xz_stream(&data, 100_000).is_none(), "larger than asked");
    }
}
