#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# mpirun's rsh agent for the consumer tests: `nsrsh.sh [ssh options] HOST COMMAND...` runs
# COMMAND in the network namespace HOST under `burstctl run`, so orted and the ranks it starts
# see that namespace's burst0. NSRSH_BURSTCTL is burstctl; NSRSH_SPEC lists
# "NAMESPACE:NETDEV:SOCKET" words (set by consumers_test.sh, inherited through mpirun).
set -u
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
host=${1:?nsrsh.sh: no host}
shift
for w in ${NSRSH_SPEC:?nsrsh.sh: NSRSH_SPEC not set}; do
  IFS=: read -r ns dev sock <<<"$w"
  if [[ $ns == "$host" ]]; then
    exec nsenter --net=/run/netns/"$ns" env TMPDIR="${TMPDIR:-/tmp}" "${NSRSH_BURSTCTL:?}" run --netdev "$dev" --socket "$sock" \
      -- /bin/bash -c "$*"
  fi
done
echo "nsrsh.sh: unknown host '$host' (not in NSRSH_SPEC)" >&2
exit 1
