# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Tests of burst_cm (cm/ib_cm.h, cm/mad.h): the MAD codec against the CM MADs
# Linux rxe sent (tests/fixtures/rxe/cm_*.pcap), and two IbCm back to back over
# an in-memory link that loses / duplicates chosen MADs (fake clock). ctest names: cm.*
add_executable(ib_cm_tests
  ${CMAKE_CURRENT_LIST_DIR}/mad_golden_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_fault_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/ib_cm_golden_test.cc
)
target_compile_definitions(ib_cm_tests PRIVATE
  BURST_RXE_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures/rxe")
target_link_libraries(ib_cm_tests PRIVATE
  burst_cm burst_test_pcap burst_options GTest::gtest GTest::gtest_main)
gtest_discover_tests(ib_cm_tests TEST_PREFIX "cm." DISCOVERY_TIMEOUT 60)
