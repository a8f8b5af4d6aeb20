#!/usr/bin/env bash
# The demo until experiments exist: a 2-guest bridge lab, its status, guest → client reachability, removal.
set -euo pipefail
B=${1:-target/release/vnetlab}
trap '$B down demo >/dev/null 2>&1 || true' EXIT
$B up --name demo --mode bridge --guests 2
echo
$B status demo
echo
$B probe --lab demo
echo
$B down demo
trap - EXIT
