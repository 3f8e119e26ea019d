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

// grid: (row tiles, up to 65535 of the padded_k tiles, up to 65535 batches); block (kPackTile, kPackRowsPerPass).
// Blocks step over the k tiles and batches beyond their grid dimensions.
template <class T>
__global__ void pack_k_major_kernel(T const* src, index_t rows, index_t k, index_t row_stride, index_t k_stride,
                                    index_t batch_stride, T* dst, index_t padded_k, index_t batches) {
  __shared__ T tile[kPackTile][kPackTile + 1];
  index_t const r0 = index_t{blockIdx.x} * kPackTile;
  int const tx = threadIdx.x;
  int const ty = threadIdx.y;
  bool const along_k = k_stride == 1;  // else rows are contiguous (row_stride 1): read down the rows
  for (index_t b = blockIdx.z; b < batches; b += gridDim.z) {
    T const* const base = src + b * batch_stride;
    T* const out = dst + b * rows * padded_k;
    for (index_t c0 = index_t{blockIdx.y} * kPackTile; c0 < padded_k; c0 += index_t{gridDim.y} * kPackTile) {
      for (int i = ty; i < kPackTile; i += kPackRowsPerPass) {
        int const rr = along_k ? i : tx;
        int const cc = along_k ? tx : i;
        index_t const r = r0 + rr;
        index_t const c = c0 + cc;
        tile[rr][cc] = r < rows && c < k ? base[r * row_stride + c * k_stride] : T{};  // value-initialized: zero bits
      }
      __syncthreads();
      for (int i = ty; i < kPackTile; i += kPackRowsPerPass) {
        index_t const r = r0 + i;
        index_t const c = c0 + tx;
        if (r < rows && c < padded_k) out[r * padded_k + c] = tile[i][tx];
      }
      __syncthreads();  // the tile is refilled by the next step
    }
  }
}

}  // namespace tilefuse::gemm
