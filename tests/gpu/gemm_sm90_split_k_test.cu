// gemm::GemmSm90 with split-K summed inside the kernel (Sm90SplitReduce configs, split_k >= 2): each split
// a batch entry of K-slices, fp32 sums at L2, the last split's warps running the epilogue. Integer-valued
// inputs, so every order of the fp32 additions gives the exact result. Skinny outputs with long K (the
// reason to split: ViT's 197 x 768 x 3072), parts whose K is not a whole number of k-tiles, more
// tiles x splits than SMs (blocks walk several tiles of several splits), one tile, n not a multiple of 4
// (the sums' rows padded); fused trees with a
// residual, a bias and a library-initialised reduction. Problems split-K cannot take are refused.
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using SplitLarge = gemm::Sm90SplitReduce<Sm90LargeConfig>;
using SplitMedium = gemm::Sm90SplitReduce<Sm90MediumConfig>;
// The 64x64 ping-pong tile (one tile per warpgroup) and 128x64 split: long-K outputs of a few tiles
// (256 x 256 x 16384, 64 x 64 x 65536), measured beside the 128x128 split (docs/notes/gemm_sm90.md).
using SplitShort = gemm::Sm90SplitReduce<gemm::Sm90ShortConfig>;
using SplitNarrow = gemm::Sm90SplitReduce<gemm::Sm90NarrowConfig>;

std::vector<GemmCase> split_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](index_t m, index_t n, index_t k, int split, bool refusal_allowed = false, index_t batch = 1) {
    GemmCase c = make_case(m, n, k, batch);
    c.ld_a = c.ld_b = Ld::kAligned;
    c.split_k = split;
    c.refusal_allowed = refusal_allowed;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  add(197, 768, 3072, 8);    // ViT-B/16 at batch 1: 6 tiles of 128x256 on 132 SMs without the split
  add(127, 256, 8192, 16);   // one tile row, k parts of 512
  add(8, 8, 4096, 4);        // one tile, mostly out of bounds
  add(200, 256, 1000, 5);    // parts of 200: a k tail in every split
  add(300, 520, 4096, 16);   // n not a multiple of the tile
  add(4096, 1024, 1024, 4);  // 32 x 4 tiles x 4 splits: every block walks several tiles and splits
  add(1, 4, 64, 8);          // parts of 8, a single row
  add(64, 64, 2048, 2);
  add(64, 66, 512, 2);        // n not a multiple of 4: the sums' rows are padded to whole vectors
  add(127, 255, 8192, 16);    // both odd: the issue's skinny row, unaligned D
  add(64, 64, 65536, 128);    // the planner's most parts: one tile, 128 splits on the tickets
  add(3, 40, 16384, 128);     // parts of 128 (two k-tiles each), three rows
  // Refused: k does not split into 16-byte parts, batches.
  add(128, 256, 1000, 3, true);
  add(128, 256, 1020, 3, true);
  add(64, 64, 512, 2, true, 2);
  return cases;
}

// Runs the list through GemmSm90 with a split-K config (no padded copies: split-K cases are aligned).
#define TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Name, T, Spec, Config, seed)                                          \
  TEST(GemmSm90SplitK, Name) {                                                                                  \
    std::string const skip = sm90_skip_reason();                                                                \
    if (!skip.empty()) GTEST_SKIP() << skip;                                                                    \
    run_gemm_cases<T, RowMajor, ColumnMajor, Spec, Config, gemm::GemmSm90>(split_cases(seed));                  \
  }

TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16StoreLarge, bfloat16_t, specs::StoreD, SplitLarge, 900)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16StoreMedium, bfloat16_t, specs::StoreD, SplitMedium, 901)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Fp16StoreLarge, half_t, specs::StoreD, SplitLarge, 902)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16ResidualReluLarge, bfloat16_t, specs::ResidualRelu, SplitLarge, 903)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16BiasColMedium, bfloat16_t, specs::BiasCol, SplitMedium, 904)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16AuxAmaxLarge, bfloat16_t, specs::AuxAmax, SplitLarge, 905)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16StoreShort, bfloat16_t, specs::StoreD, SplitShort, 906)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Fp16ResidualReluShort, half_t, specs::ResidualRelu, SplitShort, 907)
TILEFUSE_GPU_GEMM_SM90_SPLIT_TEST(Bf16BiasColNarrow, bfloat16_t, specs::BiasCol, SplitNarrow, 908)

TEST(GemmSm90SplitK, RefusalsSayWhy) {
  using Op = gemm::GemmSm90<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD::Tree<bfloat16_t>, SplitLarge>;
  using Plain = gemm::GemmSm90<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD::Tree<bfloat16_t>, Sm90LargeConfig>;
  typename Op::Arguments args;
  args.problem = GemmCoord{128, 256, 1000, 1};
  args.split_k = 3;
  EXPECT_NE(Op::can_implement(args).message().find("does not split into 3 parts"), std::string::npos);
  args.split_k = 1;
  EXPECT_NE(Op::can_implement(args).message().find("pass 2 or more"), std::string::npos);
  args.problem = GemmCoord{64, 64, 512, 2};
  args.split_k = 2;
  EXPECT_NE(Op::can_implement(args).message().find("batch = 2"), std::string::npos);
  args.problem = GemmCoord{64, 66, 512, 1};
  EXPECT_EQ(Op::workspace_size(args), std::size_t{64} * 68 * 4 + std::size_t{1 * 8 * 1} * 4);  // rows of 68 floats
  typename Plain::Arguments plain;
  plain.problem = GemmCoord{128, 256, 1024, 1};
  plain.split_k = 4;
  EXPECT_NE(Plain::can_implement(plain).message().find("Sm90SplitReduce"), std::string::npos);
  args.problem = GemmCoord{197, 768, 3072, 1};
  EXPECT_EQ(Op::workspace_size(args), std::size_t{197} * 768 * 4 + std::size_t{2 * 8 * 3} * 4);
  // The planner's sizes (what tilefuse.Gemm allocates and where it puts the tickets) are the kernel's own.
  using MediumOp = gemm::GemmSm90<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD::Tree<bfloat16_t>, SplitMedium>;
  using ShortOp = gemm::GemmSm90<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD::Tree<bfloat16_t>, SplitShort>;
  for (GemmCoord const p : {GemmCoord{197, 768, 3072, 1}, GemmCoord{127, 255, 8192, 1}, GemmCoord{64, 66, 512, 1}}) {
    typename MediumOp::Arguments medium;
    medium.problem = p;
    medium.split_k = 2;
    args.problem = p;
    EXPECT_EQ(MediumOp::workspace_size(medium), gemm::sm90_split_workspace_bytes(p, 128, 128)) << p.m << "x" << p.n;
    EXPECT_EQ(ShortOp::workspace_size(medium), gemm::sm90_split_workspace_bytes(p, 64, 64)) << p.m << "x" << p.n;
    EXPECT_EQ(Op::workspace_size(args), gemm::sm90_split_workspace_bytes(p, 128, 256)) << p.m << "x" << p.n;
  }
}

}  // namespace
}  // namespace tilefuse::gpu_test
