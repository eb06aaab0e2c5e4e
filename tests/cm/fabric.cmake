# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdma_cm beyond netns.cm_ucma (tests/cm/fabric_test.sh): libfabric's
# fi_pingpong over verbs;ofi_rxm (rdm) and verbs (msg), whose fi_getinfo binds
# 127.0.0.1, and rping over IPv6 (a ULA and a link-local address).
if(TARGET burstctl AND TARGET burstd AND TARGET burst_provider AND BURST_WITH_XDP)
  if(NOT BURST_SANITIZE OR CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    burst_netns_provider_test(netns.cm_fabric fabric_test.sh 600 "netns;cm;xdp;slow" ""
      $<TARGET_FILE:burstctl> $<TARGET_FILE:burstd>)
  endif()
endif()
