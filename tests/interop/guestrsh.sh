#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# mpirun's rsh agent for tests/interop/mpi.sh: `guestrsh.sh [ssh options] HOST COMMAND...`.
# HOST = $GUESTRSH_GUEST: COMMAND (the orted command line mpirun builds for a remote shell) runs in
# that interop guest through the harness' 9p command queue (lib/guest.sh guest_spawn/guest_wait),
# in the chroot of the host's root that mpi.sh mounted at $GUESTRSH_ROOT, with a clean environment
# plus the words of $GUESTRSH_ENV. The agent stays until that command ends and returns its exit
# status (its output is printed when it ends: the queue has no streaming). Any other HOST goes to
# tests/consumers/nsrsh.sh (NSRSH_SPEC: the namespace, under `burstctl run`) with the words of
# $GUESTRSH_NS_ENV added to its environment. orted passes its environment on to the ranks it starts,
# so these two variables give each side its own settings, as each host's own configuration would.
# Settings (exported by mpi.sh, inherited through mpirun): INTEROP_RUN (the run directory of the
# harness), GUESTRSH_GUEST, GUESTRSH_ROOT, GUESTRSH_ENV, GUESTRSH_NS_ENV (NAME=VALUE words, no
# quoting inside), GUESTRSH_TIMEOUT (s, default 600).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
args=("$@")
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
host=${1:?guestrsh.sh: no host}
shift
if [[ $host != "${GUESTRSH_GUEST:?guestrsh.sh: GUESTRSH_GUEST not set}" ]]; then
  read -r -a nsenv <<<"${GUESTRSH_NS_ENV:-}"
  exec env "${nsenv[@]}" "$HERE/../consumers/nsrsh.sh" "${args[@]}"
fi
source "$HERE/lib/guest.sh"
: "${INTEROP_RUN:?guestrsh.sh: INTEROP_RUN not set}" "${GUESTRSH_ROOT:?}"
tag=orted.$$.$RANDOM
read -r -a genv <<<"${GUESTRSH_ENV:-}"
genv_q=$(printf "'%s' " "${genv[@]}")
# The queued script (dash, in the guest) writes the command line into the chroot's /tmp and runs it
# there with bash, as a remote login shell would; the here-document is quoted, so nothing in the
# command line is expanded by dash.
id=$(guest_spawn -t "${GUESTRSH_TIMEOUT:-600}" "$host" "cat >$GUESTRSH_ROOT/tmp/$tag.sh <<'GUESTRSH_EOF'
$*
GUESTRSH_EOF
exec chroot $GUESTRSH_ROOT /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp \
  $genv_q/bin/bash /tmp/$tag.sh") || { echo "guestrsh.sh: cannot queue in $host" >&2; exit 255; }
guest_wait "$host" "$id"
