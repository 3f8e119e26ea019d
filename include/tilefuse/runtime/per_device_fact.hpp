// Facts of this binary on a device (does it hold a kernel's sm_90a code, does its shared memory fit) do not
// change while the process runs: ask them once per device and remember the answer. Host code.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstddef>

namespace tilefuse {

// ask(device) for the current device, remembered per device; each Ask type (each lambda) has its own memory.
// false without a usable current device.
template <class Ask>
bool per_device_fact(Ask ask) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  static std::array<std::atomic<signed char>, 64> known{};  // per device: 0 not asked, 1 yes, -1 no
  if (device < 0 || device >= static_cast<int>(known.size())) return ask(device);
  signed char answer = known[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (answer == 0) {
    answer = ask(device) ? 1 : -1;
    known[static_cast<std::size_t>(device)].store(answer, std::memory_order_relaxed);
  }
  return answer > 0;
}

// The binary version (90 for sm_90a code) of a kernel's code for the current device, 0 if it cannot be asked.
inline int kernel_binary_version(void const* kernel) {
  cudaFuncAttributes attributes{};
  if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attributes.binaryVersion;
}

}  // namespace tilefuse
