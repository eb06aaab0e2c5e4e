# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# netns.cm_scale (tests/cm/scale_test.sh): 2,000 RC connections through rdma_cm held on
# one burstd (memory and fds per QP, `burstctl qps` time, CPU with the QPs idle), then 200
# connect/disconnect cycles that must leave no QP, cma id or fd behind (docs/cm.md "Scale").
if(TARGET burstctl AND TARGET burstd AND TARGET burst_provider AND BURST_WITH_XDP
   AND NOT BURST_SANITIZE)
  burst_netns_provider_test(netns.cm_scale scale_test.sh 900 "netns;cm;xdp;slow" ""
    $<TARGET_FILE:burstctl> $<TARGET_FILE:burstd>)
endif()
