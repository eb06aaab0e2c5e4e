#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Issue 12: an unprivileged client must not make burstd (root) reach the memory
# of a setuid-root program that inherited its pid. Two burstd over AF_XDP, one
# per private network namespace, joined by a veth pair:
#   A: a0 10.48.0.1/24 (attacker, as nobody)  <--veth-->  B: b0 10.48.0.2/24 (peer)
# A root-only secret (4096 hex characters, mode 0600) is read by a setuid-root
# copy of setuid_helper into a page at a fixed address. mem_attack (see its top
# comment) runs the attack in two orders:
#   before: A registers an MR over its own page at that address, forks C, execs the helper;
#   after:  A forks C and execs the helper; C registers the MR over its own page
#           at that address once the helper holds the secret there.
# C keeps the connection (burstd knows it by A's pid), posts an RDMA WRITE of its
# own from the MR to the peer; the peer RDMA READs the MR and RDMA WRITEs a marker.
# The test passes only when, for both orders:
#   - no 16-byte piece of the secret reached the peer (READ buffer, the sink C
#     wrote to, everything the peer and the attacker printed);
#   - the helper's page is unchanged ("helper: memory intact");
#   - the peer's READ and WRITE completed with an error status;
#   - C's work request after the exec completed in error (or could not be
#     posted / polled, or its QP is in error or no longer known to burstd).
# Each order ends with one summary line; the verdict is per order.
# ATTACK_CHECK_MS (optional): burstd's client_check_ms. The default (200 ms)
# revokes the exec'd client before the peer acts (the peer's requests then meet
# a QP in ERR); 10000 leaves the client unrevoked while the peer acts, so only
# the kernel's binding of the client's /proc/self/mem to its old address space
# stands between the peer and the helper (remote access error NAKs).
# Usage: attack_test.sh BURSTCTL BURSTD MEM_ATTACK SETUID_HELPER XSK_RAW
# Exit: 0 pass, 1 fail (the attack worked, or setup failed), 77 skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"

BURSTCTL=${1:?usage: attack_test.sh BURSTCTL BURSTD MEM_ATTACK SETUID_HELPER XSK_RAW}
BURSTD=${2:?}
ATTACK=${3:?}
HELPER_BUILT=${4:?}
XSK=${5:?}
ADDR=0x6f0000000000  # the secret page (and the attacker's MR)
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
SECONDS=0

netns_require_root "network namespaces, veth, XDP, a setuid-root helper"
netns_require_tools "iproute2 util-linux coreutils diffutils" ip nsenter timeout setpriv cmp od
ldconfig -p | grep 'libibverbs\.so\.1 ' >/dev/null || skip "libibverbs missing (apt-get install libibverbs1)"
[[ -d /sys/class/infiniband ]] &&
  skip "this kernel has RDMA support: libibverbs lists devices over netlink and ignores SYSFS_PATH"
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || skip "no user nobody / group nogroup"
for b in "$BURSTCTL" "$BURSTD" "$ATTACK" "$HELPER_BUILT" "$XSK"; do
  [[ -x $b ]] || fail "$b not built"
done
probe=$("$XSK" --mode probe 2>&1)
rc=$?
[[ $rc -eq 77 ]] && skip "$probe"
[[ $rc -eq 0 ]] || fail "xsk-raw --mode probe: $probe"
# nobody must reach the binaries (and the provider next to them).
"${NOBODY[@]}" test -x "$ATTACK" ||
  skip "user nobody cannot execute $ATTACK (a directory on its path is not traversable)"
"${NOBODY[@]}" test -r "$(dirname "$BURSTCTL")" ||
  skip "user nobody cannot read the build tree ($(dirname "$BURSTCTL"))"

netns_pair burst-sec
SUID_DIR=
C_PIDS=()
security_cleanup() {
  local p
  for p in "${C_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  [[ -n $SUID_DIR ]] && rm -rf "$SUID_DIR"
  netns_cleanup
}
trap security_cleanup EXIT
# burstctl run puts its sysfs tree under $TMPDIR (= $TMP), the sockets are there:
# nobody traverses it (the secret lives in a root-only directory below).
chmod 0755 "$TMP"

# The setuid-root helper: a root-owned copy in a root-owned directory that nobody
# can traverse, on a filesystem that honours setuid; removed on every exit.
for base in /tmp /var/tmp "$(dirname "$HELPER_BUILT")"; do
  findmnt -n -o OPTIONS -T "$base" 2>/dev/null | tr ',' '\n' | grep -qx nosuid && continue
  "${NOBODY[@]}" test -x "$base" || continue
  SUID_DIR=$(mktemp -d "$base/burst-suid.XXXXXX") || continue
  break
done
[[ -n $SUID_DIR ]] || skip "no directory on a filesystem without nosuid that nobody can traverse"
chmod 0755 "$SUID_DIR"
HELPER=$SUID_DIR/setuid_helper
install -o root -g root -m 4755 "$HELPER_BUILT" "$HELPER" || fail "cannot install the setuid helper"
mkdir -m 0777 "$TMP/suid-probe"
probe=$("${NOBODY[@]}" "$HELPER" /nonexistent "$TMP/suid-probe" "$ADDR" 2>&1)
grep -q "effective uid 0" <<<"$probe" ||
  skip "the setuid bit is not honoured for nobody here (nosuid mount or no_new_privs): $probe"

# The secret: root only.
SECRET_DIR=$TMP/root-only
mkdir -m 0700 "$SECRET_DIR"
SECRET=$SECRET_DIR/secret
head -c 2048 /dev/urandom | od -An -v -tx1 | tr -d ' \n' >"$SECRET"
chmod 0600 "$SECRET"
[[ $(stat -c %s "$SECRET") -eq 4096 ]] || fail "could not write the secret"
"${NOBODY[@]}" cat "$SECRET" >/dev/null 2>&1 && fail "nobody can read the secret file"
# Its 256 16-byte pieces, for the leak search.
fold -w 16 "$SECRET" >"$SECRET_DIR/pieces"
log "the secret (root only, mode 0600) begins \"$(head -c 48 "$SECRET")\""

CMD_ENV=()
if [[ -n ${BURST_TEST_PRELOAD:-} ]]; then
  # burstctl run preloads its shim: keep it behind the sanitizer runtime.
  CMD_ENV=(sh -c 'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" ASAN_OPTIONS=detect_leaks=0 exec "$@"'
           "$BURST_TEST_PRELOAD")
fi

ip link add a0 netns "$NA" type veth peer name b0 netns "$NB" || fail "cannot create veth pair"
inA ip link set lo up
inB ip link set lo up
inA ip addr add 10.48.0.1/24 dev a0
inB ip addr add 10.48.0.2/24 dev b0
inA ip link set a0 up
inB ip link set b0 up
for _ in $(seq 50); do
  inA ip link show a0 | grep -q LOWER_UP && inB ip link show b0 | grep -q LOWER_UP && break
  sleep 0.1
done
inA ping -c1 -W2 10.48.0.2 >/dev/null || fail "no IP connectivity over the veth"

BURSTD_CONF=()
if [[ -n ${ATTACK_CHECK_MS:-} ]]; then
  echo "client_check_ms = $ATTACK_CHECK_MS" >"$TMP/burstd.conf"
  BURSTD_CONF=(--config "$TMP/burstd.conf")
  echo "burstd: client_check_ms = $ATTACK_CHECK_MS"
fi
start_burstd() {  # NS DEV SOCK LOG
  nsenter --net=/run/netns/"$1" "$BURSTD" "${BURSTD_CONF[@]}" --backend xdp --netdev "$2" \
    --workers 1 --socket "$3" >"$4" 2>&1 &
  BG_PIDS+=($!)
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -S $3 ]] && timeout 5 "$BURSTCTL" --socket "$3" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$4"
  fail "burstd in $1 did not come up"
}
start_burstd "$NA" a0 "$TMP/a.sock" "$TMP/burstd-a.log"
start_burstd "$NB" b0 "$TMP/b.sock" "$TMP/burstd-b.log"

# pieces_in FILE...: how many of the secret's 16-byte pieces occur in the files.
pieces_in() {
  cat "$@" 2>/dev/null | grep -a -o -F -f "$SECRET_DIR/pieces" | sort -u | wc -l
}
# bytes_equal FILE: bytes of FILE equal to the secret at the same offset.
bytes_equal() {
  [[ -f $1 ]] || { echo 0; return; }
  local d
  d=$(cmp -l "$1" "$SECRET" 2>/dev/null | wc -l)
  echo $((4096 - d))
}
status_of() {  # FILE KEY: the word after KEY=
  [[ -f $1 ]] || { echo "none"; return; }
  tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1
}
is_error_completion() { [[ $1 == IBV_WC_* && $1 != IBV_WC_SUCCESS ]]; }

VERDICTS=()
run_order() {
  local order=$1
  local D=$TMP/run-$order
  mkdir -m 0755 "$D"
  chown nobody:nogroup "$D"
  log "order $order: the peer in B, the attacker in A as nobody"
  nsenter --net=/run/netns/"$NB" env TMPDIR="$TMP" timeout 50 "$BURSTCTL" run --netdev b0 \
    --socket "$TMP/b.sock" -- "${CMD_ENV[@]}" "$ATTACK" peer --dir "$D" >"$D/peer.out" 2>&1 &
  local peer=$!
  BG_PIDS+=("$peer")
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 55 "$BURSTCTL" run --netdev a0 \
    --socket "$TMP/a.sock" -- "${NOBODY[@]}" "${CMD_ENV[@]}" "$ATTACK" attacker --order "$order" \
    --dir "$D" --addr "$ADDR" --helper "$HELPER" --secret "$SECRET" >"$D/attacker.out" 2>&1 &
  local att=$!
  BG_PIDS+=("$att")
  wait "$peer"
  local peer_rc=$?
  local c_pid
  c_pid=$(status_of "$D/attacker.info" c_pid)
  [[ $c_pid =~ ^[0-9]+$ ]] && C_PIDS+=("$c_pid")
  : >"$D/done"  # the helper checks its page, C exits
  wait "$att"
  local helper_rc=$?
  for _ in $(seq 30); do  # C (an orphan by now) exits on done
    [[ $c_pid =~ ^[0-9]+$ ]] && kill -0 "$c_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ $c_pid =~ ^[0-9]+$ ]] && kill -9 "$c_pid" 2>/dev/null

  echo "=== peer (exit $peer_rc):"
  cat "$D/peer.out"
  echo "=== attacker and helper (exit $helper_rc):"
  cat "$D/attacker.out"

  # What left the attacker's host: the READ buffer, the sink C wrote into, and
  # everything printed (the peer prints the first bytes it got).
  local read_eq sink_eq in_read in_sink in_out leaked
  read_eq=$(bytes_equal "$D/peer.read")
  sink_eq=$(bytes_equal "$D/peer.sink")
  in_read=$(pieces_in "$D/peer.read")
  in_sink=$(pieces_in "$D/peer.sink")
  in_out=$(pieces_in "$D/peer.out" "$D/attacker.out")
  if ((in_read + in_sink + in_out == 0)); then
    leaked="no"
  else
    leaked="YES (peer READ got $read_eq/4096 secret bytes, $in_read/256 pieces; C's WRITE"
    leaked+=" delivered $sink_eq/4096 bytes, $in_sink/256 pieces; printed: $in_out/256 pieces)"
  fi
  local helper_mem
  if grep -q "helper: memory intact" "$D/attacker.out"; then
    helper_mem="intact"
  elif grep -q "helper: memory MODIFIED" "$D/attacker.out"; then
    helper_mem="MODIFIED"
  else
    helper_mem="unknown (helper exit $helper_rc)"
  fi
  local rd wr own own_state
  rd=$(status_of "$D/peer.done" read)
  wr=$(status_of "$D/peer.done" write)
  own=$(status_of "$D/attacker.wr" status)
  own_state=$(status_of "$D/attacker.wr" qp_state)
  local own_err=0
  case $own in
    POST_FAILED_* | POLL_FAILED) own_err=1 ;;
    NO_COMPLETION) [[ $own_state == ERR || $own_state == unknown ]] && own_err=1 ;;
    *) is_error_completion "$own" && own_err=1 ;;
  esac
  [[ $own == NO_COMPLETION ]] && own+=" (qp_state $own_state)"

  echo "order $order: secret leaked: $leaked; helper memory: $helper_mem; peer READ: $rd;" \
    "peer WRITE: $wr; attacker: $own"
  # VULNERABLE: the attack reached the helper or its secret. BROKEN: nothing
  # leaked, but the scenario did not give the expected errors (or did not run).
  local vuln=() bad=()
  [[ $leaked == no ]] || vuln+=("the secret reached the peer")
  [[ $helper_mem == MODIFIED ]] && vuln+=("the peer's WRITE changed the helper's memory")
  [[ $helper_mem == intact || $helper_mem == MODIFIED ]] || bad+=("helper memory $helper_mem")
  [[ $rd == IBV_WC_SUCCESS ]] && vuln+=("the peer's READ succeeded")
  [[ $wr == IBV_WC_SUCCESS ]] && vuln+=("the peer's WRITE succeeded")
  [[ $own == IBV_WC_SUCCESS ]] && vuln+=("C's WRITE after the exec succeeded")
  is_error_completion "$rd" || [[ $rd == IBV_WC_SUCCESS ]] || bad+=("peer READ $rd")
  is_error_completion "$wr" || [[ $wr == IBV_WC_SUCCESS ]] || bad+=("peer WRITE $wr")
  ((own_err)) || [[ $own == IBV_WC_SUCCESS ]] || bad+=("C's WRITE after the exec $own")
  ((peer_rc == 0)) || bad+=("peer exit $peer_rc")
  local IFS=';'
  if ((${#vuln[@]} != 0)); then
    VERDICTS+=("order $order: VULNERABLE:${vuln[*]/#/ }${bad:+ (also:${bad[*]/#/ })}")
  elif ((${#bad[@]} != 0)); then
    VERDICTS+=("order $order: BROKEN (nothing leaked, but:${bad[*]/#/ })")
  else
    VERDICTS+=("order $order: PROTECTED (no secret byte left, helper intact, every access failed)")
  fi
}

run_order before
run_order after

for ns in a b; do
  if grep -qiE "error|assert|warn" "$TMP/burstd-$ns.log"; then
    echo "--- burstd ${ns^^} log (errors, warnings):"
    grep -iE "error|assert|warn" "$TMP/burstd-$ns.log" | head -20
  fi
done
echo "=== verdict (${SECONDS} s)"
printf '%s\n' "${VERDICTS[@]}"
for v in "${VERDICTS[@]}"; do
  [[ $v == *VULNERABLE* ]] && fail "issue 12: burstd reached memory the client did not hand over"
done
for v in "${VERDICTS[@]}"; do
  [[ $v == *PROTECTED* ]] || fail "the scenario did not run as expected (see above)"
done
echo "PASS"
