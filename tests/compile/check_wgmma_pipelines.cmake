# CTest compile.sm90_wgmma_pipelines: compiles SOURCE for sm_90a to a cubin and fails if ptxas says it
# serialized the wgmmas of a kernel ("Potential Performance Loss: wgmma.mma_async instructions are
# serialized ...") or injected waits, naming the kernel and the reason; then checks in the PTX that the
# kernels and their wgmmas were there to check.
# Arguments (-D): NVCC, SOURCE, INCLUDE_DIR, OUTPUT_DIR, EXPECTED_KERNELS (how many kernels SOURCE
# instantiates); HOST_COMPILER and EXTRA_FLAGS (a ;-list, e.g. -DTILEFUSE_X=1 for a build switch) optional.
cmake_minimum_required(VERSION 3.25)

foreach(var NVCC SOURCE INCLUDE_DIR OUTPUT_DIR EXPECTED_KERNELS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_wgmma_pipelines.cmake needs -D${var}=...")
  endif()
endforeach()
file(MAKE_DIRECTORY ${OUTPUT_DIR})

set(flags -std=c++20 -arch=sm_90a -I ${INCLUDE_DIR} --expt-relaxed-constexpr -diag-suppress=2810)
if(HOST_COMPILER)
  list(APPEND flags -ccbin ${HOST_COMPILER})
endif()
if(EXTRA_FLAGS)
  list(APPEND flags ${EXTRA_FLAGS})
endif()
execute_process(COMMAND ${NVCC} ${flags} -cubin ${SOURCE} -o ${OUTPUT_DIR}/wgmma_pipelines.cubin
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc -cubin failed (${rc}):\n${out}\n${err}")
endif()
# "Potential Performance Loss ... serialized" (C7510-C7516) and "warpgroup.wait is injected" (C7517...):
# any ptxas C75xx note means the wgmma pipeline is not what the source wrote.
string(FIND "${out}${err}" "(C75" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "ptxas changed the wgmma pipeline of a kernel in ${SOURCE}:\n${out}\n${err}")
endif()
# The check means something only if the kernels were compiled with their wgmmas: every kernel is an
# entry of the sm_90a PTX and the PTX holds wgmma instructions (not the __trap() of another arch).
execute_process(COMMAND ${NVCC} ${flags} -ptx ${SOURCE} -o ${OUTPUT_DIR}/wgmma_pipelines.ptx
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc -ptx failed (${rc}):\n${out}\n${err}")
endif()
file(STRINGS ${OUTPUT_DIR}/wgmma_pipelines.ptx entries REGEX "^[.a-z ]*\\.entry ")
list(LENGTH entries entry_count)
file(STRINGS ${OUTPUT_DIR}/wgmma_pipelines.ptx wgmmas REGEX "wgmma\\.mma_async")
list(LENGTH wgmmas wgmma_count)
if(entry_count LESS EXPECTED_KERNELS OR wgmma_count EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled to ${entry_count} kernels (expected ${EXPECTED_KERNELS}) with "
                      "${wgmma_count} wgmma instructions: the check above saw nothing")
endif()
message(STATUS "${entry_count} kernels, ${wgmma_count} wgmma instructions, no change to their pipelines by ptxas")
