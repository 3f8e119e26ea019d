// The GEMM of a few rows (m <= kSkinnyMaxRows: a decode step, a classifier head): D = epilogue(A B) with
// A m x k row-major and B k x n column-major (K-major), 16-bit, rows 16-byte aligned. Such a product reads B
// once and uses each element of it m times: it is bound by B's bytes, and a 128-row tile would be mostly
// padding. So a block of kSkinnyWarps warps owns kSkinnyColumns output columns and streams their part of B
// straight from global memory into m16n8k16 mma.sync fragments (no staging in shared memory, no ring): each warp takes
// every kSkinnyWarps-th 32-element chunk of K, each lane 16 bytes of one column of B and of one row of A
// (two for m > 8), kUnroll chunks in flight. K's order inside a chunk is permuted alike for A and B (lane
// quarter q holds elements 8q .. 8q + 7, which the mma reads as k 2q, 2q + 1, 2q + 8, 2q + 9 of two k16
// steps): a sum does not depend on the order of its terms. The warps' sums meet in shared memory and each
// row's kSkinnyColumns values take the epilogue tree as one fragment, as the split-K pass applies it.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/mma_sm80.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/skinny_gemm_shape.h>

namespace tilefuse::gemm::skinny {

template <class Element, class Epilogue>
struct Params {
  GemmCoord problem;
  Element const* a = nullptr;  // a[b * batch_stride_a + r * lda + c], r < m, c < k
  index_t lda = 0;
  index_t batch_stride_a = 0;
  Element const* b = nullptr;  // b[b * batch_stride_b + j * ldb + c], j < n, c < k (column j of B)
  index_t ldb = 0;
  index_t batch_stride_b = 0;
  typename Epilogue::Params epilogue;
};

namespace detail {

inline constexpr int kChunk = 32;   // K elements per warp step: 4 lanes x 8 elements of each column
inline constexpr int kUnroll = 4;   // chunks a lane has in flight (4 x 16 bytes of B; of A as many, twice past m = 8)

// Lane l's 8 elements of a chunk: row or column l / 4 (clamped to the last real one: valid memory, its
// sums never stored), elements 8 (l % 4) .. + 7 of the chunk.
// B: read once, evict first; the L2 fetches the whole 256-byte piece around it from DRAM, so the block's
// other warps (the next chunks of the same column) find theirs in L2 and DRAM serves long bursts.
template <class Element>
TILEFUSE_DEVICE uint4 load_stream(Element const* p) {
  uint4 v;
  asm("ld.global.cs.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
template <class Element>
TILEFUSE_DEVICE uint4 load_kept(Element const* p) {  // A: read by every block
  return __ldg(reinterpret_cast<uint4 const*>(p));
}

// The chunk past K's last whole one: elements at or past k read as zeros (the storage past k is not ours
// to trust), one 16-bit load each.
template <class Element>
TILEFUSE_DEVICE uint4 load_tail(Element const* row, index_t c, index_t k) {
  cuda::std::uint16_t const* const bits = reinterpret_cast<cuda::std::uint16_t const*>(row);
  cuda::std::uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    cuda::std::uint32_t const lo = c + 2 * i < k ? bits[c + 2 * i] : 0u;
    cuda::std::uint32_t const hi = c + 2 * i + 1 < k ? bits[c + 2 * i + 1] : 0u;
    w[i] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// One chunk: two m16n8k16 mmas over the lane's 8 elements of A's row l / 4 (lo), of row l / 4 + 8 (hi;
// zeros where m <= 8) and of B's column l / 4.
template <class Element>
TILEFUSE_DEVICE void mma_chunk(float (&acc)[4], uint4 const& lo, uint4 const& hi, uint4 const& b) {
  arch::mma_m16n8k16<Element>(acc, {lo.x, hi.x, lo.y, hi.y}, {b.x, b.y});
  arch::mma_m16n8k16<Element>(acc, {lo.z, hi.z, lo.w, hi.w}, {b.z, b.w});
}

// This warp's chunks (warp, warp + kSkinnyWarps, ...) of K's `chunks` whole ones, kUnroll at a time.
// kUpper: m > 8, rows 8 .. 15 of the mma are real.
template <bool kUpper, class Element>
TILEFUSE_DEVICE void add_chunks(float (&acc)[4], Element const* a_lo, Element const* a_hi, Element const* b,
                                index_t chunks, int warp) {
  constexpr index_t kStride = kSkinnyWarps;
  index_t c = warp;
  for (; c + (kUnroll - 1) * kStride < chunks; c += kUnroll * kStride) {
    uint4 bv[kUnroll], lo[kUnroll], hi[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      index_t const at = (c + u * kStride) * kChunk;
      bv[u] = load_stream(b + at);
      lo[u] = load_kept(a_lo + at);
      hi[u] = kUpper ? load_kept(a_hi + at) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) mma_chunk<Element>(acc, lo[u], hi[u], bv[u]);
  }
  for (; c < chunks; c += kStride) {
    index_t const at = c * kChunk;
    uint4 const hi = kUpper ? load_kept(a_hi + at) : make_uint4(0, 0, 0, 0);
    mma_chunk<Element>(acc, load_kept(a_lo + at), hi, load_stream(b + at));
  }
}

}  // namespace detail

// grid (ceil(n / kSkinnyColumns), 1, batch), kSkinnyThreads threads, sm_80+. launch_skinny checks 1 <= m <=
// kSkinnyMaxRows, n >= 1, k >= 1, 16-byte-aligned bases, leading dimensions and batch strides (whole 16-byte
// pieces), batch <= 65535.
template <class Element, class Epilogue>
__global__ void __launch_bounds__(kSkinnyThreads, 4) skinny_gemm_kernel(__grid_constant__ Params<Element, Epilogue> const p) {
  static_assert(sizeof(Element) == 2, "the skinny GEMM reads 16-bit operands");
  static_assert(kSkinnyMaxRows == 16 && kSkinnyColumns == 8, "one m16n8k16 mma's rows and columns");
  constexpr int kValues = kSkinnyMaxRows * kSkinnyColumns;
  __shared__ float partial[kSkinnyWarps][kValues];  // [warp][row * kSkinnyColumns + column]
  int const warp = static_cast<int>(threadIdx.x) / 32;
  int const lane = static_cast<int>(threadIdx.x) % 32;
  int const g = lane / 4;  // the lane's column of B, row of A (and row g + 8)
  int const q = lane % 4;  // the lane's quarter of each chunk
  index_t const m = p.problem.m;
  index_t const k = p.problem.k;
  index_t const col0 = index_t{blockIdx.x} * kSkinnyColumns;
  index_t const batch = blockIdx.z;
  int const columns = p.problem.n - col0 < kSkinnyColumns ? static_cast<int>(p.problem.n - col0) : kSkinnyColumns;
  index_t const column = g < columns ? g : columns - 1;
  index_t const row_lo = g < m ? g : m - 1;
  index_t const row_hi = g + 8 < m ? g + 8 : m - 1;
  Element const* const a = p.a + batch * p.batch_stride_a;
  Element const* const a_lo = a + row_lo * p.lda + 8 * q;
  Element const* const a_hi = a + row_hi * p.lda + 8 * q;
  Element const* const b = p.b + batch * p.batch_stride_b + (col0 + column) * p.ldb + 8 * q;

  float acc[4] = {0.f, 0.f, 0.f, 0.f};  // rows g, g, g + 8, g + 8; columns 2q, 2q + 1, 2q, 2q + 1
  index_t const chunks = k / detail::kChunk;
  if (m > 8) {
    detail::add_chunks<true>(acc, a_lo, a_hi, b, chunks, warp);
  } else {
    detail::add_chunks<false>(acc, a_lo, a_hi, b, chunks, warp);
  }
  if (k % detail::kChunk != 0 && warp == chunks % kSkinnyWarps) {  // the partial chunk, zeros past k
    index_t const c = chunks * detail::kChunk + 8 * q;
    uint4 const lo = detail::load_tail(a + row_lo * p.lda, c, k);
    uint4 const hi = m > 8 ? detail::load_tail(a + row_hi * p.lda, c, k) : make_uint4(0, 0, 0, 0);
    Element const* const b_column = p.b + batch * p.batch_stride_b + (col0 + column) * p.ldb;
    detail::mma_chunk<Element>(acc, lo, hi, detail::load_tail(b_column, c, k));
  }
  partial[warp][g * kSkinnyColumns + 2 * q] = acc[0];
  partial[warp][g * kSkinnyColumns + 2 * q + 1] = acc[1];
  partial[warp][(g + 8) * kSkinnyColumns + 2 * q] = acc[2];
  partial[warp][(g + 8) * kSkinnyColumns + 2 * q + 1] = acc[3];
  __syncthreads();
  if (threadIdx.x < m) {  // thread r applies the tree to row r's columns
    int const r = static_cast<int>(threadIdx.x);
    epilogue::Fragment<kSkinnyColumns> f;
    f.row = r;
    f.col = col0;
    f.batch = batch;
    f.valid = columns;
#pragma unroll
    for (int j = 0; j < kSkinnyColumns; ++j) {
      float sum = 0.f;
#pragma unroll
      for (int w = 0; w < kSkinnyWarps; ++w) sum += partial[w][r * kSkinnyColumns + j];
      f.acc[j] = sum;
    }
    epilogue::evaluate<Epilogue>(p.epilogue, f);
  }
}

}  // namespace tilefuse::gemm::skinny
