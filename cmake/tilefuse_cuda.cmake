# What a CMake project needs to compile CUDA against tilefuse: installed with the package (find_package
# includes it) and included by tilefuse's own CMakeLists (so add_subdirectory / FetchContent have it too).

# CMake 3.25 knows no C++20 flag for nvcc 13: with this, CMAKE_CUDA_STANDARD 20 in the calling scope adds
# -std=c++20 (tilefuse's targets carry the flag to their consumers themselves).
macro(tilefuse_enable_cuda_std_20)
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endmacro()

# tilefuse_find_cccl(): TILEFUSE_CCCL_INCLUDE_DIR, where CUDA 13 keeps CCCL (cuda::std, cuda::ptx; in
# include/cccl): nvcc finds it on its own, host compilers and NVRTC need the path. Needs CUDAToolkit found.
function(tilefuse_find_cccl)
  find_path(TILEFUSE_CCCL_INCLUDE_DIR cuda/std/type_traits
    HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES cccl NO_DEFAULT_PATH)
  if(NOT TILEFUSE_CCCL_INCLUDE_DIR)
    message(FATAL_ERROR "tilefuse: CCCL headers (cuda/std/type_traits) not found under ${CUDAToolkit_INCLUDE_DIRS}")
  endif()
endfunction()

# The architectures tilefuse is built and tested for: sm_80 (A100), sm_89 (Ada: L4, RTX 4000) and sm_90a
# (H100 / H200; the 'a' is needed for WGMMA and TMA).
set(TILEFUSE_DEFAULT_CUDA_ARCHS "80;89;90a")

# tilefuse_set_cuda_archs(<target> [ARCHS a;b;...]): compile the target's CUDA sources for each arch as SASS
# (-gencode=arch=compute_XX,code=sm_XX, so nothing is JIT-compiled at load time). ARCHS defaults to
# TILEFUSE_CUDA_ARCHS when set, else TILEFUSE_DEFAULT_CUDA_ARCHS. sm_90a needs explicit -gencode flags,
# which CMake 3.25's CUDA_ARCHITECTURES cannot express; the target's CUDA_ARCHITECTURES is turned off.
function(tilefuse_set_cuda_archs target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "ARCHS")
  set(archs ${arg_ARCHS})
  if(NOT archs)
    if(TILEFUSE_CUDA_ARCHS)
      set(archs ${TILEFUSE_CUDA_ARCHS})
    else()
      set(archs ${TILEFUSE_DEFAULT_CUDA_ARCHS})
    endif()
  endif()
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF)
  foreach(arch IN LISTS archs)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_${arch},code=sm_${arch}>)
  endforeach()
endfunction()
