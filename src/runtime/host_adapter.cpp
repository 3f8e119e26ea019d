// The installable host adapter and the default kernel launch through the CUDA runtime.
#include <tilefuse/runtime/host_adapter.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <tilefuse/runtime/default_host_adapter.hpp>

namespace tilefuse {
namespace {

// Kernels may use this much dynamic shared memory without opting in with cudaFuncSetAttribute.
constexpr std::size_t kDefaultDynamicSmemLimit = 48 * 1024;

// Above 48 KiB a kernel must opt in with cudaFuncSetAttribute, once per kernel and device (the
// attribute stays set). Remembered here so that repeated launches skip the runtime call.
Status opt_in_to_dynamic_smem(void const* kernel, std::size_t bytes) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) (void)cudaGetLastError();
  static std::mutex mutex;
  static std::map<std::pair<void const*, int>, std::size_t> granted;  // (kernel, device) -> bytes
  std::lock_guard<std::mutex> lock(mutex);
  std::size_t& done = granted[{kernel, device}];
  if (done >= bytes) return Status::success();
  cudaError_t const error =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // reported here; keep it out of the caller's next error check
    return {StatusCode::kCudaError,
            status_message("launch: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, ", bytes, ") returned ",
                           cudaGetErrorName(error), " (", cudaGetErrorString(error),
                           "): the device offers less shared memory per block than this kernel configuration "
                           "needs; pick a smaller tile or fewer pipeline stages")};
  }
  done = bytes;
  return Status::success();
}

// Read on every call without a lock; written under install_mutex().
std::atomic<HostAdapter*> g_installed{nullptr};

std::mutex& install_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Owns every adapter ever installed. Never destroyed and never shrunk: host_adapter() hands out
// plain references, which must stay valid while another thread installs a replacement.
std::vector<std::shared_ptr<HostAdapter>>& installed_adapters() {
  static auto* const adapters = new std::vector<std::shared_ptr<HostAdapter>>();
  return *adapters;
}

bool is_cluster_launch(dim3 const& cluster) {
  return cluster.x != 1 || cluster.y != 1 || cluster.z != 1;
}

}  // namespace

namespace detail {

cudaLaunchConfig_t to_cuda_launch_config(LaunchConfig const& config, LaunchAttributes& attributes) {
  cudaLaunchConfig_t launch_config{};
  launch_config.gridDim = config.grid;
  launch_config.blockDim = config.block;
  launch_config.dynamicSmemBytes = config.dynamic_smem_bytes;
  launch_config.stream = config.stream;
  unsigned count = 0;
  if (is_cluster_launch(config.cluster)) {
    cudaLaunchAttribute& a = attributes[count++];
    a = {};
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = config.cluster.x;
    a.val.clusterDim.y = config.cluster.y;
    a.val.clusterDim.z = config.cluster.z;
  }
  if (config.after_previous_early) {
    cudaLaunchAttribute& a = attributes[count++];
    a = {};
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
  }
  if (count > 0) {
    launch_config.attrs = attributes.data();
    launch_config.numAttrs = count;
  }
  return launch_config;
}

}  // namespace detail

HostAdapter& host_adapter() {
  HostAdapter* const installed = g_installed.load(std::memory_order_acquire);
  return installed != nullptr ? *installed : default_host_adapter();
}

void set_host_adapter(std::shared_ptr<HostAdapter> adapter) {
  std::lock_guard<std::mutex> lock(install_mutex());
  HostAdapter* const raw = adapter.get();
  if (raw != nullptr) {
    auto& owned = installed_adapters();
    bool const known = std::any_of(owned.begin(), owned.end(),
                                   [raw](auto const& held) { return held.get() == raw; });
    if (!known) owned.push_back(std::move(adapter));
  }
  g_installed.store(raw, std::memory_order_release);
}

Status HostAdapter::write_value32(cudaStream_t, unsigned*, unsigned) {
  return not_supported("write_value32: the installed host adapter (", name(), ") does not enqueue stream writes; ",
                       "override HostAdapter::write_value32 or use the default adapter");
}

Status HostAdapter::wait_value32(cudaStream_t, unsigned const*, unsigned) {
  return not_supported("wait_value32: the installed host adapter (", name(), ") does not enqueue stream waits; ",
                       "override HostAdapter::wait_value32 or use the default adapter");
}

Status HostAdapter::launch(LaunchConfig const& config, void const* kernel, void** kernel_args) {
  if (kernel == nullptr) {
    return invalid_argument("launch: kernel is null: pass the address of a __global__ function");
  }
  bool const clustered = is_cluster_launch(config.cluster);
  if (clustered) {
    dim3 const& g = config.grid;
    dim3 const& c = config.cluster;
    // The runtime reports a cluster that does not tile the grid as a bare invalid configuration.
    if (c.x == 0 || c.y == 0 || c.z == 0 || g.x % c.x != 0 || g.y % c.y != 0 || g.z % c.z != 0) {
      return invalid_argument("launch: cluster = (", c.x, ", ", c.y, ", ", c.z,
                              ") does not divide grid = (", g.x, ", ", g.y, ", ", g.z,
                              "): round the grid up to a multiple of the cluster shape in every "
                              "dimension");
    }
  }

  if (config.dynamic_smem_bytes > kDefaultDynamicSmemLimit) {
    TILEFUSE_RETURN_IF_ERROR(opt_in_to_dynamic_smem(kernel, config.dynamic_smem_bytes));
  }

  detail::LaunchAttributes attributes{};
  cudaLaunchConfig_t const launch_config = detail::to_cuda_launch_config(config, attributes);
  cudaError_t const error = cudaLaunchKernelExC(&launch_config, kernel, kernel_args);
  if (error == cudaSuccess) return Status::success();
  (void)cudaGetLastError();  // reported here; keep it out of the caller's next error check
  return {StatusCode::kCudaError,
          status_message("launch: cudaLaunchKernelExC returned ", cudaGetErrorName(error), " (",
                         cudaGetErrorString(error), ") for grid = (", config.grid.x, ", ",
                         config.grid.y, ", ", config.grid.z, "), block = (", config.block.x, ", ",
                         config.block.y, ", ", config.block.z, "), cluster = (", config.cluster.x,
                         ", ", config.cluster.y, ", ", config.cluster.z,
                         "), dynamic shared memory = ", config.dynamic_smem_bytes,
                         " bytes: check that the kernel was built for this GPU's architecture and "
                         "that the block and shared memory sizes fit it")};
}

}  // namespace tilefuse
