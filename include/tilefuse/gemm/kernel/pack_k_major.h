// Copies a batch of rows x k matrices into packed rows of padded_k elements with zeros past k: the Hopper
// GEMM's K-major operand layout, for operands TMA cannot read as they are (unaligned rows, other layouts).
// 64 x 64 tiles pass through shared memory so that the reads (along whichever stride is 1) and the packed
// writes both coalesce. Parameters and grid: pack_k_major_params.h.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/pack_k_major_params.h>

namespace tilefuse::gemm {

// One block per 64 x 64 tile of one matrix (grid x: tiles, z: batches, stepping over those beyond gridDim.z).
template <class T>
__global__ void __launch_bounds__(kPackThreads) pack_k_major_kernel(PackKMajorParams const p) {
  // Rows an odd number of 32-bit words apart, so that the transposed fill (one row per lane) is conflict-free.
  constexpr int kRow = kPackTile + (sizeof(T) < 4 ? 4 / static_cast<int>(sizeof(T)) : 1);
  __shared__ T tile[kPackTile][kRow];
  T const* const src = static_cast<T const*>(p.src);
  T* const dst = static_cast<T*>(p.dst);
  index_t const r0 = (index_t{blockIdx.x} % p.row_tiles) * kPackTile;
  index_t const c0 = (index_t{blockIdx.x} / p.row_tiles) * kPackTile;
  int const tx = static_cast<int>(threadIdx.x) % kPackTile;
  int const ty = static_cast<int>(threadIdx.x) / kPackTile;
  bool const along_k = p.k_stride == 1 || p.row_stride != 1;  // else rows are contiguous: read down the rows
  for (index_t b = blockIdx.z; b < p.batches; b += gridDim.z) {
    T const* const base = src + b * p.batch_stride;
    T* const out = dst + b * p.rows * p.padded_k;
    for (int i = ty; i < kPackTile; i += kPackRowsPerPass) {
      int const rr = along_k ? i : tx;
      int const cc = along_k ? tx : i;
      index_t const r = r0 + rr;
      index_t const c = c0 + cc;
      tile[rr][cc] = r < p.rows && c < p.k ? base[r * p.row_stride + c * p.k_stride] : T{};  // T{}: zero bits
    }
    __syncthreads();
    for (int i = ty; i < kPackTile; i += kPackRowsPerPass) {
      index_t const r = r0 + i;
      index_t const c = c0 + tx;
      if (r < p.rows && c < p.padded_k) out[r * p.padded_k + c] = tile[i][tx];
    }
    __syncthreads();  // the tile is refilled for the next batch
  }
}

}  // namespace tilefuse::gemm
