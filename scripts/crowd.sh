#!/usr/bin/env bash
# The crowd the tests run beside, by hand: a farm host's other tenants (light tasks, half asleep
# on a timer and half blocked, in a cgroup of their own, and a CPU hog at 30 % of each core).
#   scripts/crowd.sh start [TASKS]   starts it in the background (default 10000 tasks)
#   scripts/crowd.sh stop            ends it; its tasks die with it, its cgroup is removed
set -euo pipefail
bin=${VNETLAB:-$(dirname "$0")/../target/release/vnetlab}
pidfile=${CROWD_PIDFILE:-/run/vnetlab-crowd.pid}
case "${1:-}" in
  start)
    [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && { echo "crowd.sh: a crowd is running (pid $(cat "$pidfile")): stop it first" >&2; exit 2; }
    cores=$(seq -s, 0 $(( $(nproc) - 1 )))
    out=$(mktemp)
    setsid "$bin" bench crowd --tasks "${2:-10000}" --hog-pct 30 --hog-cores "$cores" </dev/null >"$out" 2>&1 &
    echo $! > "$pidfile"
    # Ready once it says so (10,000 tasks take some seconds to start), or gone with its reason.
    for _ in $(seq 600); do grep -q running "$out" && break; kill -0 "$!" 2>/dev/null || { cat "$out" >&2; rm -f "$out" "$pidfile"; exit 1; }; sleep 0.2; done
    rm -f "$out"
    echo "crowd.sh: crowd started (pid $!)";;
  stop)
    [ -s "$pidfile" ] || { echo "crowd.sh: no crowd is running" >&2; exit 0; }
    pid=$(cat "$pidfile"); kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile"; echo "crowd.sh: crowd stopped";;
  *) echo "usage: scripts/crowd.sh start [TASKS] | stop" >&2; exit 2;;
esac
