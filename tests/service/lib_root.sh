# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A minimal Debian 12 root with systemd as PID 1, built once with mmdebstrap from
# the host's configured apt mirror and cached (service_root_build); each test run
# boots an overlay of it (the cache stays pristine).
#
#   BURST_TEST_ROOT_CACHE  cache directory (default /var/cache/burst-test)
#   BURST_TEST_MIRROR      apt mirror (default: the host's first "URIs:"/"deb" line)

SERVICE_ROOT_CACHE=${BURST_TEST_ROOT_CACHE:-/var/cache/burst-test}

# What the root holds: systemd, the run-time libraries of burstd, burstctl and the
# provider (what `ldd` lists, plus DPDK's PMD plugins), and the unmodified tools.
SERVICE_ROOT_PACKAGES=(
  systemd systemd-sysv dbus iproute2 procps
  libibverbs1 ibverbs-utils perftest
  libbpf1 libxdp1 libmnl0 libinih1 libcap-ng0 libcap2 liburing2 libsystemd0 libisal2 libnuma1
  libnl-3-200 libnl-route-3-200 libstdc++6
  librte-eal23 librte-ethdev23 librte-mbuf23 librte-mempool23 librte-net23 librte-ring23
  librte-kvargs23 librte-meter23 librte-telemetry23 librte-bus-vdev23 librte-mempool-ring23
  librte-net-af-packet23
)

service_root_mirror() {
  if [[ -n ${BURST_TEST_MIRROR:-} ]]; then echo "$BURST_TEST_MIRROR"; return; fi
  local m
  m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | head -1 | awk '{print $2}')
  [[ -z $m ]] && m=$(grep -hs '^deb ' /etc/apt/sources.list | head -1 | awk '{print $2}')
  echo "${m:-http://deb.debian.org/debian}"
}

# Prints the cached root's directory, building it first when absent (a few minutes
# the first time; the cache key is the package list).
service_root_build() {
  local key dir tmp
  key=$(printf '%s\n' bookworm "${SERVICE_ROOT_PACKAGES[@]}" | sha256sum | cut -c1-12)
  dir=$SERVICE_ROOT_CACHE/debian12-$key
  if [[ -f $dir/.complete ]]; then echo "$dir"; return 0; fi
  mkdir -p "$SERVICE_ROOT_CACHE" || return 1
  tmp=$dir.tmp.$$
  rm -rf "$tmp"
  local pkgs
  pkgs=$(IFS=,; echo "${SERVICE_ROOT_PACKAGES[*]}")
  local t0=$SECONDS
  echo "service: building the Debian 12 root $dir from $(service_root_mirror) (once)" >&2
  if ! timeout 900 mmdebstrap --variant=minbase --include="$pkgs" \
      --customize-hook='chroot "$1" systemctl mask systemd-networkd-wait-online.service getty@.service console-getty.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer || true' \
      bookworm "$tmp" "$(service_root_mirror)" >"$tmp.log" 2>&1; then
    echo "service: mmdebstrap failed (log $tmp.log):" >&2
    tail -20 "$tmp.log" >&2
    rm -rf "$tmp"
    return 1
  fi
  rm -f "$tmp.log"
  touch "$tmp/.complete"
  mv "$tmp" "$dir"
  echo "service: root built in $((SECONDS - t0)) s" >&2
  echo "$dir"
}
