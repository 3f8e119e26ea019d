// tilefuse._C: the compiled half of the Python package: the version, the number of CUDA devices, the
// element types the C++ library knows, and (launch.cpp) tensor maps and launches for JIT kernels.
// Nothing here may need a GPU to import.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include <tilefuse/core/data_type.h>

namespace nb = nanobind;

void bind_launch(nb::module_& m);  // launch.cpp
void bind_plan(nb::module_& m);    // plan.cpp
void bind_stream_program(nb::module_& m);  // stream_program.cpp

namespace {

// 0 when there is no GPU, no driver, or a driver too old for this runtime: a CPU-only machine is a
// normal place to import tilefuse, not an error. Other failures are real errors and raise.
int cuda_device_count() {
  int count = 0;
  cudaError_t const err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess) return count;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInitializationError ||
      err == cudaErrorNotSupported || err == cudaErrorSystemNotReady || err == cudaErrorCompatNotSupportedOnDevice) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  throw std::runtime_error(std::string("tilefuse: cudaGetDeviceCount failed with ") + cudaGetErrorName(err) +
                           ": " + cudaGetErrorString(err));
}

// The names of every element type the C++ library has (tilefuse::DataType), as name_of spells them.
std::vector<std::string> element_types() {
  using tilefuse::DataType;
  std::vector<std::string> names;
  for (DataType t : {DataType::kF16, DataType::kBF16, DataType::kE4M3, DataType::kE5M2, DataType::kTF32,
                     DataType::kF32, DataType::kF64, DataType::kI8, DataType::kI32}) {
    names.emplace_back(tilefuse::name_of(t));
  }
  return names;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "tilefuse's compiled extension (version, CUDA device count, element types, launches)";
  // Warm calls (PreparedLaunch) live in Python caches that outlast this module's teardown check at exit:
  // reported as leaks although nothing leaks while the process runs.
  nb::set_leak_warnings(false);
  m.attr("__version__") = TILEFUSE_VERSION;
  m.attr("cuda_runtime_version") = CUDART_VERSION;
  m.def("cuda_device_count", &cuda_device_count,
        "Number of CUDA devices; 0 (not an error) without a GPU or a usable driver.");
  m.def("element_types", &element_types, "Names of the element types of the C++ library.");
  bind_launch(m);
  bind_stream_program(m);
  bind_plan(m);
}
