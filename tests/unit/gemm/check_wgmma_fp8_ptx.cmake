# CTest compile.wgmma_fp8_ptx: compiles wgmma_fp8_instances.cu for sm_90a to PTX and checks that every
# FP8 wgmma form the wrappers promise is in it (an `if constexpr` branch that picked the wrong type
# string would still compile), then to a cubin so that ptxas checks the operand lists too.
# Arguments (-D): NVCC, SOURCE, INCLUDE_DIR, OUTPUT_DIR; HOST_COMPILER optional.
cmake_minimum_required(VERSION 3.25)

foreach(var NVCC SOURCE INCLUDE_DIR OUTPUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_wgmma_fp8_ptx.cmake needs -D${var}=...")
  endif()
endforeach()
file(MAKE_DIRECTORY ${OUTPUT_DIR})

set(flags -std=c++20 -arch=sm_90a -I ${INCLUDE_DIR})
if(HOST_COMPILER)
  list(APPEND flags -ccbin ${HOST_COMPILER})
endif()

foreach(kind ptx cubin)
  execute_process(COMMAND ${NVCC} ${flags} -${kind} ${SOURCE} -o ${OUTPUT_DIR}/wgmma_fp8.${kind}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc -${kind} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()

file(READ ${OUTPUT_DIR}/wgmma_fp8.ptx ptx)
set(missing "")
foreach(n 64 128 256)
  foreach(types e4m3.e4m3 e4m3.e5m2 e5m2.e4m3 e5m2.e5m2)
    set(form "wgmma.mma_async.sync.aligned.m64n${n}k32.f32.${types}")
    string(FIND "${ptx}" "${form} " at)
    if(at EQUAL -1)
      list(APPEND missing ${form})
    endif()
  endforeach()
endforeach()
if(missing)
  string(REPLACE ";" "\n  " missing "${missing}")
  message(FATAL_ERROR "these FP8 wgmma forms are missing from ${OUTPUT_DIR}/wgmma_fp8.ptx:\n  ${missing}")
endif()
message(STATUS "all 12 FP8 wgmma forms are in the sm_90a PTX, and ptxas accepts them")
