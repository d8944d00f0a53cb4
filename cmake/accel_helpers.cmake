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

# accel_control_plane_directory(): called at the top of a directory of control-plane code (the
# daemon, the clients, the worker's glue, the job spec, RPC glue and generated protos, config
# resolution). Its Release objects are compiled at -O1 instead of -O3: nothing there is a hot
# loop (the engine's kernels and sharding stay at -O3), and these files (gRPC, protobuf, CLI11
# and nlohmann templates) are most of a fresh build's compile time; -O1 compiles them about
# 25% faster (docs/architecture.md, "Building"). bench/metrics_bench.cc watches the daemon side.
function(accel_control_plane_directory)
  add_compile_options($<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
endfunction()
