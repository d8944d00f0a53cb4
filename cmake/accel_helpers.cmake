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
  # One object per test file, also in unity-built directories (accel_unity_directory):
  # test files repeat helper names, and a failing test's file should compile alone.
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gmock GTest::gtest_main)
  if(A_LABELS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${A_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# accel_control_plane_directory(): called at the top of a directory of control-plane code (the
# daemon, the clients, the worker's glue, the job spec, RPC glue and generated protos, config
# resolution). Nothing there is a hot loop (the engine's kernels and sharding stay at -O3), and
# these files (gRPC, protobuf, CLI11 and nlohmann templates) are most of a fresh build's compile
# time, so its Release objects are compiled at -O1 instead of -O3 (about 25% faster per file).
# docs/architecture.md, "Building", has the figures; bench/metrics_bench.cc watches the daemon.
macro(accel_control_plane_directory)
  add_compile_options($<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
endmacro()

# accel_unity_directory(): the libraries and programs of the calling directory (and those below
# it) are unity builds in Release (ACCEL_UNITY_BUILD): up to 8 files share one compile, so the
# heavy headers are parsed once per batch, not once per file (server/'s 52 files: 230
# compile-seconds -> 96). Used by server/ and worker/, whose files have no file-local names in
# common (client/'s do: each command file has its own exit codes and JSON helpers); tests stay
# one file per object (accel_test). A macro: CMAKE_UNITY_BUILD must be set in the calling
# directory's scope.
option(ACCEL_UNITY_BUILD "unity-build the daemon's and worker's libraries" ON)
macro(accel_unity_directory)
  if(ACCEL_UNITY_BUILD AND CMAKE_BUILD_TYPE STREQUAL "Release")
    set(CMAKE_UNITY_BUILD ON)
    set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
  endif()
endmacro()
