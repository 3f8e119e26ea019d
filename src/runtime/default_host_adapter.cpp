// The default adapter: driver entry points resolved once through the CUDA runtime, never linked.
#include <tilefuse/runtime/default_host_adapter.hpp>

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncode*_v12000: the exact driver signatures

#include <cstdint>
#include <type_traits>
#include <utility>

#include <tilefuse/runtime/tensor_map.hpp>

namespace tilefuse {
namespace {

constexpr char const* kEncodeTiledSymbol = "cuTensorMapEncodeTiled";
constexpr char const* kEncodeIm2colSymbol = "cuTensorMapEncodeIm2col";
constexpr char const* kWriteValue32Symbol = "cuStreamWriteValue32";
constexpr char const* kWaitValue32Symbol = "cuStreamWaitValue32";

constexpr char const* kDriverAdvice =
    "tilefuse needs an NVIDIA driver for CUDA 12.0 or newer to build TMA tensor maps: update the "
    "driver, or install your own adapter with tilefuse::set_host_adapter";

char const* query_result_name(cudaDriverEntryPointQueryResult q) {
  switch (q) {
    case cudaDriverEntryPointSuccess: return "cudaDriverEntryPointSuccess";
    case cudaDriverEntryPointSymbolNotFound: return "cudaDriverEntryPointSymbolNotFound";
    case cudaDriverEntryPointVersionNotSufficent: return "cudaDriverEntryPointVersionNotSufficent";
    default: return "not reported";
  }
}

// cuGetErrorName is itself a driver entry point; naming the few results the encoders document
// here keeps a failure message from needing a second look-up.
char const* cu_result_name(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return "CUresult";
  }
}

Status encode_failure(char const* symbol, CUresult result, std::string const& args,
                      Status const& validation) {
  return {StatusCode::kDriverError,
          status_message(symbol, " returned ", cu_result_name(result), " (", static_cast<int>(result),
                         ") for ", args, ": ",
                         validation.ok()
                             ? "the arguments pass tilefuse's checks, so the driver or device "
                               "refused them (TMA needs a compute capability 9.0+ GPU and a CUDA "
                               "12 driver); please report this message"
                             : "the arguments break a documented rule: " + validation.message())};
}

// A thread that has made no CUDA runtime call yet (the autograd engine's, on a first backward) has no current
// context, and the driver's encoders refuse to run there: make the current device's primary context current
// (cudaSetDevice does since CUDA 12) and say whether to try again.
bool made_context_current() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace

Status cuda_runtime_entry_point_lookup(char const* symbol, void** fn) {
  *fn = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSuccess;
  cudaError_t const error =
      cudaGetDriverEntryPointByVersion(symbol, fn, kDriverEntryPointVersion, cudaEnableDefault, &query);
  if (error == cudaSuccess && query == cudaDriverEntryPointSuccess && *fn != nullptr) {
    return Status::success();
  }
  // The failure is reported here; leave none behind for the host framework's next
  // cudaGetLastError() to misattribute to its own work.
  if (error != cudaSuccess) (void)cudaGetLastError();
  *fn = nullptr;
  return {StatusCode::kDriverError,
          status_message("cudaGetDriverEntryPointByVersion(\"", symbol, "\", ",
                         kDriverEntryPointVersion, ") returned ", cudaGetErrorName(error), " (",
                         cudaGetErrorString(error), ")",
                         error == cudaSuccess ? status_message(" with query result ", query_result_name(query)) : "")};
}

DefaultHostAdapter::DefaultHostAdapter(EntryPointLookup lookup) : lookup_(std::move(lookup)) {}

Status DefaultHostAdapter::resolve(ResolvedEntryPoint& entry, char const* symbol, void** fn) {
  std::call_once(entry.once, [&] {
    void* found = nullptr;
    Status looked_up = lookup_ ? lookup_(symbol, &found)
                               : Status{StatusCode::kDriverError, "no entry point lookup was given"};
    if (looked_up.ok() && found == nullptr) {
      looked_up = {StatusCode::kDriverError, "the lookup succeeded but returned a null pointer"};
    }
    if (!looked_up.ok()) {
      entry.status = {StatusCode::kDriverError,
                      status_message("cannot resolve the CUDA driver entry point ", symbol,
                                     " (ABI version ", kDriverEntryPointVersion,
                                     "): ", looked_up.message(), "; ", kDriverAdvice)};
      return;
    }
    entry.fn = found;
  });
  *fn = entry.fn;
  return entry.status;
}

Status DefaultHostAdapter::encode_tensor_map_tiled(TensorMapTiledArgs const& a, CUtensorMap* out) {
  void* fn = nullptr;
  TILEFUSE_RETURN_IF_ERROR(resolve(encode_tiled_, kEncodeTiledSymbol, &fn));
  auto const encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  auto const attempt = [&] {
    return encode(out, a.data_type, static_cast<cuuint32_t>(a.rank), a.global_address, a.global_dim,
                  a.global_strides, a.box_dim, a.element_strides, a.interleave, a.swizzle, a.l2_promotion,
                  a.oob_fill);
  };
  CUresult result = attempt();
  if (result == CUDA_ERROR_INVALID_CONTEXT && made_context_current()) result = attempt();
  if (result == CUDA_SUCCESS) return Status::success();
  return encode_failure(kEncodeTiledSymbol, result, to_string(a), validate(a));
}

Status DefaultHostAdapter::encode_tensor_map_im2col(TensorMapIm2colArgs const& a, CUtensorMap* out) {
  void* fn = nullptr;
  TILEFUSE_RETURN_IF_ERROR(resolve(encode_im2col_, kEncodeIm2colSymbol, &fn));
  auto const encode = reinterpret_cast<PFN_cuTensorMapEncodeIm2col_v12000>(fn);
  auto const attempt = [&] {
    return encode(out, a.data_type, static_cast<cuuint32_t>(a.rank), a.global_address, a.global_dim,
                  a.global_strides, a.pixel_box_lower_corner, a.pixel_box_upper_corner, a.channels_per_pixel,
                  a.pixels_per_column, a.element_strides, a.interleave, a.swizzle, a.l2_promotion, a.oob_fill);
  };
  CUresult result = attempt();
  if (result == CUDA_ERROR_INVALID_CONTEXT && made_context_current()) result = attempt();
  if (result == CUDA_SUCCESS) return Status::success();
  return encode_failure(kEncodeIm2colSymbol, result, to_string(a), validate(a));
}

DefaultHostAdapter& default_host_adapter() {
  static DefaultHostAdapter* const adapter = new DefaultHostAdapter();
  return *adapter;
}

Status DefaultHostAdapter::stream_value32(char const* what, ResolvedEntryPoint& entry, char const* symbol,
                                          cudaStream_t stream, void const* address, unsigned value, unsigned flags) {
  if (address == nullptr || reinterpret_cast<std::uintptr_t>(address) % 4 != 0) {
    return invalid_argument(what, ": the address must be a non-null, 4-byte aligned device pointer");
  }
  void* fn = nullptr;
  TILEFUSE_RETURN_IF_ERROR(resolve(entry, symbol, &fn));
  static_assert(std::is_same_v<PFN_cuStreamWriteValue32_v11070, PFN_cuStreamWaitValue32_v11070>);
  auto const op = reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(fn);
  CUresult const result =
      op(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(address), value, flags);
  if (result != CUDA_SUCCESS) {
    return {StatusCode::kDriverError,
            status_message(symbol, " returned ", cu_result_name(result), " (", static_cast<int>(result),
                           "): the device or driver refused a stream memory operation")};
  }
  return Status::success();
}

// Flags 0: the default write, with the memory fence before it that makes the stream's earlier writes (the
// copies) visible first.
Status DefaultHostAdapter::write_value32(cudaStream_t stream, unsigned* address, unsigned value) {
  return stream_value32("write_value32", write_value32_, kWriteValue32Symbol, stream, address, value, 0);
}

Status DefaultHostAdapter::wait_value32(cudaStream_t stream, unsigned const* address, unsigned value) {
  return stream_value32("wait_value32", wait_value32_, kWaitValue32Symbol, stream, address, value,
                        CU_STREAM_WAIT_VALUE_GEQ);
}

}  // namespace tilefuse
