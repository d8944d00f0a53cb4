# accel_library(NAME SRCS ... DEPS ...): one static library per engine module.
function(accel_library name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${A_DEPS})
endfunction()

# accel_test(NAME SRCS ... DEPS ... [LABELS ...]): a GoogleTest binary, cases listed in ctest.
function(accel_test name)
  cmake_parse_arguments(A "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SRCS})
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gmock GTest::gtest_main)
  if(A_LABELS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${A_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
