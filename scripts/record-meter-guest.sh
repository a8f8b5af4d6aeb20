#!/usr/bin/env bash
# Records the meter on a second kind of kernel for tests/fixtures/meter: Debian's generic kernel
# (the one `vnetlab guest-image` fetches: VIRT_CPU_ACCOUNTING_GEN, SCHEDSTATS, no paravirt steal
# accounting, no /proc/config.gz) booted under QEMU with two vCPUs. With `nohz_full=1` its CPU 1
# keeps exact (virt-gen) accounting, CPU 0 counts ticks. In the guest: cgroup v2 only, a shell
# loop loading the CPUs, `vnetlab meter --machine --record` through /proc/schedstat (SRC=schedstat)
# or cgroup v2's sum (SRC=v2); the recording comes back over the serial console.
# Usage: scripts/record-meter-guest.sh OUT.rec [schedstat|v2] [extra kernel args]
set -euo pipefail
out=$1; src=${2:-schedstat}; extra=${3:-nohz_full=1}
B=${VNETLAB:-target/release/vnetlab}
img=$($B guest-image | awk '/^kernel/{k=$2} /^initrd/{i=$2} END{print k" "i}')
kernel=${img% *}; initrd=${img#* }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cat > "$work/rec" <<SH
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
/bin/busybox mkdir -p /sys/fs/cgroup /tmp; mount -t cgroup2 none /sys/fs/cgroup
(while :; do :; done) & (while :; do /bin/busybox usleep 3000; done) &
VNETLAB_SCHED_SOURCE=$src /bin/vnetlab meter --machine -l 2 --record /tmp/m.rec >/dev/null 2>&1
echo '=====BEGIN'; cat /tmp/m.rec; echo '=====END'
poweroff -f
SH
"$(dirname "$0")/initrd-with.py" "$initrd" "$work/rec" "$work/initrd"
timeout 300 qemu-system-x86_64 -machine q35 -accel tcg -smp 2 -m 512 -nographic -no-reboot \
  -kernel "$kernel" -initrd "$work/initrd" \
  -append "console=ttyS0 rdinit=/rec quiet $extra" > "$work/console" 2>&1 || true
tr -d '\r' < "$work/console" | sed -n '/=====BEGIN/,/=====END/p' | sed '1d;$d' > "$out"
[ -s "$out" ] || { echo "no recording came back; the console said:"; tail -20 "$work/console"; exit 1; }
echo "recorded $out"
