# Host-tuned code generation. The engine's vector loops (LayerNorm, GELU, softmax, AdamW, dtype
# casts) rely on the compiler for AVX-512/AVX2; matmuls go through oneDNN, which dispatches at run
# time on its own. ACCEL_NATIVE=OFF gives a portable x86-64-v2 build.
option(ACCEL_NATIVE "compile for the build machine's CPU (-march=native)" ON)
if(ACCEL_NATIVE)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native ACCEL_HAS_MARCH_NATIVE)
  if(ACCEL_HAS_MARCH_NATIVE)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-march=native>)
    # ccache hashes the command line, not what -march=native expands to; put the CPU's ISA
    # flags in the command line so a cache shared between different CPUs never mixes objects.
    if(EXISTS /proc/cpuinfo)
      file(STRINGS /proc/cpuinfo _accel_flags REGEX "^flags" LIMIT_COUNT 1)
      string(MD5 _accel_isa_hash "${_accel_flags}")
      string(SUBSTRING ${_accel_isa_hash} 0 12 _accel_isa_hash)
      add_compile_definitions(ACCEL_HOST_ISA_TAG=${_accel_isa_hash})
    endif()
  endif()
endif()
