//! The QEMU command line of one guest, per device: pure, so the unit tests see exactly what a
//! lab would start. The guest's NIC is configured from the kernel command line (`vnetlab.*`
//! words its `/init` reads); the agent speaks on a virtio-serial port bound to a unix socket,
//! and QMP on another, both in the guest's own folder.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The device a guest's NIC is, and how its frames reach the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// An emulated Intel e1000 on a tap on the lab's bridge.
    E1000,
    /// virtio-net with QEMU's userspace backend (`vhost=off`) on a tap on the bridge.
    Virtio,
    /// virtio-net with the in-kernel vhost-net backend on a tap on the bridge.
    Vhost,
    /// virtio-net on a macvtap of the wire's host end (no host bridge).
    Macvtap,
    /// An SR-IOV VF passed through with vfio-pci.
    Vfio,
}

pub use crate::vocab::Accel;

/// The files of one running guest, all in its own folder.
#[derive(Clone, Debug, PartialEq)]
pub struct Files {
    pub dir: PathBuf,
}

impl Files {
    pub fn agent(&self) -> PathBuf {
        self.dir.join("agent.sock")
    }
    pub fn qmp(&self) -> PathBuf {
        self.dir.join("qmp.sock")
    }
    pub fn console(&self) -> PathBuf {
        self.dir.join("console.log")
    }
    pub fn pidfile(&self) -> PathBuf {
        self.dir.join("qemu.pid")
    }
}

/// The guest's NIC as its `/init` sets it up.
#[derive(Clone, Debug, PartialEq)]
pub struct NicConfig {
    pub address: Ipv4Addr,
    pub prefix: u8,
    pub mtu: u32,
    pub gro: bool,
    pub tso: bool,
    pub mac: [u8; 6],
}

/// Everything one guest's command line needs.
#[derive(Clone, Debug, PartialEq)]
pub struct VmSpec {
    /// The guest's name in QEMU (`g1`) and in its threads' names.
    pub name: String,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// A firmware that boots faster than the default SeaBIOS (qboot), where installed.
    pub bios: Option<PathBuf>,
    pub vcpus: u32,
    pub memory_mib: u32,
    pub accel: Accel,
    /// The host's TSC rate in kHz, told to a TCG guest's kernel so it need not calibrate it.
    pub tsc_khz: Option<u64>,
    pub device: Device,
    /// The host-side interface: the tap (bridge modes), the macvtap, or the VF's PCI address.
    pub host_if: String,
    pub nic: NicConfig,
    pub files: Files,
}

/// The QEMU binary vnetlab runs.
pub const QEMU: &str = "qemu-system-x86_64";

/// Kernel options that skip what an emulated machine makes slow and a VM does not need (TSC
/// calibration, the timer check, probing a PS/2 keyboard and mouse): 2.30 -> 1.95 s to /init
/// under TCG here. The guest's security mitigations stay as deployed.
const BOOT_QUICKLY: &str = "tsc=reliable no_timer_check i8042.nokbd i8042.noaux i8042.nopnp";

/// The kernel command line: a quiet serial console, no reboot on panic, the TSC's rate where
/// known (`guest::clock`) and the NIC's settings; `vf`: the NIC is a passed-through VF, so the
/// guest loads the VF drivers too.
pub fn kernel_cmdline(nic: &NicConfig, vf: bool, tsc_khz: Option<u64>) -> String {
    let on = |b: bool| if b { "on" } else { "off" };
    let tsc = tsc_khz.map_or(String::new(), |k| format!(" tsc_early_khz={k}"));
    format!(
        "console=ttyS0 quiet panic=-1 {BOOT_QUICKLY}{tsc} vnetlab.addr={}/{} vnetlab.mtu={} vnetlab.gro={} vnetlab.tso={}{}",
        nic.address,
        nic.prefix,
        nic.mtu,
        on(nic.gro),
        on(nic.tso),
        if vf { " vnetlab.vf=on" } else { "" }
    )
}

pub fn mac_text(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A locally administered MAC for guest `i` (unique within a lab's wire, which is all it reaches).
pub fn guest_mac(i: u32) -> [u8; 6] {
    [0x52, 0x54, 0x00, 0x76, (i >> 8) as u8, i as u8]
}

impl Device {
    /// Whether the guest is a `microvm`: a machine with no PCI bus, no firmware tables to walk
    /// and virtio devices on MMIO, which boots to its agent about a second sooner under TCG.
    /// The e1000 and a passed-through VF are PCI devices, so their guests stay on q35.
    pub fn microvm(self) -> bool {
        matches!(self, Device::Virtio | Device::Vhost | Device::Macvtap)
    }

    /// The virtio transport's suffix: MMIO on a microvm, PCI on q35.
    fn virtio(self) -> &'static str {
        if self.microvm() {
            "device"
        } else {
            "pci"
        }
    }
}

/// The argv of QEMU for `s` (without the binary). A macvtap's character device is expected
/// open on fd 3 (see `argv`).
pub fn args(s: &VmSpec) -> Vec<String> {
    let f = &s.files;
    let accel = match s.accel {
        Accel::Kvm => "kvm".to_string(),
        Accel::Tcg => "tcg,thread=multi".to_string(),
    };
    let mut a: Vec<String> = vec![
        "-name".into(),
        format!("{},debug-threads=on", s.name),
        "-M".into(),
        if s.device.microvm() { "microvm" } else { "q35" }.into(),
        "-accel".into(),
        accel,
        "-cpu".into(),
        if s.accel == Accel::Kvm { "host" } else { "max" }.into(),
        "-smp".into(),
        s.vcpus.to_string(),
        "-m".into(),
        s.memory_mib.to_string(),
        "-nodefaults".into(),
        "-no-user-config".into(),
        "-display".into(),
        "none".into(),
        "-no-reboot".into(),
        "-kernel".into(),
        path(&s.kernel),
        "-initrd".into(),
        path(&s.initrd),
        "-append".into(),
        kernel_cmdline(&s.nic, s.device == Device::Vfio, s.tsc_khz),
        "-serial".into(),
        format!("file:{}", path(&f.console())),
        "-pidfile".into(),
        path(&f.pidfile()),
        "-qmp".into(),
        format!("unix:{},server=on,wait=off", path(&f.qmp())),
        "-device".into(),
        format!("virtio-serial-{}", s.device.virtio()),
        "-chardev".into(),
        format!(
            "socket,id=agent,path={},server=on,wait=off",
            path(&f.agent())
        ),
        "-device".into(),
        "virtserialport,chardev=agent,name=vnetlab.agent".into(),
    ];
    // A microvm has its own minimal firmware (qboot) already.
    if let Some(b) = s.bios.as_ref().filter(|_| !s.device.microvm()) {
        a.extend(["-bios".to_string(), path(b)]);
    }
    a.extend(nic_args(s));
    a
}

/// QEMU's minimal firmware, if installed: it jumps straight to the kernel (no option ROMs, no
/// boot menu), which saves about half a second per boot under TCG.
pub fn fast_bios() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/share/qemu/qboot.rom");
    p.exists().then_some(p)
}

/// The NIC's backend (`-netdev`) and device (`-device`) per mode.
fn nic_args(s: &VmSpec) -> Vec<String> {
    let mac = mac_text(&s.nic.mac);
    let tap = |vhost: bool| {
        format!(
            "tap,id=net0,ifname={},script=no,downscript=no,vhost={}",
            s.host_if,
            if vhost { "on" } else { "off" }
        )
    };
    let (netdev, device) = match s.device {
        Device::E1000 => (tap(false), format!("e1000,netdev=net0,mac={mac},romfile=")),
        Device::Virtio => (
            tap(false),
            format!("virtio-net-device,netdev=net0,mac={mac}"),
        ),
        Device::Vhost => (
            tap(true),
            format!("virtio-net-device,netdev=net0,mac={mac}"),
        ),
        Device::Macvtap => (
            "tap,id=net0,fd=3,vhost=off".to_string(),
            format!("virtio-net-device,netdev=net0,mac={mac}"),
        ),
        Device::Vfio => {
            return vec!["-device".into(), format!("vfio-pci,host={}", s.host_if)];
        }
    };
    vec!["-netdev".into(), netdev, "-device".into(), device]
}

/// The whole command to spawn: QEMU itself, or (macvtap) a shell that opens the macvtap's
/// character device `/dev/tap<ifindex>` on fd 3 and becomes QEMU.
pub fn argv(s: &VmSpec) -> Vec<String> {
    let mut v = Vec::new();
    if s.device == Device::Macvtap {
        v.extend([
            "sh".to_string(),
            "-c".into(),
            format!(
                "exec \"$0\" \"$@\" 3<>/dev/tap$(cat /sys/class/net/{}/ifindex)",
                s.host_if
            ),
        ]);
    }
    v.push(QEMU.into());
    v.extend(args(s));
    v
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(device: Device) -> VmSpec {
        VmSpec {
            name: "g1".into(),
            kernel: "/c/vmlinuz".into(),
            initrd: "/c/initramfs.cpio".into(),
            bios: None,
            vcpus: 1,
            memory_mib: 256,
            accel: Accel::Tcg,
            tsc_khz: None,
            device,
            host_if: "vlx-p1".into(),
            nic: NicConfig {
                address: "10.213.0.3".parse().unwrap(),
                prefix: 16,
                mtu: 9000,
                gro: true,
                tso: false,
                mac: guest_mac(1),
            },
            files: Files {
                dir: "/run/vnetlab/x.vm-g1".into(),
            },
        }
    }

    fn after<'a>(a: &'a [String], flag: &str) -> Vec<&'a str> {
        a.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[test]
    fn each_device_has_its_backend_and_model() {
        let a = args(&spec(Device::E1000));
        assert_eq!(
            after(&a, "-netdev"),
            ["tap,id=net0,ifname=vlx-p1,script=no,downscript=no,vhost=off"]
        );
        assert!(after(&a, "-device").contains(&"e1000,netdev=net0,mac=52:54:00:76:00:01,romfile="));
        let v = args(&spec(Device::Virtio));
        assert!(after(&v, "-netdev")[0].ends_with("vhost=off"));
        assert!(after(&v, "-device")[2].starts_with("virtio-net-device,netdev=net0"));
        assert_eq!(after(&v, "-M"), ["microvm"]);
        assert_eq!(after(&v, "-device")[0], "virtio-serial-device");
        assert_eq!(after(&a, "-M"), ["q35"], "the e1000 is a PCI device");
        assert_eq!(after(&a, "-device")[0], "virtio-serial-pci");
        let h = args(&spec(Device::Vhost));
        assert!(after(&h, "-netdev")[0].ends_with("vhost=on"));
        let m = args(&spec(Device::Macvtap));
        assert_eq!(after(&m, "-netdev"), ["tap,id=net0,fd=3,vhost=off"]);
        let mut f = spec(Device::Vfio);
        f.host_if = "0000:03:10.1".into();
        let f = args(&f);
        assert!(after(&f, "-netdev").is_empty());
        assert!(after(&f, "-append")[0].ends_with(" vnetlab.vf=on"));
        assert!(!after(&m, "-append")[0].contains("vnetlab.vf"));
        assert!(after(&f, "-device").contains(&"vfio-pci,host=0000:03:10.1"));
    }

    #[test]
    fn the_guest_is_told_its_address_mtu_and_offloads() {
        let a = args(&spec(Device::Virtio));
        let append = after(&a, "-append")[0];
        for w in [
            "vnetlab.addr=10.213.0.3/16",
            "vnetlab.mtu=9000",
            "vnetlab.gro=on",
            "vnetlab.tso=off",
            "panic=-1",
        ] {
            assert!(append.split(' ').any(|x| x == w), "{w} in {append}");
        }
        assert!(!append.contains("tsc_early_khz"), "{append}");
        let mut s = spec(Device::Virtio);
        s.tsc_khz = Some(2_596_130);
        let a = args(&s);
        let append = after(&a, "-append")[0];
        assert!(
            append.split(' ').any(|x| x == "tsc_early_khz=2596130"),
            "{append}"
        );
    }

    #[test]
    fn acceleration_and_channels_are_on_the_command_line() {
        let mut s = spec(Device::Virtio);
        let a = args(&s);
        assert_eq!(after(&a, "-accel"), ["tcg,thread=multi"]);
        assert_eq!(after(&a, "-name"), ["g1,debug-threads=on"]);
        assert_eq!(
            after(&a, "-qmp"),
            ["unix:/run/vnetlab/x.vm-g1/qmp.sock,server=on,wait=off"]
        );
        assert!(after(&a, "-chardev")[0].contains("path=/run/vnetlab/x.vm-g1/agent.sock"));
        assert!(a.contains(&"-no-reboot".to_string()));
        s.accel = Accel::Kvm;
        s.vcpus = 2;
        let k = args(&s);
        assert_eq!(after(&k, "-accel"), ["kvm"]);
        assert_eq!(after(&k, "-smp"), ["2"]);
        assert_eq!(after(&k, "-cpu"), ["host"]);
    }

    #[test]
    fn only_macvtap_goes_through_a_shell_that_opens_fd_3() {
        let m = argv(&spec(Device::Macvtap));
        assert_eq!(m[0], "sh");
        assert!(m[2].contains("3<>/dev/tap$(cat /sys/class/net/vlx-p1/ifindex)"));
        assert_eq!(m[3], QEMU);
        assert_eq!(argv(&spec(Device::E1000))[0], QEMU);
    }
}
