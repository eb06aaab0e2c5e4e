#!/bin/bash
# The main demo of burst. Today (transport core only) it runs two burst
# transport engines in one process joined by the loopback datapath: RDMA WRITE,
# READ and SEND with every byte verified, then the same with 1% frame loss
# (Go-Back-N retransmission at work). The AF_XDP network demo replaces this
# when the datapath lands.
# Usage (as root, on Debian 12):  ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

./scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build build/default -j"$JOBS" --target burst-xfer

X=build/default/tools/burst-xfer/burst-xfer
set -x
$X --backend loopback --op write --size 1048576 --qps 2 --mtu 4096 --duration 3 --verify
$X --backend loopback --op read  --size 65536   --qps 4 --mtu 4096 --duration 3 --verify
$X --backend loopback --op send  --size 4096    --qps 1 --mtu 1024 --duration 3 --verify
$X --backend loopback --op write_imm --size 100000 --qps 2 --mtu 1024 --duration 3 --verify --loss 0.01
