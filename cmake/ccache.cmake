# Use ccache when it is installed: CI rebuilds the same tree on every run.
find_program(ACCEL_CCACHE ccache)
if(ACCEL_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER ${ACCEL_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${ACCEL_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${ACCEL_CCACHE})
endif()
