# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Tests of burst_cma (cm/cma.h): two Cma over two IbCm wired by an in-memory
# link, fake hosts and a fake clock, driven by the UCMA command sequences of
# librdmacm 44 (rping, udaddy, ...). ctest names: cm.cma.*
if(TARGET burst_cma AND TARGET burst_cm)
  add_executable(cma_tests
    ${CMAKE_CURRENT_LIST_DIR}/cma_conn_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cma_ud_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cma_cmd_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cma_kernel_peer_test.cc
  )
  target_compile_definitions(cma_tests PRIVATE
    BURST_RXE_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures/rxe")
  target_link_libraries(cma_tests PRIVATE
    burst_cma burst_cm burst_test_pcap burst_options GTest::gtest GTest::gtest_main)
  gtest_discover_tests(cma_tests TEST_PREFIX "cm.cma." DISCOVERY_TIMEOUT 60)
endif()
