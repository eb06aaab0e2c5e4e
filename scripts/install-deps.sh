#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Installs every Debian 12 package that building, testing and demonstrating burst needs.
# Run as root on a fresh machine. Idempotent.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev llvm           # fuzz preset (libFuzzer), sanitizers
  libgtest-dev libgmock-dev googletest    # unit and engine tests
  libbenchmark-dev                        # micro-benchmarks
  libisal-dev zlib1g-dev                  # ICRC: ISA-L crc32, cross-checked against zlib
  valgrind                                # instruction counts (callgrind) in bench/
  libcli11-dev                            # command lines of the tools
  libxdp-dev libbpf-dev                   # AF_XDP datapath, XDP steering program
  libmnl-dev                              # rtnetlink: addresses, routes, neighbours
  iproute2 util-linux procps ethtool      # network namespaces and veth pairs in tests
  iputils-ping netcat-openbsd iperf3      # kernel traffic alongside RDMA in tests
  libibverbs-dev ibverbs-utils perftest rdma-core   # verbs provider; unmodified verbs tools in tests
  python3-pyverbs                         # rdma-core's own tests (it ships them) against burst0
  ucx-utils openmpi-bin netpipe-openmpi   # consumers over burst in tests: UCX, Open MPI + NetPIPE
  rdmacm-utils qperf libfabric-bin librdmacm-dev  # rdma_cm consumers: rping, ucmatose, udaddy, qperf -cm1, fi_pingpong; bench/cm_rate
  libinih-dev nlohmann-json3-dev libsystemd-dev     # burstd config, burstctl --json, sd_notify
  libcap-ng-dev                           # burstd drops capabilities after start-up
  liburing-dev                            # burstd's control-thread loop (io_uring; epoll fallback)
  qemu-system-x86 busybox-static cpio kmod ibverbs-providers rdmacm-utils tcpdump  # rxe guests (interop)
  dpdk-dev libdpdk-dev                    # DPDK datapath backend (22.11)
  python3-matplotlib                      # bench/: plots in docs/benchmarks.md
  mmdebstrap systemd-container            # service test: burstd@.service in a Debian 12 root booted by systemd-nspawn
  debhelper dpkg-dev lintian              # the Debian package: scripts/build-deb.sh, ctest package.deb
  xdp-tools                               # interop.xdp_share: xdp-filter beside burst in libxdp's dispatcher
  dkms dh-dkms                            # kmod.dkms; the burst-dkms package (dh-sequence-dkms)
  linux-source-6.1                        # kmod.checkpatch: scripts/checkpatch.pl (extracted at test time into a cache)
)

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi

# The module's build (kmod.build, kmod.dkms, interop.kmod): the headers of the kernel the interop
# guests boot, i.e. what linux-image-amd64 depends on (as tests/interop/lib/guest.sh picks it).
guest_kernel=$(apt-cache depends linux-image-amd64 2>/dev/null |
  sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -1)
if [[ -z $guest_kernel ]]; then
  apt-get update -qq
  guest_kernel=$(apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -1)
fi
[[ -n $guest_kernel ]] && PKGS+=("linux-headers-$guest_kernel")

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
