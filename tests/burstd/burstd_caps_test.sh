#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd's privileges and control-socket policy (loopback backend; root):
#   - default: every thread keeps exactly the loopback set of privileges.h
#     (none: CapPrm = CapEff = CapBnd = 0), nothing inheritable or ambient,
#     NoNewPrivs 1, the "capabilities after start-up: none" log line;
#   - drop_caps = off: the full set burstd started with, NoNewPrivs 0;
#   - socket_group = nogroup, socket_mode = 0660: the file is root:nogroup 660,
#     `nobody` with group nogroup connects, a user outside the group cannot;
#     socket_owner = nobody, socket_mode = 0600: only nobody connects; the
#     default (root:root 0666) admits everyone;
#   - an unknown socket_owner / socket_group fails start-up naming the key and
#     leaves no socket behind;
#   - burstd started as an ordinary user (nobody) works: no capabilities,
#     NoNewPrivs 1, status over its socket, SIGTERM exits 0.
# Usage: burstd_caps_test.sh BURSTD BURSTCTL
# Exit: 0 pass, 1 fail, 77 skipped (not root, setpriv missing).
set -uo pipefail

BURSTD=${1:?usage: burstd_caps_test.sh BURSTD BURSTCTL}
BURSTCTL=${2:?}
. "$(dirname "$0")/caps_lib.sh"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
log() { echo "--- $*"; }
[[ $(id -u) -eq 0 ]] || skip "needs root (capability sets, other users' access to the socket)"
command -v setpriv >/dev/null || skip "missing setpriv (apt-get install util-linux)"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null || skip "no user nobody / group nogroup"
NOBODY_UID=$(id -u nobody)
NOGROUP_GID=$(getent group nogroup | cut -d: -f3)
OTHER_GID=65533  # a group nobody is not in (no name needed)

TMP=$(mktemp -d /tmp/burstd-caps-test.XXXXXX)
chmod 755 "$TMP"  # other users reach the sockets inside
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM

as_user() {  # UID GID CMD...: CMD as that user, no supplementary groups
  local uid=$1 gid=$2
  shift 2
  setpriv --reuid "$uid" --regid "$gid" --clear-groups "$@"
}

# start NAME [CONFIG-LINE...]: burstd --backend loopback on $TMP/NAME.sock; BPID.
start() {
  local name=$1 i
  shift
  printf '%s\n' "backend = loopback" "workers = 2" "$@" >"$TMP/$name.conf"
  "$BURSTD" --config "$TMP/$name.conf" --socket "$TMP/$name.sock" >"$TMP/$name.log" 2>&1 &
  BPID=$!
  PIDS+=("$BPID")
  for ((i = 0; i < 100; i++)); do
    timeout 5 "$BURSTCTL" --socket "$TMP/$name.sock" status >/dev/null 2>&1 && return 0
    kill -0 "$BPID" 2>/dev/null || { cat "$TMP/$name.log"; fail "$name: burstd exited"; }
    sleep 0.1
  done
  cat "$TMP/$name.log"
  fail "$name: burstd did not come up"
}

stop() {  # SIGTERM, exit 0 within 10 s
  kill -TERM "$BPID"
  local i
  for ((i = 0; i < 100; i++)); do
    kill -0 "$BPID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$BPID" 2>/dev/null && fail "burstd did not stop within 10 s"
  wait "$BPID"
  local rc=$?
  [[ $rc == 0 ]] || fail "burstd exit $rc after SIGTERM"
}

can_connect() {  # UID GID SOCKET
  as_user "$1" "$2" timeout 10 "$BURSTCTL" --socket "$3" status >"$TMP/connect.out" 2>&1
}

log "default: only the loopback set is kept, in every thread"
want=$(caps_expected)  # loopback: none
start drop
caps_check "$BPID" "$want" "$want" 1 || { cat "$TMP/drop.log"; fail "capability sets after start-up"; }
grep "capabilities after start-up:" "$TMP/drop.log" || fail "no 'capabilities after start-up' line"
grep -q "capabilities after start-up: $(caps_names "$want")\$" "$TMP/drop.log" ||
  fail "the log line does not say $(caps_names "$want")"
stop

log "drop_caps = off keeps the full set"
start keep "drop_caps = off"
caps_check "$BPID" "$(caps_self CapEff)" "$(caps_self CapBnd)" 0 || fail "drop_caps = off dropped something"
grep -q "capabilities after start-up: all kept (drop_caps = off" "$TMP/keep.log" ||
  { cat "$TMP/keep.log"; fail "no drop_caps = off line"; }

log "default socket policy: root:root 0666, every user connects"
[[ $(stat -c '%U:%G %a' "$TMP/keep.sock") == "root:root 666" ]] ||
  fail "default socket $(stat -c '%U:%G %a' "$TMP/keep.sock"), want root:root 666"
can_connect "$NOBODY_UID" "$OTHER_GID" "$TMP/keep.sock" || fail "nobody cannot connect to a 0666 socket: $(cat "$TMP/connect.out")"
stop

log "socket_group = nogroup, socket_mode = 0660"
start group "socket_group = nogroup" "socket_mode = 0660"
got=$(stat -c '%u:%g %a' "$TMP/group.sock")
[[ $got == "0:$NOGROUP_GID 660" ]] || fail "socket is $got, want 0:$NOGROUP_GID 660"
can_connect "$NOBODY_UID" "$NOGROUP_GID" "$TMP/group.sock" ||
  fail "nobody:nogroup cannot connect: $(cat "$TMP/connect.out")"
can_connect "$NOBODY_UID" "$OTHER_GID" "$TMP/group.sock" && fail "a user outside nogroup connected"
grep -q "cannot connect" "$TMP/connect.out" || fail "refusal message: $(cat "$TMP/connect.out")"
echo "outside the group: $(head -1 "$TMP/connect.out")"
stop
[[ -e $TMP/group.sock ]] && fail "the socket was not removed at stop"

log "socket_owner = nobody (by uid), socket_mode = 0600"
start owner "socket_owner = $NOBODY_UID" "socket_mode = 0600"
got=$(stat -c '%u:%g %a' "$TMP/owner.sock")
[[ $got == "$NOBODY_UID:0 600" ]] || fail "socket is $got, want $NOBODY_UID:0 600"
can_connect "$NOBODY_UID" "$OTHER_GID" "$TMP/owner.sock" || fail "the owner cannot connect: $(cat "$TMP/connect.out")"
can_connect 65533 "$NOGROUP_GID" "$TMP/owner.sock" && fail "another user connected to a 0600 socket"
stop

log "unknown owner / group: start-up fails naming the key"
for kv in "socket_owner = nosuchuser-burst" "socket_group = nosuchgroup-burst"; do
  key=${kv%% =*}
  printf '%s\n' "backend = loopback" "$kv" >"$TMP/bad.conf"
  timeout 20 "$BURSTD" --config "$TMP/bad.conf" --socket "$TMP/bad.sock" >"$TMP/bad.log" 2>&1
  rc=$?
  [[ $rc == 1 ]] || { cat "$TMP/bad.log"; fail "$kv: exit $rc, want 1"; }
  grep -q "'$kv': no such" "$TMP/bad.log" || { cat "$TMP/bad.log"; fail "$kv: the message does not name $key"; }
  tail -1 "$TMP/bad.log"
  [[ -e $TMP/bad.sock ]] && fail "$kv: a socket was left behind"
done

log "burstd as an ordinary user (nobody)"
mkdir "$TMP/nobody" && chown "$NOBODY_UID:$NOGROUP_GID" "$TMP/nobody"
printf '%s\n' "backend = loopback" >"$TMP/nobody.conf"
# setpriv itself in the background (not as_user: $! would be a subshell's pid).
setpriv --reuid "$NOBODY_UID" --regid "$NOGROUP_GID" --clear-groups "$BURSTD" \
  --config "$TMP/nobody.conf" --socket "$TMP/nobody/burstd.sock" >"$TMP/nobody.log" 2>&1 &
BPID=$!
PIDS+=("$BPID")
for ((i = 0; i < 100; i++)); do
  can_connect "$NOBODY_UID" "$NOGROUP_GID" "$TMP/nobody/burstd.sock" && break
  kill -0 "$BPID" 2>/dev/null || { cat "$TMP/nobody.log"; fail "burstd as nobody exited"; }
  sleep 0.1
done
can_connect "$NOBODY_UID" "$NOGROUP_GID" "$TMP/nobody/burstd.sock" ||
  { cat "$TMP/nobody.log"; fail "burstd as nobody did not come up"; }
caps_check "$BPID" 0000000000000000 "$(caps_self CapBnd)" 1 || fail "burstd as nobody"
grep "capabilities after start-up: none" "$TMP/nobody.log" || { cat "$TMP/nobody.log"; fail "no capability line as nobody"; }
stop
echo "PASS"
