# Sanitizer builds (scripts/sanitize.sh): ACCEL_SANITIZE is a list of -fsanitize= kinds, e.g.
# "address;undefined" or "thread". Empty (the default, CI's build) changes nothing.
# Only C and C++ are instrumented: nvcc's host objects and the Debian libraries (protobuf, gRPC,
# oneDNN, gloo) stay as they are; the sanitizer runtimes cope with uninstrumented callers.
set(ACCEL_SANITIZE "" CACHE STRING "sanitizers to build with (address, undefined, thread)")
# Source directories (relative to the project) compiled without instrumentation. The TSan build
# names the numeric engine here: its only threading is OpenMP, whose barriers live in libgomp,
# which TSan cannot see, so instrumenting it reports nothing but false races (and uninstrumented
# objects are the plain Release build's, straight from ccache).
set(ACCEL_SANITIZE_SKIP_DIRS "" CACHE STRING "source directories left uninstrumented")
if(ACCEL_SANITIZE)
  list(JOIN ACCEL_SANITIZE "," _accel_san)
  # -O1 -g1: a sanitizer build is ~300 translation units; -O1 keeps the tests' training loops
  # tolerable and -g1 gives file:line in reports at a fraction of -g's compile and link time.
  # They come after CMAKE_CXX_FLAGS_<CONFIG> on the command line, so they win over -O3.
  # -fexpensive-optimizations (an -O2 pass at -O1): GCC forms fused multiply-adds only with it,
  # and without it the scalar reference kernels round differently from the fast paths and the
  # plain build (AdamWTest.FastMatchesRef... failed by 4-7 ulps under ASan), so the tests that
  # compare them would test the flags instead of the code.
  set(_accel_san_flags -fsanitize=${_accel_san} -fno-omit-frame-pointer -O1
      -fexpensive-optimizations -g1)
  if("undefined" IN_LIST ACCEL_SANITIZE)
    # Undefined behaviour fails the test instead of printing and going on.
    list(APPEND _accel_san_flags -fno-sanitize-recover=undefined)
  endif()
  set(_accel_skip "")
  foreach(d IN LISTS ACCEL_SANITIZE_SKIP_DIRS)
    list(APPEND _accel_skip ${PROJECT_SOURCE_DIR}/${d})
  endforeach()
  set(_accel_instrumented "$<COMPILE_LANGUAGE:CXX,C>")
  if(_accel_skip)
    set(_accel_instrumented
        "$<AND:${_accel_instrumented},$<NOT:$<IN_LIST:$<TARGET_PROPERTY:SOURCE_DIR>,${_accel_skip}>>>")
  endif()
  add_compile_options("$<${_accel_instrumented}:${_accel_san_flags}>")
  if("thread" IN_LIST ACCEL_SANITIZE AND _accel_skip)
    # protobuf's MapFieldBase has two more members under TSan (map_field.h checks
    # __SANITIZE_THREAD__ or THREAD_SANITIZER), so a message with a map field (ResourceSpec) has
    # another layout in instrumented code than in the uninstrumented generated code (proto/),
    # and reading a field past the map read garbage (a SEGV in ValidatePlacement). The
    # generated code gets THREAD_SANITIZER so every object agrees on the layout (the engine's
    # uninstrumented directories do not use protobuf).
    add_compile_definitions(
        "$<$<STREQUAL:$<TARGET_PROPERTY:SOURCE_DIR>,${PROJECT_SOURCE_DIR}/proto>:THREAD_SANITIZER>")
  endif()
  # Tests read ACCEL_SANITIZE_BUILD to leave out what cannot hold under a sanitizer
  # (docs/reliability.md "Sanitizers").
  add_compile_definitions("$<${_accel_instrumented}:ACCEL_SANITIZE_BUILD=\"${_accel_san}\">")
  # Every executable links the runtime, instrumented objects in it or not.
  add_link_options("$<$<LINK_LANGUAGE:CXX,C>:-fsanitize=${_accel_san}>")
  if("thread" IN_LIST ACCEL_SANITIZE)
    # Preloaded by scripts/sanitize.sh tsan: makes absl::Mutex visible to TSan (see the source).
    # Built plain, without the options above, so it stays inert in processes without TSan.
    add_library(accel_tsan_absl_mutex SHARED ${PROJECT_SOURCE_DIR}/scripts/sanitizers/tsan_absl_mutex.cc)
    set_target_properties(accel_tsan_absl_mutex PROPERTIES COMPILE_OPTIONS "" COMPILE_DEFINITIONS ""
                          LINK_OPTIONS "")
    target_link_libraries(accel_tsan_absl_mutex PRIVATE absl::synchronization ${CMAKE_DL_LIBS})
  endif()
  message(STATUS "accel: sanitizers ${_accel_san}; uninstrumented: ${ACCEL_SANITIZE_SKIP_DIRS}")
endif()
