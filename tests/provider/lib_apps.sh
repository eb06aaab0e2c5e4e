# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Server/client pairs of unmodified verbs applications under `burstctl run`
# (sourced after tests/netns/lib.sh by apps_test.sh and loopback_test.sh).
#   Needs: BURSTCTL, TMP, BG_PIDS, CMD_ENV (netns_cmd_env), REPORT, FAILED,
#   PAIR_REPORT_RE (client lines kept in REPORT), PAIR_REPORT_LINES (at most).
#   brun_in NS DEV SOCK SECONDS CMD...   CMD under burstctl run in namespace NS
#   apps_pair NAME SECONDS SERVER_NS SERVER_DEV SERVER_SOCK CLIENT_NS CLIENT_DEV CLIENT_SOCK DEST \
#             SERVER-ARGS... -- CLIENT-ARGS...
#       server in the background, then the client against DEST (retried while the
#       server's TCP listener is not up yet); both must exit 0, else both outputs
#       are printed, NAME goes to FAILED and "NAME FAIL ..." to REPORT; returns 1.

brun_in() {
  local ns=$1 dev=$2 sock=$3 t=$4
  shift 4
  nsenter --net=/run/netns/"$ns" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev "$dev" \
    --socket "$sock" -- "${CMD_ENV[@]}" "$@"
}

apps_pair() {
  local name=$1 t=$2 sns=$3 sdev=$4 ssock=$5 cns=$6 cdev=$7 csock=$8 dest=$9
  shift 9
  local sargs=() cargs=()
  while [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@")
  log "$name: ${sargs[*]}"
  local so="$TMP/$name.server" co="$TMP/$name.client"
  # nsenter directly, not brun_in: $! must be the process (see tests/netns/lib.sh)
  nsenter --net=/run/netns/"$sns" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev "$sdev" \
    --socket "$ssock" -- "${CMD_ENV[@]}" "${sargs[@]}" >"$so" 2>&1 &
  local spid=$!
  BG_PIDS+=("$spid")
  sleep 0.5
  local crc=1
  for _ in 1 2 3 4 5; do  # the server may still be setting up its TCP listener
    brun_in "$cns" "$cdev" "$csock" "$t" "${cargs[@]}" "$dest" >"$co" 2>&1
    crc=$?
    grep -q -E "Couldn't connect|Connection refused|Unable to init the socket connection" "$co" ||
      break
    sleep 0.5
  done
  wait "$spid"
  local src=$?
  if [[ $src -ne 0 || $crc -ne 0 ]]; then
    echo "=== server ($src):"; cat "$so"; echo "=== client ($crc):"; cat "$co"
    FAILED+=("$name")
    echo "$name FAIL server=$src client=$crc" >>"$REPORT"
    return 1
  fi
  {
    echo "== $name (server ${sargs[*]})"
    grep -E "$PAIR_REPORT_RE" "$co" | head -"$PAIR_REPORT_LINES"
  } >>"$REPORT"
  return 0
}
