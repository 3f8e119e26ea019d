// SASS facts of a compiled kernel, as the runtime reports them (cudaFuncGetAttributes): registers per
// thread and local memory per thread. Local memory is where register spills and stack frames go, so a
// nonzero value on a GEMM kernel is worth a look (build with -DTILEFUSE_BENCH_PTXAS_VERBOSE=ON for
// ptxas's own spill store/load counts).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <cuda_runtime.h>

namespace tilefuse::bench {

struct KernelFacts {
  std::string name;
  bool available = false;
  std::string note;  // why the facts are not available
  int registers = 0;
  std::size_t local_bytes = 0;  // per thread
  std::size_t static_shared_bytes = 0;
  std::size_t dynamic_shared_bytes = 0;  // what the launch asks for, when the caller knows it
  int max_threads_per_block = 0;
  int binary_version = 0;  // the SASS the runtime picked for this device, e.g. 90
};

inline KernelFacts facts_of(std::string name, void const* kernel, std::size_t dynamic_shared_bytes = 0) {
  KernelFacts f;
  f.name = std::move(name);
  f.dynamic_shared_bytes = dynamic_shared_bytes;
  cudaFuncAttributes attributes{};
  cudaError_t const error = cudaFuncGetAttributes(&attributes, kernel);
  if (error != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    f.note = std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(error);
    return f;
  }
  f.available = true;
  f.registers = attributes.numRegs;
  f.local_bytes = attributes.localSizeBytes;
  f.static_shared_bytes = attributes.sharedSizeBytes;
  f.max_threads_per_block = attributes.maxThreadsPerBlock;
  f.binary_version = attributes.binaryVersion;
  return f;
}

inline KernelFacts unavailable_facts(std::string name, std::string note) {
  KernelFacts f;
  f.name = std::move(name);
  f.note = std::move(note);
  return f;
}

}  // namespace tilefuse::bench
