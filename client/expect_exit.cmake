# cmake -DACCELCTL=... -DFILE=... -DEXPECT=N -P expect_exit.cmake: runs
# `accelctl config validate FILE` and fails unless it exits with EXPECT.
execute_process(COMMAND ${ACCELCTL} config validate ${FILE} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT)
  message(FATAL_ERROR "accelctl config validate ${FILE}: exit ${rc}, expected ${EXPECT}\n${out}${err}")
endif()
