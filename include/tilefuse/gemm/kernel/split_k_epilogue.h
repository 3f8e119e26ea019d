// Parallel split-K, second pass: sums the fp32 partials of every split and applies the epilogue tree,
// 8 consecutive columns per thread, exactly as the GEMM kernel's own epilogue does.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/epilogue/evt.h>

namespace tilefuse::gemm {

template <class Epilogue>
struct SplitKEpilogueParams {
  GemmCoord problem;
  int split_k = 1;
  float const* partials = nullptr;  // [split][batch][m][n]
  typename Epilogue::Params epilogue;
};

template <class Epilogue>
__global__ void split_k_epilogue_kernel(__grid_constant__ SplitKEpilogueParams<Epilogue> const p) {
  index_t const vectors_per_row = (p.problem.n + 7) / 8;
  index_t const total = p.problem.batch * p.problem.m * vectors_per_row;
  index_t const split_stride = p.problem.batch * p.problem.m * p.problem.n;
  for (index_t v = index_t{blockIdx.x} * blockDim.x + threadIdx.x; v < total; v += index_t{gridDim.x} * blockDim.x) {
    epilogue::Fragment<8> f;
    f.col = (v % vectors_per_row) * 8;
    f.row = (v / vectors_per_row) % p.problem.m;
    f.batch = v / (vectors_per_row * p.problem.m);
    f.valid = p.problem.n - f.col < 8 ? static_cast<int>(p.problem.n - f.col) : 8;
    float const* in = p.partials + (f.batch * p.problem.m + f.row) * p.problem.n + f.col;
    for (int i = 0; i < 8; ++i) {
      float sum = 0.0f;
      if (i < f.valid) {
        for (int s = 0; s < p.split_k; ++s) sum += in[s * split_stride + i];
      }
      f.acc[i] = sum;
    }
    epilogue::evaluate<Epilogue>(p.epilogue, f);
  }
}

}  // namespace tilefuse::gemm
