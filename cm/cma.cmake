# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst_cma: the rdma_cm layer (cm/cma.h) in the kernel's UCMA ABI over IbCm.
# Pure logic: no I/O, no threads; burstd's control thread drives it.
add_library(burst_cma STATIC
  cma.cc
  cma_addr.cc
  cma_conn.cc
  cma_events.cc
  cma_ids.cc
  cma_mcast.cc
  cma_qp_attr.cc
  cma_ud.cc
)
target_include_directories(burst_cma PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(burst_cma PUBLIC burst_options)
if(TARGET burst_cm)
  target_link_libraries(burst_cma PUBLIC burst_cm)
endif()
