//! Handing an SR-IOV VF to a QEMU guest (mode qemu-vfio): the VF's PCI device is unbound from
//! its driver and bound to vfio-pci with a driver override, and given back on `down` (override
//! cleared, the kernel probes its own driver again). Paths are under a sysfs root so the logic is
//! tested on a made-up tree; the lab passes `/sys`.

use crate::lab::Error;
use std::path::{Path, PathBuf};

/// The driver a passed-through VF is bound to.
pub const VFIO_DRIVER: &str = "vfio-pci";

/// A VF's PCI device as sysfs shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct VfDevice {
    /// Its PCI address, `dddd:bb:ss.f`.
    pub bdf: String,
    /// The driver bound to it now, if any.
    pub driver: Option<String>,
    /// How many devices share its IOMMU group (vfio needs the whole group; a VF is alone in its
    /// group behind an ACS-capable port).
    pub group_size: Option<usize>,
}

/// Whether `s` is a PCI address `dddd:bb:ss.f` in lower-case hex (as sysfs names devices).
pub fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |r: std::ops::Range<usize>| {
        b[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && hex(0..4)
        && hex(5..7)
        && hex(8..10)
        && (b'0'..=b'7').contains(&b[11])
}

/// The name a sysfs symlink points at (`…/0000:03:10.1` → `0000:03:10.1`).
fn link_name(path: &Path) -> Option<String> {
    let target = std::fs::read_link(path).ok()?;
    target.file_name()?.to_str().map(str::to_string)
}

/// The path of VF `vf` of network interface `pf`, under `sys`.
pub fn virtfn(sys: &Path, pf: &str, vf: u32) -> PathBuf {
    sys.join(format!("class/net/{pf}/device/virtfn{vf}"))
}

/// Reads VF `vf` of `pf`: its PCI address, driver and IOMMU group.
pub fn resolve(sys: &Path, pf: &str, vf: u32) -> Result<VfDevice, Error> {
    let link = virtfn(sys, pf, vf);
    let bdf = link_name(&link).filter(|b| is_bdf(b)).ok_or_else(|| {
        Error::Failed(format!(
            "{pf} has no VF {vf} ({} is missing): enable its VFs (sriov_numvfs) or use fewer guests",
            link.display()
        ))
    })?;
    let dev = sys.join("bus/pci/devices").join(&bdf);
    let group_size = std::fs::read_dir(dev.join("iommu_group/devices"))
        .ok()
        .map(|d| d.count());
    Ok(VfDevice {
        driver: link_name(&dev.join("driver")),
        bdf,
        group_size,
    })
}

/// The sysfs writes that bind `d` to vfio-pci: override, unbind from its driver, probe.
pub fn bind_writes(sys: &Path, d: &VfDevice) -> Vec<(PathBuf, String)> {
    let dev = sys.join("bus/pci/devices").join(&d.bdf);
    let mut w = vec![(dev.join("driver_override"), VFIO_DRIVER.to_string())];
    if d.driver.is_some() {
        w.push((dev.join("driver/unbind"), d.bdf.clone()));
    }
    w.push((sys.join("bus/pci/drivers_probe"), d.bdf.clone()));
    w
}

/// The sysfs writes that give `bdf` back: unbind from vfio-pci, clear the override, and probe
/// (the kernel binds the VF's own driver, as before the lab).
pub fn return_writes(sys: &Path, bdf: &str, bound_now: Option<&str>) -> Vec<(PathBuf, String)> {
    let dev = sys.join("bus/pci/devices").join(bdf);
    let mut w = vec![];
    if bound_now == Some(VFIO_DRIVER) {
        w.push((dev.join("driver/unbind"), bdf.to_string()));
    }
    w.push((dev.join("driver_override"), "\n".to_string()));
    w.push((sys.join("bus/pci/drivers_probe"), bdf.to_string()));
    w
}

fn write_all(writes: &[(PathBuf, String)]) -> Result<(), Error> {
    writes.iter().try_for_each(|(path, value)| {
        std::fs::write(path, value).map_err(|e| {
            Error::Failed(format!("cannot write {value:?} to {}: {e}", path.display()))
        })
    })
}

/// Refuses a VF that vfio cannot take alone.
pub fn check(pf: &str, vf: u32, d: &VfDevice) -> Result<(), Error> {
    match d.group_size {
        None => Err(Error::Failed(format!(
            "VF {vf} of {pf} ({}) is in no IOMMU group: enable the IOMMU (intel_iommu=on or amd_iommu=on on the kernel command line) or use qemu-macvtap",
            d.bdf
        ))),
        Some(n) if n > 1 => Err(Error::Failed(format!(
            "VF {vf} of {pf} ({}) shares its IOMMU group with {} other devices, which vfio would take too: use a slot behind an ACS-capable port, or qemu-macvtap",
            d.bdf,
            n - 1
        ))),
        _ => Ok(()),
    }
}

/// Binds `d` to vfio-pci (loading the module if its driver is not there) and checks it took.
pub fn bind(d: &VfDevice) -> Result<(), Error> {
    let sys = Path::new("/sys");
    if !sys.join("bus/pci/drivers").join(VFIO_DRIVER).exists() {
        super::hostcmd::read(&["modprobe", VFIO_DRIVER])?;
    }
    write_all(&bind_writes(sys, d))?;
    let now = link_name(&sys.join("bus/pci/devices").join(&d.bdf).join("driver"));
    match now.as_deref() {
        Some(VFIO_DRIVER) => Ok(()),
        other => Err(Error::Failed(format!(
            "{} did not bind to {VFIO_DRIVER} (its driver is {}): see `dmesg`",
            d.bdf,
            other.unwrap_or("none")
        ))),
    }
}

/// Gives `bdf` back to its own driver (for `down`).
pub fn give_back(bdf: &str) -> Result<(), Error> {
    let sys = Path::new("/sys");
    let dev = sys.join("bus/pci/devices").join(bdf);
    if !dev.exists() {
        return Ok(()); // its VFs were disabled: nothing to give back
    }
    let now = link_name(&dev.join("driver"));
    write_all(&return_writes(sys, bdf, now.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A made-up sysfs: PF `vlpf0` with VF 2 at 0000:03:10.4, bound to ixgbevf, alone in group 7.
    /// A folder removed when dropped.
    struct Tmp(PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    impl Tmp {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    fn fake_sys() -> Tmp {
        let t = Tmp(std::env::temp_dir().join(format!("vnetlab-sysfs-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(t.path());
        let root = t.path();
        let devices = root.join("bus/pci/devices");
        let dev = root.join("devices/pci0000:00/0000:03:10.4");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::create_dir_all(&devices).unwrap();
        symlink(&dev, devices.join("0000:03:10.4")).unwrap();
        let pfdev = root.join("devices/pci0000:00/0000:03:00.0");
        std::fs::create_dir_all(&pfdev).unwrap();
        symlink("../0000:03:10.4", pfdev.join("virtfn2")).unwrap();
        std::fs::create_dir_all(root.join("class/net/vlpf0")).unwrap();
        symlink(&pfdev, root.join("class/net/vlpf0/device")).unwrap();
        let drv = root.join("bus/pci/drivers/ixgbevf");
        std::fs::create_dir_all(&drv).unwrap();
        symlink(&drv, dev.join("driver")).unwrap();
        let group = root.join("kernel/iommu_groups/7");
        std::fs::create_dir_all(group.join("devices")).unwrap();
        symlink(&dev, group.join("devices/0000:03:10.4")).unwrap();
        symlink(&group, dev.join("iommu_group")).unwrap();
        t
    }

    #[test]
    fn a_vf_is_found_through_its_pf_with_its_driver_and_group() {
        let t = fake_sys();
        let d = resolve(t.path(), "vlpf0", 2).unwrap();
        assert_eq!(
            d,
            VfDevice {
                bdf: "0000:03:10.4".into(),
                driver: Some("ixgbevf".into()),
                group_size: Some(1),
            }
        );
        check("vlpf0", 2, &d).unwrap();
        let e = resolve(t.path(), "vlpf0", 3).err().unwrap().to_string();
        assert!(e.contains("has no VF 3"), "{e}");
        let shared = VfDevice {
            group_size: Some(3),
            ..d.clone()
        };
        assert!(check("vlpf0", 2, &shared)
            .err()
            .unwrap()
            .to_string()
            .contains("with 2 other devices"));
        let alone = VfDevice {
            group_size: None,
            ..d
        };
        assert!(check("vlpf0", 2, &alone)
            .err()
            .unwrap()
            .to_string()
            .contains("no IOMMU group"));
    }

    #[test]
    fn binding_overrides_then_unbinds_then_probes_and_giving_back_reverses_it() {
        let sys = Path::new("/sys");
        let d = VfDevice {
            bdf: "0000:03:10.4".into(),
            driver: Some("ixgbevf".into()),
            group_size: Some(1),
        };
        let dev = "/sys/bus/pci/devices/0000:03:10.4";
        let text = |w: Vec<(PathBuf, String)>| {
            w.into_iter()
                .map(|(p, v)| format!("{}={}", p.display(), v.trim()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            text(bind_writes(sys, &d)),
            [
                format!("{dev}/driver_override=vfio-pci"),
                format!("{dev}/driver/unbind=0000:03:10.4"),
                "/sys/bus/pci/drivers_probe=0000:03:10.4".into(),
            ]
        );
        let unbound = VfDevice { driver: None, ..d };
        assert_eq!(bind_writes(sys, &unbound).len(), 2);
        assert_eq!(
            text(return_writes(sys, "0000:03:10.4", Some("vfio-pci"))),
            [
                format!("{dev}/driver/unbind=0000:03:10.4"),
                format!("{dev}/driver_override="),
                "/sys/bus/pci/drivers_probe=0000:03:10.4".into(),
            ]
        );
        // Bound to something else by then (someone else's doing): leave the binding alone.
        assert_eq!(return_writes(sys, "0000:03:10.4", Some("ixgbevf")).len(), 2);
    }

    #[test]
    fn only_a_plain_pci_address_is_a_bdf() {
        assert!(is_bdf("0000:03:10.4"));
        assert!(is_bdf("0001:af:1f.7"));
        for bad in [
            "0000:03:10.8",
            "0000:03:10",
            "../../../etc",
            "0000:03:1G.4",
            "0000:03:10.4/",
            "0000-03:10.4",
            "",
            "0000:AF:10.4",
        ] {
            assert!(!is_bdf(bad), "{bad}");
        }
    }
}
