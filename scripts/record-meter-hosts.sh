#!/usr/bin/env bash
# Records the production hosts the meter's replay tests read (tests/fixtures/meter-hosts): a
# QEMU guest of many vCPUs (default 64, TCG) boots Debian's generic kernel, makes by hand the
# cgroup v2 trees (cpu controller on) of a systemd host with a QEMU VM under
# machine.slice/machine-qemu…scope and of a Kubernetes node (kubepods.slice/…pod<uid>.slice/
# cri-containerd-<id>.scope), each beside a lab guest `vnetlab/l/g1` in a network namespace of
# its own. CPU 0 (the lab's host core) runs three loops: g1's, a second of g1's that leaves its
# cgroup for the root ("the stray"), and another tenant's (the VM's or the pod's), each pinned
# again after every move (a cpuset-enabled cgroup resets a task's affinity when it joins). A crowd of
# light tasks (half asleep on a timer, half blocked on a FIFO) sits in a cgroup of its own.
# For each tree and crowd (100 and 10,000 tasks) the guest copies what /proc, /sys and the
# cgroups say at three instants: e0 (the stray still in g1), e1 (one second later, the stray
# just moved out), e2 (three seconds later). The crowd's own /proc/PID/stat, which do not change,
# go once in common/. Each set comes back over the serial console as a .tar.gz.
# Usage: scripts/record-meter-hosts.sh OUTDIR [CPUS]    (about 15 minutes on 2 host cores)
# The guest traces its script on the console; QUIET= (empty) also shows the kernel booting.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/record-meter-hosts.sh OUTDIR [CPUS]" >&2; exit 2; }
out=$1; cpus=${2:-64}
mkdir -p "$out"
B=${VNETLAB:-target/release/vnetlab}
img=$($B guest-image | awk '/^kernel/{k=$2} /^initrd/{i=$2} END{print k" "i}')
kernel=${img% *}; initrd=${img#* }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cat > "$work/rec" <<'SH'
#!/bin/sh
set -x
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /sys/fs/cgroup /tmp /out; mount -t tmpfs tmp /tmp; mount -t cgroup2 none /sys/fs/cgroup
C=/sys/fs/cgroup
echo "+cpu +cpuset" > $C/cgroup.subtree_control
mkfifo /tmp/fifo
loop='while :; do :; done'
# g1's loop and the stray: two loops pinned to CPU 0 in a network namespace of their own.
unshare -n sh -c "taskset -c 0 sh -c '$loop' & echo \$! > /tmp/g1; taskset -c 0 sh -c '$loop' & echo \$! > /tmp/stray; wait" </dev/null >/dev/null 2>&1 &
LABSH=$!
taskset -c 0 sh -c "$loop" </dev/null >/dev/null 2>&1 &
OTHER=$!
while [ ! -s /tmp/stray ] || [ ! -s /tmp/g1 ]; do sleep 0.1; done
G1=$(cat /tmp/g1); STRAY=$(cat /tmp/stray)

mk() { for d in "$@"; do mkdir -p "$C/$d"; done; }
enable() { for d in "$@"; do echo "+cpu +cpuset" > "$C/$d/cgroup.subtree_control"; done; }
# copy DEST FILE...: each file under DEST at its own path (proc files have no size, so cp, not tar)
copy() { d=$1; shift; (cd / && cp --parents "$@" "$d/" 2>/dev/null) || true; }
cgfiles() { (cd / && find sys/fs/cgroup \( -name cgroup.procs -o -name cgroup.threads -o -name cpu.stat -o -name cgroup.controllers -o -name cgroup.subtree_control -o -name cpuset.cpus.effective \)); }
kthreads() { cat /proc/2/task/2/children; }

# snap DIR: the counters first (one process, so the instant is tight), then the rest.
snap() {
  d=$1; mkdir -p "$d"
  copy "$d" proc/uptime proc/stat proc/schedstat sys/devices/system/cpu/cpu*/cpuidle/state*/time \
    $(cgfiles | grep 'cpu.stat$') proc/$G1/stat proc/$STRAY/stat proc/$OTHER/stat proc/$LABSH/stat
  copy "$d" proc/softirqs proc/interrupts proc/mounts proc/2/task/2/children $(cgfiles | grep -v 'cpu.stat$') \
    sys/devices/system/cpu/online sys/devices/system/cpu/cpuidle/current_driver
  copy "$d" $(for p in $G1 $STRAY $OTHER $LABSH $(kthreads); do
    for f in stat status comm schedstat cgroup; do echo proc/$p/$f; done; done)
  for p in $G1 $STRAY $OTHER $LABSH; do
    mkdir -p "$d/proc/$p/ns"; ln -s "$(readlink /proc/$p/ns/net)" "$d/proc/$p/ns/net"
  done
}

# record NAME CROWDDIR: one set, packed into /out/NAME.tar.gz.
record() {
  s=/tmp/set/$1; rm -rf /tmp/set; mkdir -p $s/common
  copy $s/common $(sed 's|^|proc/|; s|$|/stat|' $C/$2/cgroup.procs)
  sleep 2; snap $s/e0
  sleep 1; echo $STRAY > $C/cgroup.procs; pin $STRAY; snap $s/e1
  sleep 3; snap $s/e2
  echo $STRAY > $C/vnetlab/l/g1/cgroup.procs; pin $STRAY
  { echo "cpus $(nproc)"; echo "g1 $G1"; echo "stray $STRAY"; echo "other $OTHER"; echo "labsh $LABSH"
    echo "netns $(readlink /proc/$G1/ns/net)"; echo "crowd $2 $(wc -l < $C/$2/cgroup.procs)"; } > $s/meta
  (cd $s && tar cf - . | gzip > /out/$1.tar.gz)
  echo "recorded $1" > /dev/console
}

# crowd CROWDDIR N: grows the crowd in CROWDDIR to N tasks (untraced: the console is slow).
crowd() {
  set +x
  have=$(wc -l < $C/$1/cgroup.procs)
  (echo 0 > $C/$1/cgroup.procs; i=$have
   while [ $i -lt $2 ]; do
     if [ $((i % 2)) = 0 ]; then sleep 100000 </dev/null >/dev/null 2>&1 & else cat /tmp/fifo >/dev/null 2>&1 & fi
     i=$((i + 1))
   done)
  # The subshell has left; its children stay.
  while [ "$(wc -l < $C/$1/cgroup.procs)" -lt $2 ]; do sleep 0.2; done
  set -x
}

# lab OTHERDIR: the lab's loops into g1, the other tenant's into OTHERDIR.
lab() {
  mk vnetlab/l/g1; enable vnetlab vnetlab/l
  for p in $LABSH $G1 $STRAY; do echo $p > $C/vnetlab/l/g1/cgroup.procs; done
  echo $OTHER > "$C/$1/cgroup.procs"
  pin $G1 $STRAY $OTHER
}

# pin PID...: back on CPU 0 (a move into a cpuset-enabled cgroup resets the affinity).
pin() { for p in "$@"; do taskset -p -c 0 $p >/dev/null; done; }

# The systemd host: the crowd grows from 100 to 10,000 in a service.
VM='machine.slice/machine-qemu\x2d1\x2dvm1.scope'
CROWD=system.slice/crowd.service
mk init.scope system.slice user.slice machine.slice $CROWD "$VM"
enable system.slice machine.slice
lab "$VM"
crowd $CROWD 100; record systemd-100 $CROWD
crowd $CROWD 10000; record systemd-10000 $CROWD

# The Kubernetes node, the same 10,000 tasks moved into a best-effort pod, then 100 of them.
POD=kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b9e3c1a_7f2d_4c5e_9a8b_1c2d3e4f5a6b.slice
BE=kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3c4d5e6f_1a2b_4c3d_8e9f_0a1b2c3d4e5f.slice/cri-containerd-9a8b7c6d5e4f.scope
mk "$POD/cri-containerd-5f0c9e8d7b6a.scope" "$BE"
enable kubepods.slice kubepods.slice/kubepods-burstable.slice kubepods.slice/kubepods-besteffort.slice "$POD" "${BE%/*}"
set +x
while read -r p; do echo $p > "$C/$BE/cgroup.procs"; done < $C/$CROWD/cgroup.procs
set -x
mk system.slice/kubelet.service system.slice/containerd.service
lab "$POD/cri-containerd-5f0c9e8d7b6a.scope"
rmdir "$C/$VM" $C/machine.slice $C/$CROWD
record kube-10000 "$BE"
set +x
n=0; while read -r p; do n=$((n + 1)); [ $n -gt 100 ] && kill -9 $p; done < "$C/$BE/cgroup.procs"
set -x
i=0; while [ "$(wc -l < "$C/$BE/cgroup.procs")" -gt 100 ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
record kube-100 "$BE"

set +x
for f in /out/*.tar.gz; do echo "=====FILE ${f##*/}"; base64 "$f"; echo "=====END"; done
poweroff -f
SH
"$(dirname "$0")/initrd-with.py" "$initrd" "$work/rec" "$work/initrd"
echo "booting a $cpus-vCPU guest under TCG (several minutes)..." >&2
timeout 3600 qemu-system-x86_64 -machine q35 -accel tcg -smp "$cpus" -m 4096 -nographic -no-reboot \
  -kernel "$kernel" -initrd "$work/initrd" \
  -append "console=ttyS0 rdinit=/rec ${QUIET-quiet}" > "$work/console" 2>&1 || true
python3 - "$work/console" "$out" <<'PY'
import sys, base64, os
text = open(sys.argv[1], errors="replace").read().replace("\r", "")
got, name, body = 0, None, []
for line in text.splitlines():
    if line.startswith("=====FILE "):
        name, body = line.split()[1], []
    elif line == "=====END" and name:
        open(os.path.join(sys.argv[2], name), "wb").write(base64.b64decode("".join(body)))
        got, name = got + 1, None
    elif name:
        body.append(line.strip())
if got == 0:
    sys.exit("no recording came back; the console said:\n" + "\n".join(text.splitlines()[-20:]))
print(f"recorded {got} sets in {sys.argv[2]}")
PY
