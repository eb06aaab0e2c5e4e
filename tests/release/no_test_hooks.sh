#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Builds what the release preset ships (the verbs provider, the completion-channel
# shim, burstd, burstctl, burst-xfer) into BUILD_DIR and checks that none of them
# contains a test hook: every string the hooks of a BURST_TEST_HOOKS build put into
# a binary (environment names, symbols, option and message texts) is searched for
# in the whole file (code, read-only data, symbol tables, debug information).
# Usage: no_test_hooks.sh SOURCE_DIR BUILD_DIR
# Exit: 0 pass, 1 fail (a hook or a control string is missing), 2 build failure.
set -uo pipefail

SRC=${1:?usage: no_test_hooks.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: no_test_hooks.sh SOURCE_DIR BUILD_DIR}
JOBS=${BURST_RELEASE_CHECK_JOBS:-2}

# What the hooks contain. A new hook follows the same names (an environment name
# BURST_TEST_*, code in namespace test_hooks) or adds its strings here.
FORBIDDEN=(
  BURST_TEST_             # environment hooks (the provider's BURST_TEST_DIE_IN_DOORBELL)
  test_hooks              # namespace of in-process hooks (shm::test_hooks)
  after_doorbell_reserve  # the doorbell hook between reserve and commit
  LoopbackFaults          # the loopback wire's fault knobs
  set_faults              # LoopbackWire::set_faults, EnginePair::set_faults
  transmit_faulty         # the loopback wire's fault path
  reorder_depth           # a fault knob
  --loss                  # burst-xfer's loopback loss option
  "fault injection"
)
# binary name -> a string it must contain (the scan reads what it should read).
declare -A CONTROL=(
  [libburst-rdmav34.so]=DoorbellProducer
  [libburst-shim.so]=burst
  [burstd]=LoopbackWire
  [burstctl]=burst
  [burst-xfer]=LoopbackWire
)
TARGETS=(burst_provider burst_shim burstd burstctl burst-xfer)

log() { echo "== $*"; }

log "configure the release preset into $BUILD"
if ! cmake -S "$SRC" -B "$BUILD" --preset release >"$BUILD.configure.log" 2>&1; then
  cat "$BUILD.configure.log"
  echo "FAIL: the release preset does not configure"
  exit 2
fi
for v in BURST_TEST_HOOKS:BOOL=OFF BURST_BUILD_TESTS:BOOL=OFF; do
  grep -qx "$v" "$BUILD/CMakeCache.txt" || { echo "FAIL: release preset without $v"; exit 1; }
done

log "build ${TARGETS[*]} (-j$JOBS)"
if ! cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"; then
  echo "FAIL: the release build failed"
  exit 2
fi

rc=0
for name in "${!CONTROL[@]}"; do
  mapfile -t found < <(find "$BUILD" -path "$BUILD/CMakeFiles" -prune -o -type f -name "$name" -print)
  if [[ ${#found[@]} -ne 1 ]]; then
    echo "FAIL: $name: expected one file in $BUILD, found ${#found[@]}"
    rc=1
    continue
  fi
  bin=${found[0]}
  if ! grep -qaF -- "${CONTROL[$name]}" "$bin"; then
    echo "FAIL: $name: control string '${CONTROL[$name]}' not found (is this the binary?)"
    rc=1
  fi
  hits=()
  for s in "${FORBIDDEN[@]}"; do
    grep -qaF -- "$s" "$bin" && hits+=("$s")
  done
  if [[ ${#hits[@]} -ne 0 ]]; then
    echo "FAIL: ${bin#"$BUILD"/} contains test hooks:"
    for s in "${hits[@]}"; do
      printf '  %-24s %s\n' "$s" "$(grep -aoF -- "$s" "$bin" | wc -l) occurrence(s)"
      strings -a "$bin" | grep -F -- "$s" | sort -u | head -3 | sed 's/^/      /'
    done
    rc=1
  else
    echo "ok: ${bin#"$BUILD"/}: none of ${#FORBIDDEN[@]} hook strings"
  fi
done
[[ $rc -eq 0 ]] && echo PASS
exit $rc
