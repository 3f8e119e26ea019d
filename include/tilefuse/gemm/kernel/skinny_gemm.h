// The GEMM of a few rows (m <= kSkinnyMaxRows: a decode step, a classifier head): D = epilogue(A B) with
// A m x k row-major and B k x n column-major (K-major), 16-bit, rows 16-byte aligned. Such a product reads B
// once and uses each element of it m times: it is bound by B's bytes, and a 128-row tensor-core tile would
// be mostly padding. So CUDA cores stream B at memory speed instead: a block of kSkinnyWarps warps owns
// kSkinnyColumns output columns, each warp a share of K in 8-byte pieces (A's few rows stay in L1 / L2),
// fp32 products; the warps' sums meet in shared memory and each row's kSkinnyColumns values take the
// epilogue tree as one fragment, as the split-K pass applies it (split_k_epilogue.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda/std/type_traits>

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

// The four values of an 8-byte piece of 16-bit elements, as floats.
template <class Element>
TILEFUSE_DEVICE void to_floats(uint2 const& piece, float (&out)[4]) {
  unsigned const words[2] = {piece.x, piece.y};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float2 v;
    if constexpr (cuda::std::is_same_v<Element, bfloat16_t>) {
      v = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 const*>(&words[i]));
    } else {
      v = __half22float2(*reinterpret_cast<__half2 const*>(&words[i]));
    }
    out[2 * i] = v.x;
    out[2 * i + 1] = v.y;
  }
}

// One halving of a warp's reduce-scatter: lanes with bit `kOffset` set keep the upper half of the values,
// the others the lower, each adding its partner's copy of the half it keeps.
template <int kOffset, int kHalf, int kValues>
TILEFUSE_DEVICE void halve(float (&v)[kValues], int lane) {
  bool const upper = (lane & kOffset) != 0;
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    float const send = upper ? v[i] : v[i + kHalf];
    float const keep = upper ? v[i + kHalf] : v[i];
    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, kOffset);
  }
}

// The warp's sums of 64 values, reduce-scattered: afterwards lane l holds the sums of values 2 l and 2 l + 1
// in v[0] and v[1] (62 shuffles, where summing each value across the warp takes 320).
inline TILEFUSE_DEVICE void reduce_scatter(float (&v)[64], int lane) {
  halve<16, 32>(v, lane);
  halve<8, 16>(v, lane);
  halve<4, 8>(v, lane);
  halve<2, 4>(v, lane);
  halve<1, 2>(v, lane);
}

inline constexpr int kPiece = 4;  // elements per 8-byte load

// Adds this thread's share of K (pieces first, first + kSkinnyThreads, ... of kPiece elements) of the block's
// rows and columns into acc ([row][column]). kRows: m rounded up to a power of two. 8-byte pieces: each row's
// and each column's piece is converted to floats once and used for 8 products, so the conversions stay a
// quarter of the FMAs (16-byte pieces held as floats do not fit the registers beside the 64 sums). Rows past m
// and columns past n read the last real one (valid memory, no predicates): their sums are never stored.
template <int kRows, class Element>
TILEFUSE_DEVICE void add_pieces(float (&acc)[kSkinnyMaxRows * kSkinnyColumns], Element const* a, index_t lda,
                                Element const* b, index_t ldb, index_t m, int columns, index_t pieces, index_t first) {
  for (index_t piece = first; piece < pieces; piece += kSkinnyThreads) {
    index_t const c = piece * kPiece;
    uint2 bv[kSkinnyColumns];
#pragma unroll
    for (int j = 0; j < kSkinnyColumns; ++j) {  // B is read once: evict first (a B the batch shares is read again)
      int const column = j < columns ? j : columns - 1;
      bv[j] = __ldcs(reinterpret_cast<uint2 const*>(b + column * ldb + c));
    }
    float af[kRows][kPiece];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      index_t const row = r < m ? r : m - 1;
      to_floats<Element>(__ldg(reinterpret_cast<uint2 const*>(a + row * lda + c)), af[r]);
    }
#pragma unroll
    for (int j = 0; j < kSkinnyColumns; ++j) {
      float bf[kPiece];
      to_floats<Element>(bv[j], bf);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int e = 0; e < kPiece; ++e) acc[r * kSkinnyColumns + j] = fmaf(af[r][e], bf[e], acc[r * kSkinnyColumns + j]);
      }
    }
  }
}

}  // namespace detail

// grid (ceil(n / kSkinnyColumns), 1, batch), kSkinnyThreads threads. The host checks 1 <= m <= kSkinnyMaxRows
// (rows past m read row m - 1), n >= 1, 16-byte-aligned bases, leading dimensions and batch strides (whole
// 16-byte pieces), batch <= 65535.
template <class Element, class Epilogue>
__global__ void __launch_bounds__(kSkinnyThreads, 4) skinny_gemm_kernel(__grid_constant__ Params<Element, Epilogue> const p) {
  static_assert(sizeof(Element) == 2, "the skinny GEMM reads 16-bit operands");
  constexpr int kValues = kSkinnyMaxRows * kSkinnyColumns;
  __shared__ float partial[kSkinnyWarps][kValues];
  int const warp = static_cast<int>(threadIdx.x) / 32;
  int const lane = static_cast<int>(threadIdx.x) % 32;
  index_t const m = p.problem.m;
  index_t const k = p.problem.k;
  index_t const col0 = index_t{blockIdx.x} * kSkinnyColumns;
  index_t const batch = blockIdx.z;
  int const columns = p.problem.n - col0 < kSkinnyColumns ? static_cast<int>(p.problem.n - col0) : kSkinnyColumns;
  Element const* const a = p.a + batch * p.batch_stride_a;
  Element const* const b = p.b + batch * p.batch_stride_b + col0 * p.ldb;

  float acc[kValues];  // [row][column]
#pragma unroll
  for (int i = 0; i < kValues; ++i) acc[i] = 0.f;
  index_t const pieces = k / detail::kPiece;
  index_t const first = index_t{warp} * 32 + lane;
  if (m <= 1) {
    detail::add_pieces<1>(acc, a, p.lda, b, p.ldb, m, columns, pieces, first);
  } else if (m <= 2) {
    detail::add_pieces<2>(acc, a, p.lda, b, p.ldb, m, columns, pieces, first);
  } else if (m <= 4) {
    detail::add_pieces<4>(acc, a, p.lda, b, p.ldb, m, columns, pieces, first);
  } else {
    detail::add_pieces<8>(acc, a, p.lda, b, p.ldb, m, columns, pieces, first);
  }
  // K's last k % 4 elements, one per lane of warp 0.
  index_t const tail = pieces * detail::kPiece + lane;
  if (warp == 0 && tail < k) {
#pragma unroll
    for (int r = 0; r < kSkinnyMaxRows; ++r) {
      if (r < m) {
        float const x = to_float(a[r * p.lda + tail]);
#pragma unroll
        for (int j = 0; j < kSkinnyColumns; ++j) {
          if (j < columns) acc[r * kSkinnyColumns + j] = fmaf(x, to_float(b[j * p.ldb + tail]), acc[r * kSkinnyColumns + j]);
        }
      }
    }
  }
  static_assert(kValues == 64, "the reduce-scatter halves 64 values five times");
  detail::reduce_scatter(acc, lane);
  partial[warp][2 * lane] = acc[0];
  partial[warp][2 * lane + 1] = acc[1];
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
