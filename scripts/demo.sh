#!/usr/bin/env bash
# The demo: experiments/quick.toml (each datapath, one guest, TCP_STREAM at four sizes), stored in
# vnetlab.sqlite, summarised on the terminal and drawn in out/run-N.html.
set -euo pipefail
B=${1:-target/release/vnetlab}
$B run experiments/quick.toml --db vnetlab.sqlite --out out
