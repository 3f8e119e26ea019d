# Helpers shared by every CMakeLists of the project.

# CUDA 13 keeps CCCL (cuda::std, cuda::ptx, cub, thrust) in include/cccl; nvcc finds it on its own,
# but host compilers and NVRTC need the path.
find_path(TILEFUSE_CCCL_INCLUDE_DIR cuda/std/type_traits
  HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES cccl NO_DEFAULT_PATH)
if(NOT TILEFUSE_CCCL_INCLUDE_DIR)
  message(FATAL_ERROR "CCCL headers (cuda/std/type_traits) not found under ${CUDAToolkit_INCLUDE_DIRS}")
endif()

# tilefuse_set_cuda_archs(<target>): compile the target's CUDA sources for every arch in
# TILEFUSE_CUDA_ARCHS, as SASS (code=sm_XX) so that nothing is JIT-compiled at load time.
function(tilefuse_set_cuda_archs target)
  foreach(arch IN LISTS TILEFUSE_CUDA_ARCHS)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_${arch},code=sm_${arch}>)
  endforeach()
endfunction()

# GoogleTest: the system package when there is one (Debian's libgtest-dev), else sources carried in
# third_party/googletest or Debian's /usr/src/googletest (the GPU machine has no package).
function(tilefuse_find_gtest)
  find_package(GTest QUIET)
  if(GTest_FOUND)
    return()
  endif()
  foreach(dir ${PROJECT_SOURCE_DIR}/third_party/googletest /usr/src/googletest)
    if(EXISTS ${dir}/CMakeLists.txt)
      set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
      set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
      add_subdirectory(${dir} ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
      add_library(GTest::gtest ALIAS gtest)
      add_library(GTest::gtest_main ALIAS gtest_main)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "GoogleTest not found: install libgtest-dev, or put its sources in third_party/googletest")
endfunction()
