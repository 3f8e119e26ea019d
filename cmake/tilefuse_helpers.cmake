# Helpers shared by every CMakeLists of the project (tilefuse_set_cuda_archs: cmake/tilefuse_cuda.cmake).

include(${CMAKE_CURRENT_LIST_DIR}/tilefuse_cuda.cmake)
tilefuse_find_cccl()

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
