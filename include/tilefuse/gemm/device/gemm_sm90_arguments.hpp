// The arguments of the Hopper GEMM (gemm_sm90.hpp): what every GemmSm90 of one element type and epilogue
// takes, whichever config runs it. Host code.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/epilogue/arguments.hpp>

namespace tilefuse::gemm {

// The arguments of every GemmSm90 of one element type and epilogue (the fields of gemm::Gemm's),
// shared by the configs so that the auto config can hand them to the one it picks.
// ElementB: B's element type when it differs from A's (FP8 only: e4m3 x e5m2 and the reverse).
template <class ElementAB, class Epilogue, class ElementB = ElementAB>
struct GemmSm90Arguments {
  GemmCoord problem;  // m, n, k, batch
  ElementAB const* a = nullptr;
  index_t lda = epilogue::kPacked;
  index_t batch_stride_a = epilogue::kPacked;
  ElementB const* b = nullptr;
  index_t ldb = epilogue::kPacked;
  index_t batch_stride_b = epilogue::kPacked;
  epilogue::EpilogueArguments<Epilogue> epilogue;  // "D" and every named input of the tree, set by name
  int split_k = 1;  // 1; with a Sm90SplitReduce config the number of K splits (>= 2), summed in the kernel
  // FP8 block-wise scales, for block-scaled configs only (Sm90BlockScaled; gemm::ScaledGemm sets them):
  // scale_a[row, kb] at block_scale_a[row * strides[0] + kb * strides[1]], kb = k / 128; scale_b[kb, nb]
  // at block_scale_b[kb * strides[0] + nb * strides[1]], nb = n / 128. Device memory.
  float const* block_scale_a = nullptr;
  index_t block_scale_a_strides[2] = {0, 0};
  float const* block_scale_b = nullptr;
  index_t block_scale_b_strides[2] = {0, 0};
};

}  // namespace tilefuse::gemm
