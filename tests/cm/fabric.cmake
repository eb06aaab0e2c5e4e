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

# rdma_cm robustness (tests/cm/robust_test.sh): applications SIGKILLed mid-handshake
# (cm_stall.c stops where told), a connect flood, forged REQ/REJ/DREQ on the wire
# (cm_inject.py); nothing left in either burstd, the peer gets an error event.
find_library(BURST_RDMACM_LIB rdmacm)
find_library(BURST_IBVERBS_LIB ibverbs)
if(BURST_RDMACM_LIB AND BURST_IBVERBS_LIB AND TARGET burstctl AND TARGET burstd
   AND TARGET burst_provider AND BURST_WITH_XDP)
  add_executable(cm_stall cm_stall.c)
  target_link_libraries(cm_stall PRIVATE ${BURST_RDMACM_LIB} ${BURST_IBVERBS_LIB})
  # netns.cm_ucma's case "push": unread events and MIGRATE_ID / DESTROY_ID (docs/cm.md).
  add_executable(cm_pushcheck cm_pushcheck.c)
  target_link_libraries(cm_pushcheck PRIVATE ${BURST_RDMACM_LIB})
  # netns.cm_ucma's case "rspreload": a plain POSIX TCP program under librspreload.
  add_executable(tcp_check tcp_check.c)
  if(NOT BURST_SANITIZE OR CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    burst_netns_provider_test(netns.cm_robust robust_test.sh 600 "netns;cm;xdp;slow" ""
      $<TARGET_FILE:burstctl> $<TARGET_FILE:burstd> $<TARGET_FILE:cm_stall>)
  endif()
endif()

# CM MADs lost in both directions (tests/cm/loss_test.sh): burstd's BURST_TEST_HOOKS
# drop of the MADs it sends (daemon/burstd/gsi.h); rping and ucmatose must still pass.
if(TARGET burstctl AND TARGET burstd AND TARGET burst_provider AND BURST_WITH_XDP)
  if(NOT BURST_SANITIZE OR CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    burst_netns_provider_test(netns.cm_loss loss_test.sh 600 "netns;cm;xdp;slow" ""
      $<TARGET_FILE:burstctl> $<TARGET_FILE:burstd>)
  endif()
endif()
