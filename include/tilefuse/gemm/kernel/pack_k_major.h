// Copies a batch of rows x k matrices, element (r, c) at src[b * batch_stride + r * row_stride + c * k_stride],
// into packed rows of padded_k elements with zeros past k: the Hopper GEMM's K-major operand layout, for
// operands TMA cannot read as they are (unaligned rows, other layouts). 32 x 32 tiles pass through shared
// memory so that the reads (along whichever stride is 1) and the packed writes both coalesce.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm {

inline constexpr int kPackTile = 32;
inline constexpr int kPackRowsPerPass = 8;  // the block is kPackTile x kPackRowsPerPass threads

// grid: (row tiles, padded_k tiles, batch); block (kPackTile, kPackRowsPerPass).
template <class T>
__global__ void pack_k_major_kernel(T const* src, index_t rows, index_t k, index_t row_stride, index_t k_stride,
                                    index_t batch_stride, T* dst, index_t padded_k) {
  __shared__ T tile[kPackTile][kPackTile + 1];
  index_t const r0 = index_t{blockIdx.x} * kPackTile;
  index_t const c0 = index_t{blockIdx.y} * kPackTile;
  index_t const b = blockIdx.z;
  int const tx = threadIdx.x;
  int const ty = threadIdx.y;
  T const* const base = src + b * batch_stride;
  bool const along_k = k_stride == 1;  // else rows are contiguous (row_stride 1): read down the rows
  for (int i = ty; i < kPackTile; i += kPackRowsPerPass) {
    int const rr = along_k ? i : tx;
    int const cc = along_k ? tx : i;
    index_t const r = r0 + rr;
    index_t const c = c0 + cc;
    tile[rr][cc] = r < rows && c < k ? base[r * row_stride + c * k_stride] : T{};  // value-initialized: zero bits
  }
  __syncthreads();
  T* const out = dst + b * rows * padded_k;
  for (int i = ty; i < kPackTile; i += kPackRowsPerPass) {
    index_t const r = r0 + i;
    index_t const c = c0 + tx;
    if (r < rows && c < padded_k) out[r * padded_k + c] = tile[i][tx];
  }
}

}  // namespace tilefuse::gemm
