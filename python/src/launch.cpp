// tilefuse._C's runtime half: what a JIT-compiled kernel needs from the host that Python cannot do
// itself. Tensor maps are encoded through the C++ host adapter (so nothing links libcuda), kernels
// (cudaKernel_t handles from tilefuse.jit's loader, cast to integers) are launched through it with their
// Params patched per call (PreparedLaunch), and the parameter layout a kernel's companion layout kernel
// writes is read back. Every CUDA failure raises with the runtime's own error name; nothing here runs at
// import.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tilefuse/conv/device/conv2d_sm90_launch.hpp>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>
#include <tilefuse/conv/kernel/gather_columns_params.h>
#include <tilefuse/gemm/kernel/pack_k_major_params.h>
#include <tilefuse/runtime/default_host_adapter.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

#include "conv_values.hpp"
#include "cuda_errors.hpp"

namespace nb = nanobind;

namespace {

// Whether `device` has its primary context (torch's hasPrimaryContext): making a device current creates it
// (hundreds of MB), so a device without one is not made current again. True where the driver cannot be asked.
bool has_primary_context(int device) {
  using GetState = int (*)(int, unsigned*, int*);  // cuDevicePrimaryCtxGetState(CUdevice, flags, active)
  static GetState const get = [] {
    void* fn = nullptr;
    return tilefuse::cuda_runtime_entry_point_lookup("cuDevicePrimaryCtxGetState", &fn).ok()
               ? reinterpret_cast<GetState>(fn)
               : nullptr;
  }();
  if (get == nullptr) return true;
  unsigned flags = 0;
  int active = 0;
  return get(device, &flags, &active) != 0 || active != 0;
}

// Makes `device` current for a scope and gives the caller's current device back after it (a launch on another
// GPU must not move torch's current device), unless that device has no context yet.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) {
      check_cuda(cudaSetDevice(device), "cudaSetDevice");
      switched_ = true;
    }
  }
  ~DeviceScope() {
    if (switched_ && has_primary_context(previous_)) (void)cudaSetDevice(previous_);
  }
  DeviceScope(DeviceScope const&) = delete;
  DeviceScope& operator=(DeviceScope const&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// The 128-byte tensor map of one K-major operand of the Hopper GEMM (gemm/device/sm90_operand_map.hpp).
nb::bytes encode_sm90_operand(std::string const& name, std::string const& element, std::uintptr_t data,
                              std::int64_t k, std::int64_t rows, std::int64_t batch, std::int64_t ld,
                              std::int64_t batch_stride, int box_k, int box_rows) {
  CUtensorMapDataType type;
  int bytes = 0;
  if (element == "bfloat16") {
    type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, bytes = 2;
  } else if (element == "float16") {
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16, bytes = 2;
  } else if (element == "float8_e4m3" || element == "float8_e5m2") {
    type = CU_TENSOR_MAP_DATA_TYPE_UINT8, bytes = 1;
  } else {
    throw std::invalid_argument("tilefuse: the Hopper GEMM's operands are bfloat16, float16, float8_e4m3 or "
                                "float8_e5m2, not " + element);
  }
  alignas(64) CUtensorMap map;
  raise_status(tilefuse::gemm::encode_sm90_operand(name.c_str(), type, bytes, reinterpret_cast<void const*>(data), k,
                                                   rows, batch, ld, batch_stride, box_k, box_rows, &map));
  return nb::bytes(reinterpret_cast<char const*>(&map), sizeof(map));
}

// The tensor maps of the planned Hopper conv kernel's operands (conv2d_sm90_launch.hpp, as conv::Conv2d
// encodes them): (tma_a, or empty bytes for the gathering fprop; tma_b; the activation-tiled flag).
// geometry: N, H, W, C, K, R, S, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w.
nb::tuple encode_conv_sm90_operands(std::string const& mode, std::vector<std::int64_t> const& geometry,
                                    std::string const& element, std::string const& tile, bool im2col, bool half_k,
                                    bool pointwise, std::uintptr_t a, std::uintptr_t b) {
  using namespace tilefuse::conv;
  tilefuse::Conv2dProblem const p = tilefuse_python::conv_problem(mode, geometry);
  ConvPlan plan;
  std::optional<ConvSm90Tile> const t = conv_sm90_tile_named(tile);
  if (!t) throw std::invalid_argument("tilefuse: no Hopper conv tile named '" + tile + "'");
  plan.sm90_tile = *t;
  plan.im2col = im2col, plan.half_k = half_k, plan.pointwise = pointwise;
  ConvElement const e = tilefuse_python::conv_element(element);
  if (!is_16bit(e)) throw std::invalid_argument("tilefuse: the Hopper conv from Python takes bfloat16 or float16");
  alignas(64) tilefuse::arch::TmaDescriptor map_a{}, map_b{};
  int tiled = 0;
  bool const has_a = im2col || p.mode != tilefuse::ConvMode::kFprop;
  raise_status(encode_conv_sm90_operands(p, e, plan, reinterpret_cast<void const*>(a), reinterpret_cast<void const*>(b),
                                         has_a ? &map_a : nullptr, &map_b, &tiled));
  return nb::make_tuple(has_a ? nb::bytes(reinterpret_cast<char const*>(&map_a), sizeof(map_a)) : nb::bytes("", 0),
                        nb::bytes(reinterpret_cast<char const*>(&map_b), sizeof(map_b)), tiled);
}

// The ConvGeometry (15 ints: N, H, W, C, K, R, S, P, Q, pads, strides, dilations) the Hopper kernel of
// `mode` reads: dgrad's is that of its equivalent fprop (dgrad_as_fprop), the others the problem's own.
std::vector<std::int64_t> conv_sm90_geometry(std::string const& mode, std::vector<std::int64_t> const& g) {
  tilefuse::Conv2dProblem const p = tilefuse_python::conv_problem(mode, g);
  tilefuse::Conv2dProblem const f = p.mode == tilefuse::ConvMode::kDgrad ? tilefuse::dgrad_as_fprop(p) : p;
  return {f.N, f.H, f.W, f.C, f.K, f.R, f.S, f.P(), f.Q(), f.pad_h, f.pad_w, f.stride_h, f.stride_w, f.dilation_h, f.dilation_w};
}

// A read-only run of slots (pointers or scalars) in slot order.
template <class T>
struct Slots {
  T const* data;
  std::size_t count;
  std::size_t size() const { return count; }
  T const& operator[](std::size_t i) const { return data[i]; }
};

// A kernel launch whose Params bytes were packed once (tilefuse.kernel_params.Launch): a call patches the
// pointers (64-bit), the scalars (float) and the tensor maps (128 bytes) at their offsets and launches, all
// here rather than in Python (the warm call's host cost). Pointers and scalars come in slot order, as the
// Python side numbers its keys. A group of maps is encoded by a Python callable from its slots' pointers
// (encode(*pointers) -> one 128-byte bytes per offset) and its last kRecent encodings are kept: a training
// loop's caching allocator hands the same addresses back step after step.
class PreparedLaunch {
 public:
  static constexpr std::size_t kRecent = 32;

  // after_previous_early: the kernel waits for the previous kernel's writes itself (the Hopper kernel:
  // LaunchConfig::after_previous_early), so it may be launched before that kernel has finished.
  PreparedLaunch(std::uintptr_t kernel, unsigned grid, unsigned block, unsigned cluster, std::size_t smem_bytes,
                 unsigned grid_z, nb::bytes params, bool after_previous_early)
      : kernel_(kernel), grid_(grid), block_(block), cluster_(cluster), smem_bytes_(smem_bytes), grid_z_(grid_z),
        after_previous_early_(after_previous_early), template_(params.c_str(), params.c_str() + params.size()) {}

  bool after_previous_early() const { return after_previous_early_; }
  void add_pointer(std::size_t offset, int slot) { pointers_.push_back({checked(offset, 8), slot}); }
  void add_scalar(std::size_t offset, int slot) { scalars_.push_back({checked(offset, 4), slot}); }
  void add_maps(std::vector<std::size_t> const& offsets, std::vector<int> const& slots, nb::callable encode) {
    Maps maps{{}, slots, std::move(encode), {}};
    for (std::size_t offset : offsets) maps.offsets.push_back(checked(offset, 128));
    maps_.push_back(std::move(maps));
  }

  // The Params bytes of a call (what run() launches with).
  nb::bytes pack(std::vector<std::uint64_t> const& pointers, std::vector<double> const& scalars) {
    std::vector<char> params(template_);
    fill(params.data(), {pointers.data(), pointers.size()}, {scalars.data(), scalars.size()});
    return nb::bytes(params.data(), params.size());
  }

  void run(int device, std::uintptr_t stream, std::vector<std::uint64_t> const& pointers,
           std::vector<double> const& scalars) {
    run_slots(device, stream, {pointers.data(), pointers.size()}, {scalars.data(), scalars.size()});
  }

  // run() on slot arrays: what tilefuse._torch_ops calls (through run_prepared_launch) without Python.
  void run_slots(int device, std::uintptr_t stream, Slots<std::uint64_t> pointers, Slots<double> scalars) {
    DeviceScope const on(device);
    // The kernel copies its by-value parameter at launch; 64-byte alignment keeps the tensor maps at the
    // alignment the struct declares. One buffer per thread: the autograd engine's thread launches too.
    thread_local std::vector<std::uint64_t> storage;
    storage.resize((template_.size() + 7) / 8 + 8);
    auto* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(storage.data()) + 63) & ~std::uintptr_t{63});
    std::memcpy(aligned, template_.data(), template_.size());
    fill(aligned, pointers, scalars);
    tilefuse::LaunchConfig config;
    config.grid = dim3(grid_, 1, grid_z_);
    config.block = dim3(block_);
    config.cluster = dim3(cluster_, 1, 1);
    config.dynamic_smem_bytes = smem_bytes_;
    config.stream = reinterpret_cast<cudaStream_t>(stream);
    config.after_previous_early = after_previous_early_;
    void* args[] = {aligned};
    raise_status(tilefuse::host_adapter().launch(config, reinterpret_cast<void const*>(kernel_), args));
  }

 private:
  using Blob = std::array<char, 128>;
  struct Maps {
    std::vector<std::size_t> offsets;
    std::vector<int> slots;
    nb::callable encode;
    std::vector<std::pair<std::vector<std::uint64_t>, std::vector<Blob>>> recent;  // oldest first
  };

  std::size_t checked(std::size_t offset, std::size_t bytes) const {
    if (offset + bytes > template_.size()) {
      throw std::invalid_argument("tilefuse: a parameter at byte " + std::to_string(offset) + " (" +
                                  std::to_string(bytes) + " bytes) lies past the " +
                                  std::to_string(template_.size()) + "-byte Params");
    }
    return offset;
  }

  static std::uint64_t at(Slots<std::uint64_t> pointers, int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= pointers.size()) {
      throw std::invalid_argument("tilefuse: pointer slot " + std::to_string(slot) + " of " +
                                  std::to_string(pointers.size()));
    }
    return pointers[static_cast<std::size_t>(slot)];
  }

  std::vector<Blob> const& encoded(Maps& maps, Slots<std::uint64_t> pointers) {
    // A hit (every warm call of a steady loop) compares in place: no allocation per launch.
    auto const same = [&](std::vector<std::uint64_t> const& key) {
      for (std::size_t i = 0; i < key.size(); ++i) {
        if (key[i] != at(pointers, maps.slots[i])) return false;
      }
      return true;
    };
    for (auto const& [key, blobs] : maps.recent) {
      if (same(key)) return blobs;
    }
    std::vector<std::uint64_t> bound;
    for (int slot : maps.slots) bound.push_back(at(pointers, slot));
    nb::gil_scoped_acquire gil;  // a launch from the autograd engine's thread runs without the GIL
    nb::list args;
    for (std::uint64_t p : bound) args.append(p);
    nb::object const result = nb::steal(PyObject_CallObject(maps.encode.ptr(), nb::tuple(args).ptr()));
    if (!result.is_valid()) throw nb::python_error();
    std::vector<Blob> blobs;
    for (nb::handle item : result) {
      nb::bytes const b = nb::cast<nb::bytes>(item);
      if (b.size() != 128) throw std::invalid_argument("tilefuse: a tensor map encoder returned other than 128 bytes");
      Blob blob;
      std::memcpy(blob.data(), b.c_str(), 128);
      blobs.push_back(blob);
    }
    if (blobs.size() != maps.offsets.size()) {
      throw std::invalid_argument("tilefuse: a tensor map encoder returned " + std::to_string(blobs.size()) +
                                  " maps for " + std::to_string(maps.offsets.size()) + " offsets");
    }
    if (maps.recent.size() >= kRecent) maps.recent.erase(maps.recent.begin());
    maps.recent.emplace_back(std::move(bound), std::move(blobs));
    return maps.recent.back().second;
  }

  void fill(char* params, Slots<std::uint64_t> pointers, Slots<double> scalars) {
    for (auto const& [offset, slot] : pointers_) {
      std::uint64_t const value = at(pointers, slot);
      std::memcpy(params + offset, &value, 8);
    }
    for (auto const& [offset, slot] : scalars_) {
      if (slot < 0 || static_cast<std::size_t>(slot) >= scalars.size()) {
        throw std::invalid_argument("tilefuse: scalar slot " + std::to_string(slot) + " of " +
                                    std::to_string(scalars.size()));
      }
      float const value = static_cast<float>(scalars[static_cast<std::size_t>(slot)]);
      std::memcpy(params + offset, &value, 4);
    }
    for (Maps& maps : maps_) {
      std::vector<Blob> const& blobs = encoded(maps, pointers);
      for (std::size_t i = 0; i < blobs.size(); ++i) std::memcpy(params + maps.offsets[i], blobs[i].data(), 128);
    }
  }

  std::uintptr_t kernel_;
  unsigned grid_, block_, cluster_;
  std::size_t smem_bytes_;
  unsigned grid_z_;
  bool after_previous_early_;
  std::vector<char> template_;
  std::vector<std::pair<std::size_t, int>> pointers_, scalars_;
  std::vector<Maps> maps_;
};

// The C entry tilefuse._torch_ops launches a PreparedLaunch through (its address and this function's come from
// PreparedLaunch.address and _C.run_prepared_launch_address): 0 on success, else 1 with the error in `error`.
extern "C" int run_prepared_launch(void* launch, int device, std::uintptr_t stream, std::uint64_t const* pointers,
                                   std::size_t pointer_count, double const* scalars, std::size_t scalar_count,
                                   char* error, std::size_t error_size) {
  try {
    static_cast<PreparedLaunch*>(launch)->run_slots(device, stream, {pointers, pointer_count},
                                                    {scalars, scalar_count});
    return 0;
  } catch (std::exception const& e) {
    std::snprintf(error, error_size, "%s", e.what());
  } catch (...) {
    std::snprintf(error, error_size, "tilefuse: a launch failed (a Python error while encoding a tensor map)");
  }
  return 1;
}

// The C entry tilefuse._torch_ops zeroes a split's workspace through (its address: _C.zero_async_address):
// cudaMemsetAsync on `stream`, cheaper on the host than torch.zeros' fill kernel. 0, else 1 with the error.
extern "C" int zero_async(std::uint64_t address, std::size_t bytes, int device, std::uintptr_t stream, char* error,
                          std::size_t error_size) {
  try {
    DeviceScope const on(device);
    check_cuda(cudaMemsetAsync(reinterpret_cast<void*>(address), 0, bytes, reinterpret_cast<cudaStream_t>(stream)),
               "cudaMemsetAsync of a split's workspace");
    return 0;
  } catch (std::exception const& e) {
    std::snprintf(error, error_size, "%s", e.what());
  }
  return 1;
}

// Runs a layout kernel (one thread; writes `words` 64-bit integers to its pointer argument) and
// returns what it wrote.
std::vector<std::int64_t> read_layout(std::uintptr_t kernel, int device, int words) {
  DeviceScope const on(device);
  void* out = nullptr;
  check_cuda(cudaMalloc(&out, sizeof(std::int64_t) * words), "cudaMalloc");
  std::vector<std::int64_t> host(static_cast<std::size_t>(words), -1);
  tilefuse::LaunchConfig config;
  void* args[] = {&out};
  tilefuse::Status const s = tilefuse::host_adapter().launch(config, reinterpret_cast<void const*>(kernel), args);
  cudaError_t const copied =
      s.ok() ? cudaMemcpy(host.data(), out, sizeof(std::int64_t) * words, cudaMemcpyDeviceToHost) : cudaSuccess;
  (void)cudaFree(out);
  raise_status(s);
  check_cuda(copied, "cudaMemcpy of the parameter layout");
  return host;
}

// {sm_count, major, minor} of `device`.
std::vector<int> device_properties(int device) {
  int sms = 0, major = 0, minor = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  return {sms, major, minor};
}

// The packing copy's launch (gemm::pack_k_major_launch, as gemm::Gemm makes it): (Params bytes with null
// pointers, the src and dst pointers' offsets in them, grid x, grid z, threads per block).
nb::tuple pack_k_major_launch(std::int64_t rows, std::int64_t k, std::int64_t row_stride, std::int64_t k_stride,
                              std::int64_t batches, std::int64_t batch_stride, std::int64_t padded_k) {
  using tilefuse::gemm::PackKMajorParams;
  auto const launch = tilefuse::gemm::pack_k_major_launch(nullptr, rows, k, row_stride, k_stride, batches,
                                                          batch_stride, nullptr, padded_k);
  if (launch.grid_x == 0 || launch.grid_z == 0) {
    throw std::invalid_argument("tilefuse: copying an operand of " + std::to_string(batches) + " x " +
                                std::to_string(rows) + " x " + std::to_string(padded_k) +
                                " for the Hopper GEMM: no tiles, or more 64 x 64 tiles than a grid holds");
  }
  return nb::make_tuple(nb::bytes(reinterpret_cast<char const*>(&launch.params), sizeof(PackKMajorParams)),
                        offsetof(PackKMajorParams, src), offsetof(PackKMajorParams, dst), launch.grid_x,
                        launch.grid_z, tilefuse::gemm::kPackThreads);
}

// The im2col gather's launch (conv/kernel/gather_columns.h) for the wgrad of few channels: (Params bytes with
// null pointers, the src and dst pointers' offsets in them, grid x, threads per block).
nb::tuple gather_columns_launch(std::vector<std::int64_t> const& sizes, std::int64_t rows, std::int64_t padded_k) {
  using tilefuse::conv::GatherColumnsParams;
  if (sizes.size() != 15) throw std::invalid_argument("tilefuse: gather_columns_launch takes 15 sizes");
  GatherColumnsParams p;
  std::tie(p.N, p.H, p.W, p.x_channels, p.channels, p.R, p.S, p.P, p.Q, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
           p.dilation_h, p.dilation_w) = std::tuple(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5],
                                                    sizes[6], sizes[7], sizes[8], sizes[9], sizes[10], sizes[11],
                                                    sizes[12], sizes[13], sizes[14]);
  p.rows = rows;
  p.padded_k = padded_k;
  std::int64_t const grid = tilefuse::conv::gather_columns_grid(padded_k);
  if (grid == 0 || rows < p.R * p.S * p.channels || padded_k < p.N * p.P * p.Q || p.channels > p.x_channels) {
    throw std::invalid_argument("tilefuse: the im2col gather of " + std::to_string(rows) + " x " +
                                std::to_string(padded_k) + " columns does not fit its sizes or a grid");
  }
  return nb::make_tuple(nb::bytes(reinterpret_cast<char const*>(&p), sizeof(GatherColumnsParams)),
                        offsetof(GatherColumnsParams, src), offsetof(GatherColumnsParams, dst), grid,
                        tilefuse::conv::kGatherThreads);
}

}  // namespace

void bind_launch(nb::module_& m) {
  m.def("encode_sm90_operand", &encode_sm90_operand, nb::arg("name"), nb::arg("element"), nb::arg("data"),
        nb::arg("k"), nb::arg("rows"), nb::arg("batch"), nb::arg("ld"), nb::arg("batch_stride"), nb::arg("box_k"),
        nb::arg("box_rows"),
        "The 128-byte TMA tensor map of a K-major operand of the Hopper GEMM, through the host adapter.");
  m.def("encode_conv_sm90_operands", &encode_conv_sm90_operands, nb::arg("mode"), nb::arg("geometry"),
        nb::arg("element"), nb::arg("tile"), nb::arg("im2col"), nb::arg("half_k"), nb::arg("pointwise"), nb::arg("a"),
        nb::arg("b"), "The Hopper conv kernel's operand tensor maps, as conv::Conv2d encodes them.");
  m.def("conv_sm90_geometry", &conv_sm90_geometry, nb::arg("mode"), nb::arg("geometry"),
        "The ConvGeometry the Hopper conv kernel of a mode reads (dgrad: its equivalent fprop's).");
  m.def("tma_residual_unaligned", [](std::uintptr_t data, std::int64_t ld, std::int64_t batch, std::int64_t batch_stride) {
          return tilefuse::gemm::tma_residual_unaligned(reinterpret_cast<void const*>(data), ld, batch, batch_stride);
        }, nb::arg("data"), nb::arg("ld"), nb::arg("batch"), nb::arg("batch_stride"),
        "Why TMA cannot read a 16-bit residual so (empty: it can): the planners' residual facts.");
  m.def("d_storable_by_tma", [](std::uintptr_t data, std::int64_t n, std::int64_t ld, std::int64_t batch,
                                std::int64_t batch_stride) {
          return tilefuse::gemm::d_storable_by_tma(reinterpret_cast<void const*>(data), n, ld, batch, batch_stride);
        }, nb::arg("data"), nb::arg("n"), nb::arg("ld"), nb::arg("batch"), nb::arg("batch_stride"),
        "Whether TMA stores write exactly a 16-bit D so (the Hopper kernel's packed epilogue).");
  m.def("column_copyable_by_tma", [](std::uintptr_t data, int element_bytes, std::int64_t n, std::int64_t batch,
                                     std::int64_t batch_stride) {
          return tilefuse::gemm::column_copyable_by_tma(reinterpret_cast<void const*>(data), element_bytes, n, batch,
                                                        batch_stride);
        }, nb::arg("data"), nb::arg("element_bytes"), nb::arg("n"), nb::arg("batch"), nb::arg("batch_stride"),
        "Whether the Hopper kernel's TMA residual path can copy the column vector (bias) beside it.");
  nb::class_<PreparedLaunch>(m, "PreparedLaunch",
                              "A kernel launch with its Params packed once; run() patches pointers, scalars and "
                              "tensor maps in C++ and launches.")
      .def(nb::init<std::uintptr_t, unsigned, unsigned, unsigned, std::size_t, unsigned, nb::bytes, bool>(),
           nb::arg("kernel"), nb::arg("grid"), nb::arg("block"), nb::arg("cluster"), nb::arg("smem_bytes"),
           nb::arg("grid_z"), nb::arg("params"), nb::arg("after_previous_early") = false)
      .def_prop_ro("after_previous_early", &PreparedLaunch::after_previous_early)
      .def("add_pointer", &PreparedLaunch::add_pointer, nb::arg("offset"), nb::arg("slot"))
      .def("add_scalar", &PreparedLaunch::add_scalar, nb::arg("offset"), nb::arg("slot"))
      .def("add_maps", &PreparedLaunch::add_maps, nb::arg("offsets"), nb::arg("slots"), nb::arg("encode"))
      .def("pack", &PreparedLaunch::pack, nb::arg("pointers"), nb::arg("scalars"),
           "The Params bytes a call with these pointers and scalars launches with.")
      .def("run", &PreparedLaunch::run, nb::arg("device"), nb::arg("stream"), nb::arg("pointers"),
           nb::arg("scalars"))
      .def_prop_ro("address", [](PreparedLaunch& self) { return reinterpret_cast<std::uintptr_t>(&self); },
                   "This launch's address, for run_prepared_launch (valid while the object lives).");
  m.attr("run_prepared_launch_address") = reinterpret_cast<std::uintptr_t>(&run_prepared_launch);
  m.attr("zero_async_address") = reinterpret_cast<std::uintptr_t>(&zero_async);
  m.def("gather_columns_launch", &gather_columns_launch, nb::arg("sizes"), nb::arg("rows"), nb::arg("padded_k"),
        "The launch of the im2col gather (conv/kernel/gather_columns.h): sizes are N, H, W, x's channels, the "
        "channels gathered, R, S, P, Q, pad, stride and dilation (h, w each).");
  m.def("pack_k_major_launch", &pack_k_major_launch, nb::arg("rows"), nb::arg("k"), nb::arg("row_stride"),
        nb::arg("k_stride"), nb::arg("batches"), nb::arg("batch_stride"), nb::arg("padded_k"),
        "The launch of the packing copy into the Hopper GEMM's K-major layout (gemm/kernel/pack_k_major.h): "
        "(params, src offset, dst offset, grid, grid_z, threads).");
  m.def("read_layout", &read_layout, nb::arg("kernel"), nb::arg("device"), nb::arg("words"),
        "Runs a parameter-layout kernel and returns the integers it wrote.");
  m.def("device_properties", &device_properties, nb::arg("device"), "[sm_count, major, minor] of a device.");
}
