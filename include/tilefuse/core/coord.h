// Coordinates: of a matrix element, of a GEMM problem, and of a 4-D NHWC / KRSC tensor element.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse {

using index_t = cuda::std::int64_t;  // every offset and extent: 2^31 elements is a real tensor size

struct MatrixCoord {
  index_t row = 0;
  index_t col = 0;
  TILEFUSE_HOST_DEVICE friend constexpr bool operator==(MatrixCoord a, MatrixCoord b) {
    return a.row == b.row && a.col == b.col;
  }
};

// A batched GEMM problem: D[l](m, n) = sum_k A[l](m, k) * B[l](k, n) for l < batch.
struct GemmCoord {
  index_t m = 0;
  index_t n = 0;
  index_t k = 0;
  index_t batch = 1;
  TILEFUSE_HOST_DEVICE friend constexpr bool operator==(GemmCoord a, GemmCoord b) {
    return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch;
  }
};

// An element of a 4-D tensor whose innermost dimension is contiguous: (n, h, w, c) of an NHWC
// activation, or (k, r, s, c) of a KRSC filter.
struct Coord4D {
  index_t d0 = 0;  // n or k
  index_t d1 = 0;  // h or r
  index_t d2 = 0;  // w or s
  index_t d3 = 0;  // c
  TILEFUSE_HOST_DEVICE friend constexpr bool operator==(Coord4D a, Coord4D b) {
    return a.d0 == b.d0 && a.d1 == b.d1 && a.d2 == b.d2 && a.d3 == b.d3;
  }
};

}  // namespace tilefuse
