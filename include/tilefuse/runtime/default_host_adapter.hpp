// DefaultHostAdapter: reaches the driver's tensor map encoders through the CUDA runtime's
// cudaGetDriverEntryPointByVersion, so tilefuse works without linking libcuda.
#pragma once

#include <functional>
#include <mutex>

#include <tilefuse/core/status.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse {

// The driver ABI version tilefuse asks for: the tensor map encoders' signatures as of CUDA 12.0.
inline constexpr unsigned kDriverEntryPointVersion = 12000;

// Looks `symbol` (e.g. "cuTensorMapEncodeTiled") up with cudaGetDriverEntryPointByVersion at
// kDriverEntryPointVersion. A kDriverError Status names the symbol, the cudaError and the query
// result when the driver is missing, too old, or lacks the symbol.
Status cuda_runtime_entry_point_lookup(char const* symbol, void** fn);

class DefaultHostAdapter : public HostAdapter {
 public:
  // Resolves one driver symbol into *fn. Injectable so tests can count look-ups and hand back fakes.
  using EntryPointLookup = std::function<Status(char const* symbol, void** fn)>;

  static constexpr char const* kName = "default";

  explicit DefaultHostAdapter(EntryPointLookup lookup = cuda_runtime_entry_point_lookup);

  char const* name() const override { return kName; }

  // Each entry point is looked up on first use, once for the life of this adapter (the outcome,
  // failure included, is kept: a missing driver does not appear later in the process).
  Status encode_tensor_map_tiled(TensorMapTiledArgs const& args, CUtensorMap* out) override;
  Status encode_tensor_map_im2col(TensorMapIm2colArgs const& args, CUtensorMap* out) override;
  Status write_value32(cudaStream_t stream, unsigned* address, unsigned value) override;
  Status wait_value32(cudaStream_t stream, unsigned const* address, unsigned value) override;

 private:
  struct ResolvedEntryPoint {
    std::once_flag once;
    void* fn = nullptr;
    Status status;
  };

  Status resolve(ResolvedEntryPoint& entry, char const* symbol, void** fn);
  // cuStreamWriteValue32 / cuStreamWaitValue32 (one signature): the address checked, the entry point resolved
  // once, a driver refusal reported by name.
  Status stream_value32(char const* what, ResolvedEntryPoint& entry, char const* symbol, cudaStream_t stream,
                        void const* address, unsigned value, unsigned flags);

  EntryPointLookup lookup_;
  ResolvedEntryPoint encode_tiled_;
  ResolvedEntryPoint encode_im2col_;
  ResolvedEntryPoint write_value32_;
  ResolvedEntryPoint wait_value32_;
};

// The process-wide DefaultHostAdapter that host_adapter() falls back to; it resolves each entry
// point once per process. Never destroyed, so launches from static destructors still find it.
DefaultHostAdapter& default_host_adapter();

}  // namespace tilefuse
