// The facts printed at the top of every report: which GPU, how it is clocked, which driver, runtime and
// libraries, and what this binary was built for.
#pragma once

#include <cstdint>
#include <string>

namespace tilefuse::bench {

struct DeviceInfo {
  int device = 0;
  std::string name;
  std::string pci_bus_id;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int sm_clock_khz = 0;      // peak
  int memory_clock_khz = 0;  // peak
  int memory_bus_bits = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t total_memory_bytes = 0;
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;
  std::string cublas_version;
  std::string cublaslt_version;
  std::string built_archs;  // TILEFUSE_CUDA_ARCHS of this build
};

// Selects `device` and reads its facts. Throws BenchError when there is no usable GPU.
DeviceInfo query_device(int device);

// "13.0" from 13000.
std::string cuda_version_string(int version);

}  // namespace tilefuse::bench
