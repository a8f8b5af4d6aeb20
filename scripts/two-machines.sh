#!/usr/bin/env bash
# Two machines on one: (a) a bridge lab with its veth wire and the client in a namespace, beside
# (b) the same lab over an uplink to a "client machine" (a namespace this script makes, m2peer,
# joined by the veth m2up0/m2up1, running `vnetlab serve`). 64K g1 -> client, paced 500 Mb/s and
# unpaced, ABBA twice; prints Gb/s, host CPU per Gb/s and what bound each, then checks the uplink
# came back exactly as it was. On one machine the "client machine" shares this kernel's cores:
# the serve runs on core 0, the lab's host on core 1, and the serve's machine CPU counts both.
# Usage: scripts/two-machines.sh [path/to/vnetlab] [work dir]   (root; removes what it made)
set -u
B=$(realpath "${1:-target/release/vnetlab}")
W=${2:-$(mktemp -d)}
T=two-machines-token
cd "$W" || exit 2
trap 'ip netns del m2peer 2>/dev/null; $B down wa >/dev/null 2>&1; $B down wb >/dev/null 2>&1' EXIT
ip netns add m2peer
ip link add m2up0 type veth peer name m2up1 netns m2peer
ip -n m2peer addr add 10.213.0.2/16 dev m2up1
ip -n m2peer link set m2up1 up; ip -n m2peer link set lo up
# The client machine receives on its own core (0), as a real NIC would on another host.
ip netns exec m2peer sh -c 'echo 1 > /sys/class/net/m2up1/queues/rx-0/rps_cpus'
# The uplink dressed as a user's NIC might be: its own MTU, an address, GRO off, a qdisc, up.
ip link set m2up0 mtu 1400; ip addr add 192.0.2.7/24 dev m2up0; ethtool -K m2up0 gro off
tc qdisc replace dev m2up0 root pfifo limit 77; ip link set m2up0 up
state() { ip -d link show m2up0; ip addr show m2up0; ethtool -k m2up0; tc qdisc show dev m2up0; }
state > before.txt
ip netns exec m2peer taskset -c 0 "$B" serve --bind 10.213.0.2 --allow 10.213.0.0/16 --token $T 2>serve.err &
SP=$!
sleep 1
"$B" up --name wa --mode bridge --guests 1 --subnet 10.214.0.0/16 >/dev/null || exit 1
"$B" up --name wb --mode bridge --guests 1 --uplink m2up0 --client 10.213.0.2 --token $T --host-cpus 1 || exit 1
t() { # lab, label, rate, repeat
  local r=(); [ "$3" != max ] && r=(--rate "$3")
  "$B" test --lab "$1" --from g1 --to client -t TCP_STREAM -m 64K -l 4 --warmup 1 "${r[@]}" --json > "$2-$3-$4.json" || echo "test $2 $3 $4 failed"
}
for rate in 500mbit max; do
  for k in 1 2; do t wa a $rate $k; t wb b $rate $k; t wb b $rate $((k+2)); t wa a $rate $((k+2)); done
done
"$B" down wa >/dev/null; "$B" down wb >/dev/null
kill $SP; wait $SP 2>/dev/null
state > after.txt
python3 - <<'PY'
import json, glob, statistics as st
for lab, name in (("a", "veth wire"), ("b", "uplink + remote serve")):
    for rate in ("500mbit", "max"):
        rs = [json.load(open(f)) for f in sorted(glob.glob(f"{lab}-{rate}-*.json"))]
        f = lambda v: f"{st.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
        print(f"({lab}) {name:22} {rate:8} Gb/s {f([r['throughput_gbps'] for r in rs])}"
              f"  host %/Gb/s {f([r['cpu']['normalized_pct_per_gbps'] for r in rs])}"
              f"  bound {[r['cpu']['bound_by'] for r in rs]}")
PY
if diff before.txt after.txt; then echo "uplink m2up0: identical before and after"; else echo "uplink m2up0 CHANGED"; exit 1; fi
echo "results in $W"
