# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst_cm: the IB CM of one port (cm/ib_cm.h): the CM MAD codec (mad.cc) and the
# protocol agent, split by role: ids, listens and the user API (ib_cm.cc),
# MADs out (ib_cm_tx.cc), received MADs (ib_cm_rx.cc, ib_cm_rx_disc.cc), retries,
# timeouts and timewait (ib_cm_timers.cc); ib_cm_impl.h is what they share.
add_library(burst_cm STATIC
  ${CMAKE_CURRENT_LIST_DIR}/mad.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_rx.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_rx_disc.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_timers.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_tx.cc
)
target_include_directories(burst_cm PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(burst_cm PUBLIC burst_options)
