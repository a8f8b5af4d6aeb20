//! A plan as shell text, for `--dry-run` and the lab's command log: what each step runs.

use super::cx::Step;

/// Every command the plan runs, as shell text (for --dry-run).
pub fn shell(steps: &[Step]) -> Vec<String> {
    steps.iter().map(shell_step).collect()
}

/// One step as the shell text that does what it does.
pub fn shell_step(s: &Step) -> String {
    match s {
        Step::Run { cmd, .. } => cmd.shell(),
        Step::MakeNetns { names } => names
            .iter()
            .map(|n| format!("ip netns add {n}  # made only if the name is free; its inode journaled; IPv6 off in it"))
            .collect::<Vec<_>>()
            .join("\n"),
        Step::MakeCgroup { path, shared } => format!(
            "mkdir {}{}",
            path.display(),
            if *shared {
                "  # if missing; journaled as made only if made here"
            } else {
                "  # made only if missing; its inode journaled"
            }
        ),
        Step::ClaimUplink { name, netns } => format!(
            "ip link set dev {name} netns {netns}  # its MTU, addresses, offloads, qdisc and state journaled first"
        ),
        Step::MoveVf { pf, vf, netns, name } => format!(
            "ip link set dev $(ls /sys/class/net/{pf}/device/virtfn{vf}/net) netns {netns} name {name}"
        ),
        Step::BindVfio { pf, vf } => {
            let d = format!("$(basename $(readlink /sys/class/net/{pf}/device/virtfn{vf}))");
            format!("echo vfio-pci > /sys/bus/pci/devices/{d}/driver_override; echo {d} > /sys/bus/pci/devices/{d}/driver/unbind; echo {d} > /sys/bus/pci/drivers_probe")
        }
        Step::StartBackend { args, netns, log, .. } => format!(
            "ip netns exec {netns} vnetlab {} > {} 2>&1 &  # in its own cgroup",
            args.join(" "),
            log.display()
        ),
        Step::PlaceNapi { dev, cpus, .. } => {
            format!("taskset -pc {cpus} $(pgrep '^napi/{dev}-')")
        }
        Step::StartVm { spec, netns, .. } => format!(
            "ip netns exec {netns} {} &  # in the guest's cgroup",
            crate::guest::qemu::argv(spec).join(" ")
        ),
        Step::WaitVms {
            guests, timeout, ..
        } => format!(
            "# wait up to {} s for the agents of {} to answer on their sockets",
            timeout.as_secs(),
            guests
                .iter()
                .map(|(r, _)| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
