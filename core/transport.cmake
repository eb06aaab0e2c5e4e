# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst_core: the transport (QPs, CQs, MRs, requester / responder / completer, UD,
# timers) over the wire format (burst_wire) and the copy engine (burst_copy).
add_library(burst_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/completer.cc
  ${CMAKE_CURRENT_LIST_DIR}/copy_failure.cc
  ${CMAKE_CURRENT_LIST_DIR}/counters.cc
  ${CMAKE_CURRENT_LIST_DIR}/cq.cc
  ${CMAKE_CURRENT_LIST_DIR}/engine.cc
  ${CMAKE_CURRENT_LIST_DIR}/gsi_channel.cc
  ${CMAKE_CURRENT_LIST_DIR}/mcast.cc
  ${CMAKE_CURRENT_LIST_DIR}/mr.cc
  ${CMAKE_CURRENT_LIST_DIR}/qp.cc
  ${CMAKE_CURRENT_LIST_DIR}/requester.cc
  ${CMAKE_CURRENT_LIST_DIR}/responder.cc
  ${CMAKE_CURRENT_LIST_DIR}/responder_tx.cc
  ${CMAKE_CURRENT_LIST_DIR}/retransmit.cc
  ${CMAKE_CURRENT_LIST_DIR}/rx_dispatch.cc
  ${CMAKE_CURRENT_LIST_DIR}/srq.cc
  ${CMAKE_CURRENT_LIST_DIR}/ud.cc
)
target_include_directories(burst_core PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(burst_core PUBLIC burst_abi burst_wire burst_copy burst_mem_space burst_datapath burst_options)
