// Shared host-side helpers of the Hopper ladder (examples/hopper/0*.cu): the device check every step
// starts with, the tensor maps (through tilefuse's host adapter, never a direct driver call), bf16
// conversions and a PASS/FAIL line. Device code comes from the library's arch/ wrappers only.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (the encode itself goes through the host adapter)
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <tilefuse/arch/tma.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/runtime/tensor_map.hpp>

namespace ladder {

#define LADDER_CUDA(call)                                                                          \
  do {                                                                                             \
    cudaError_t const e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("FAIL: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__);    \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// True on an sm_90 device; otherwise says why the step does not run (the caller exits 0).
inline bool hopper_or_explain(char const* step) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("%s: no CUDA device here; this step needs an sm_90 (Hopper) GPU. SKIPPED\n", step);
    return false;
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  if (major != 9 || minor != 0) {
    std::printf("%s: the device is sm_%d%d; TMA + WGMMA need sm_90 (built for sm_90a). SKIPPED\n", step, major,
                minor);
    return false;
  }
  return true;
}

// A row-major rows x cols bf16 matrix as a rank-3 tensor map (cols, rows, 1) with box
// (box_cols, box_rows, 1): what arch::tma_load_3d reads. Encoded by tilefuse::make_tensor_map_tiled
// (argument checks, then the host adapter's cuTensorMapEncodeTiled), copied into the device-side
// arch::TmaDescriptor that travels as a __grid_constant__ kernel parameter.
inline tilefuse::arch::TmaDescriptor tensor_map(tilefuse::bfloat16_t const* data, std::uint64_t rows,
                                                std::uint64_t cols, std::uint32_t box_rows, std::uint32_t box_cols,
                                                CUtensorMapSwizzle swizzle) {
  tilefuse::TensorMapTiledArgs t;
  t.data_type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  t.rank = 3;
  t.global_address = const_cast<tilefuse::bfloat16_t*>(data);
  t.global_dim[0] = cols;
  t.global_dim[1] = rows;
  t.global_dim[2] = 1;
  t.global_strides[0] = cols * 2;
  t.global_strides[1] = rows * cols * 2;
  t.box_dim[0] = box_cols;
  t.box_dim[1] = box_rows;
  t.box_dim[2] = 1;
  t.swizzle = swizzle;
  t.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  t.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;  // outside the tensor: zeros
  CUtensorMap map;
  tilefuse::Status const s = tilefuse::make_tensor_map_tiled(t, &map);
  if (!s.ok()) {
    std::printf("FAIL: tensor map: %s\n", s.to_string().c_str());
    std::exit(1);
  }
  tilefuse::arch::TmaDescriptor d;
  static_assert(sizeof(d) == sizeof(map));
  std::memcpy(&d, &map, sizeof(map));
  return d;
}

// Small integers in [-2, 2]: exact in bf16, and every fp32 sum below is exact too.
inline std::vector<tilefuse::bfloat16_t> small_integers(std::size_t n, unsigned seed) {
  std::vector<tilefuse::bfloat16_t> v(n);
  unsigned x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = tilefuse::convert<tilefuse::bfloat16_t>(static_cast<double>(static_cast<int>((x >> 16) % 5) - 2));
  }
  return v;
}

inline double to_double(tilefuse::bfloat16_t v) { return static_cast<double>(tilefuse::to_float(v)); }

template <class T>
T* to_device(std::vector<T> const& host) {
  T* d = nullptr;
  LADDER_CUDA(cudaMalloc(&d, host.size() * sizeof(T)));
  LADDER_CUDA(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
std::vector<T> to_host(T const* device, std::size_t n) {
  std::vector<T> h(n);
  LADDER_CUDA(cudaMemcpy(h.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// D (m x n, row-major floats) against A (m x k row-major) * B (n x k row-major, i.e. K-major), exact.
inline int count_gemm_mismatches(std::vector<float> const& d, std::vector<tilefuse::bfloat16_t> const& a,
                                 std::vector<tilefuse::bfloat16_t> const& b, int m, int n, int k) {
  int bad = 0;
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < n; ++c) {
      double acc = 0;
      for (int i = 0; i < k; ++i) acc += to_double(a[r * k + i]) * to_double(b[c * k + i]);
      if (d[r * n + c] != static_cast<float>(acc)) {
        if (bad < 5) std::printf("  D[%d, %d] = %g, expected %g\n", r, c, d[r * n + c], acc);
        ++bad;
      }
    }
  }
  return bad;
}

inline int report(char const* step, int mismatches) {
  std::printf("%s: %s (%d mismatches)\n", step, mismatches == 0 ? "PASS" : "FAIL", mismatches);
  return mismatches == 0 ? 0 : 1;
}

}  // namespace ladder
