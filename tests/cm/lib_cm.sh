# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# What the rdma_cm tests between two burstd share (sourced after tests/netns/lib.sh
# and tests/provider/lib_apps.sh; burstd A on a0 at $TMP/a.sock, B on b0 at $TMP/b.sock,
# logs $TMP/burstd-{a,b}.log, the report in $REPORT):
#   cm_want NAME            true when NAME is among $CASES (or $CASES is empty)
#   cm_counters             the cm./cma./gsi. counters of both burstd, one line each
#   cm_pair NAME SECONDS SERVER-ARGS... -- CLIENT-ARGS...
#                           server in A (background), client in B ($CM_CLIENT_ADDR appended
#                           when set), retried while the server is not listening yet; both
#                           must exit 0 (else FAILED gets NAME). Report: the lines of the
#                           client's output matching $CM_REPORT_RE, at most $CM_REPORT_LINES
#   cm_finish               prints the report, fails on a sanitizer report in a burstd log
#                           or any FAILED entry, else says PASS
FAILED=()
CM_CLIENT_ADDR=${CM_CLIENT_ADDR:-}
CM_REPORT_RE=${CM_REPORT_RE:-"usec|ping data|^ *[0-9]+[kmKM]? +[0-9]"}
CM_REPORT_LINES=${CM_REPORT_LINES:-6}

cm_want() {
  [[ ${#CASES[@]} -eq 0 ]] && return 0
  local c
  for c in "${CASES[@]}"; do [[ $c == "$1" ]] && return 0; done
  return 1
}

cm_counters() {
  local side
  for side in a b; do
    echo "=== burstd $side: $("$BURSTCTL" --socket "$TMP/$side.sock" counters 2>&1 |
      grep -E "^ *(cm|cma|gsi)\." | tr -s ' ' | paste -sd ' ')"
  done
}

cm_pair() {
  local name=$1 t=$2
  shift 2
  cm_want "$name" || return 0
  local sargs=() cargs=()
  while [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@" ${CM_CLIENT_ADDR:+"$CM_CLIENT_ADDR"})
  log "$name: ${sargs[*]}  <->  ${cargs[*]}"
  local so="$TMP/$name.server" co="$TMP/$name.client"
  # Line-buffered: a tool killed by its timeout still shows how far it got.
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev a0 \
    --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" stdbuf -oL -eL "${sargs[@]}" >"$so" 2>&1 &
  local spid=$!
  BG_PIDS+=("$spid")
  sleep 1
  local crc=1
  for _ in 1 2 3 4 5; do
    brun_in "$NB" b0 "$TMP/b.sock" "$t" stdbuf -oL -eL "${cargs[@]}" >"$co" 2>&1
    crc=$?
    # Not listening yet: REJ (RC), or a SIDR_REP "no such service" (UD: UNREACHABLE, status 1).
    [[ $crc -ne 0 ]] &&
      grep -q -E "REJECTED|refused|rejected|Unexpected CM event|UNREACHABLE, error: 1$" "$co" || break
    sleep 1
  done
  wait "$spid"
  local src=$?
  if [[ $src -ne 0 || $crc -ne 0 ]]; then
    echo "=== server ($src):"; cat "$so"; echo "=== client ($crc):"; cat "$co"
    cm_counters
    FAILED+=("$name")
    echo "$name FAIL server=$src client=$crc" >>"$REPORT"
    return 1
  fi
  {
    echo "== $name: ${sargs[*]}  <->  ${cargs[*]}"
    grep -E "$CM_REPORT_RE" "$co" | head -"$CM_REPORT_LINES"
  } >>"$REPORT"
  return 0
}

cm_finish() {
  local side
  echo "=== report"
  cat "$REPORT"
  for side in a b; do
    if grep -q -E "AddressSanitizer|runtime error|terminate called" "$TMP/burstd-$side.log"; then
      cat "$TMP/burstd-$side.log"
      FAILED+=("burstd-$side")
    fi
  done
  [[ ${#FAILED[@]} -eq 0 ]] || fail "failed: ${FAILED[*]}"
  echo "PASS"
}
