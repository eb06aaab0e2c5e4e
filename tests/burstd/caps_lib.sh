# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Capability checks of a running burstd (sourced by the burstd_*_test.sh scripts).
#   caps_expected NAME...   hex mask of the named capabilities that this shell
#                           holds (burstd keeps only what it started with)
#   caps_check PID EFF BND NNP  every thread of PID has CapPrm = CapEff = EFF,
#                           CapInh = CapAmb = 0 (when NNP is 1), CapBnd = BND,
#                           NoNewPrivs = NNP; prints one line, returns 1 otherwise
#   caps_self FIELD         this shell's CapEff / CapBnd / CapPrm
#   caps_names MASK         "cap_a,cap_b" as burstd logs it ("none" for 0)
# The kept sets per backend are the table in daemon/burstd/privileges.h.

declare -A CAP_NUMBER=([cap_net_admin]=12 [cap_net_raw]=13 [cap_ipc_lock]=14 [cap_sys_ptrace]=19
  [cap_sys_admin]=21 [cap_sys_resource]=24 [cap_bpf]=39 [cap_checkpoint_restore]=40)

caps_self() { awk -v f="$1:" '$1 == f { print $2 }' /proc/$$/status; }

caps_names() {  # only the capabilities of CAP_NUMBER are named, others are cap_N
  local mask=$((16#$1)) c n k out=""
  for ((c = 0; c < 64; c++)); do
    ((mask >> c & 1)) || continue
    n=cap_$c
    for k in "${!CAP_NUMBER[@]}"; do [[ ${CAP_NUMBER[$k]} == "$c" ]] && n=$k; done
    out+=${out:+,}$n
  done
  echo "${out:-none}"
}

caps_expected() {
  local mask=0 n have
  have=$((16#$(caps_self CapPrm)))
  for n in "$@"; do
    [[ -n ${CAP_NUMBER[$n]:-} ]] || { echo "caps_expected: unknown $n" >&2; return 1; }
    mask=$((mask | (1 << CAP_NUMBER[$n])))
  done
  printf '%016x\n' $((mask & have))
}

caps_check() {
  local pid=$1 eff=$2 bnd=$3 nnp=$4 st tid n=0 bad=""
  for st in /proc/"$pid"/task/*/status; do
    tid=${st#/proc/"$pid"/task/}
    tid=${tid%/status}
    local prm e b inh amb nn
    prm=$(awk '$1 == "CapPrm:" { print $2 }' "$st" 2>/dev/null) || continue
    [[ -n $prm ]] || continue
    e=$(awk '$1 == "CapEff:" { print $2 }' "$st")
    b=$(awk '$1 == "CapBnd:" { print $2 }' "$st")
    inh=$(awk '$1 == "CapInh:" { print $2 }' "$st")
    amb=$(awk '$1 == "CapAmb:" { print $2 }' "$st")
    nn=$(awk '$1 == "NoNewPrivs:" { print $2 }' "$st")
    n=$((n + 1))
    if [[ $prm != "$eff" || $e != "$eff" || $b != "$bnd" || $nn != "$nnp" ]] ||
      [[ $nnp == 1 && ($inh != 0000000000000000 || $amb != 0000000000000000) ]]; then
      bad+=" thread $tid: CapPrm $prm CapEff $e CapBnd $b CapInh $inh CapAmb $amb NoNewPrivs $nn;"
    fi
  done
  if [[ -n $bad || $n == 0 ]]; then
    echo "capabilities of pid $pid: want CapPrm = CapEff = $eff, CapBnd $bnd, NoNewPrivs $nnp;$bad"
    return 1
  fi
  echo "pid $pid, $n threads: CapEff $eff ($(caps_names "$eff")), CapBnd $bnd, NoNewPrivs $nnp"
}
