# CTest compile.sm90_wgmma_pipelines: compiles SOURCE for sm_90a to a cubin and fails if ptxas says it
# serialized the wgmmas of a kernel ("Potential Performance Loss: wgmma.mma_async instructions are
# serialized ..."), naming the kernel and the reason.
# Arguments (-D): NVCC, SOURCE, INCLUDE_DIR, OUTPUT_DIR; HOST_COMPILER optional.
cmake_minimum_required(VERSION 3.25)

foreach(var NVCC SOURCE INCLUDE_DIR OUTPUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_wgmma_pipelines.cmake needs -D${var}=...")
  endif()
endforeach()
file(MAKE_DIRECTORY ${OUTPUT_DIR})

set(flags -std=c++20 -arch=sm_90a -I ${INCLUDE_DIR} --expt-relaxed-constexpr -diag-suppress=2810)
if(HOST_COMPILER)
  list(APPEND flags -ccbin ${HOST_COMPILER})
endif()
execute_process(COMMAND ${NVCC} ${flags} -cubin ${SOURCE} -o ${OUTPUT_DIR}/wgmma_pipelines.cubin
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc -cubin failed (${rc}):\n${out}\n${err}")
endif()
string(FIND "${out}${err}" "Potential Performance Loss" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "ptxas serialized wgmmas in ${SOURCE}:\n${out}\n${err}")
endif()
message(STATUS "no wgmma serialization in any kernel of ${SOURCE}")
