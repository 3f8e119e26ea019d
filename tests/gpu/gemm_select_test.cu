// gemm::Gemm's kernel selection (GemmAutoConfig, the default; the planner gemm::plan_gemm): the Hopper kernel
// (GemmSm90 with Sm90AutoConfig) on an sm_90 device for bf16 / fp16, its operands copied first where TMA cannot
// read them, with K split in the kernel where the planner splits; the sm_80 kernel otherwise, and
// describe() saying which ran and why. Results are checked either way with the GEMM harness
// (every output element against the host reference, poisoned outputs, guards).
// The Hopper expectations are skipped on devices other than sm_90; the rest runs anywhere.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <tilefuse/gemm/device/gemm.hpp>

#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using gemm::GemmAutoConfig;
using gemm::Sm80LargeConfig;

// The auto Gemm as the harness's Operation (the harness passes a Config for its case titles only:
// Sm80LargeConfig here, the sm_80 fallback's config).
template <class T, class LA, class LB, class Tree, class /*TitleConfig*/>
using AutoGemm = gemm::Gemm<T, LA, LB, Tree, GemmAutoConfig>;

using StoreTree = specs::StoreD::Tree<bfloat16_t>;
using AutoTn = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, StoreTree>;  // default config = auto
using AutoTt = gemm::Gemm<bfloat16_t, RowMajor, RowMajor, StoreTree>;
using AutoTf32 = gemm::Gemm<float, RowMajor, ColumnMajor, specs::StoreD::Tree<float>>;
using ForcedSm80 = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, StoreTree, Sm80LargeConfig>;

static_assert(std::is_same_v<AutoTn, gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, StoreTree, GemmAutoConfig>>,
              "gemm::Gemm's default config is the auto choice");

bool contains(std::string const& text, std::string_view word) { return text.find(word) != std::string::npos; }
bool starts_with(std::string const& text, std::string_view word) { return text.rfind(word, 0) == 0; }

constexpr std::size_t kRoom = 1 << 22;  // bytes per buffer: describe() never reads them

struct Buffers {
  DeviceBuffer a{kRoom};
  DeviceBuffer b{kRoom};
  DeviceBuffer d{kRoom};
};

template <class Op, class T = bfloat16_t>
typename Op::Arguments args_for(Buffers const& buf, GemmCoord problem) {
  typename Op::Arguments args;
  args.problem = problem;
  args.a = buf.a.as<T const>();
  args.b = buf.b.as<T const>();
  args.epilogue.set("D", buf.d.as<T>());
  return args;
}

bool on_sm90() { return sm90_skip_reason().empty(); }

TEST(GemmSelect, AlignedTnRunsTheHopperKernelOnSm90) {
  Buffers buf;
  auto args = args_for<AutoTn>(buf, GemmCoord{256, 512, 128, 1});
  std::string const d = AutoTn::describe(args);
  if (on_sm90()) {
    EXPECT_TRUE(starts_with(d, "sm90 TMA + WGMMA")) << d;
  } else {
    EXPECT_TRUE(starts_with(d, "sm80 mma.sync")) << d;
    EXPECT_TRUE(contains(d, "Hopper kernel refused")) << d;
  }
  EXPECT_TRUE(AutoTn::can_implement(args).ok());
}

// Operands TMA cannot read as they are: on sm_90 packed into the workspace for the Hopper kernel (the
// planner says why), without a workspace (or on other devices) the sm_80 kernel's element-wise path.
TEST(GemmSelect, UnalignedOperandsAreCopiedForTheHopperKernel) {
  Buffers buf;
  Stream stream;
  auto args = args_for<AutoTn>(buf, GemmCoord{100, 64, 61, 1});  // packed lda = ldb = 61
  std::string const d = AutoTn::describe(args);
  if (on_sm90()) {
    EXPECT_TRUE(starts_with(d, "sm90 TMA + WGMMA")) << d;
    EXPECT_TRUE(contains(d, "A and B copied first into row-major A and K-major B, K zero-padded 61 -> 64")) << d;
    EXPECT_TRUE(contains(d, "16-byte alignment")) << d;
    EXPECT_GE(AutoTn::workspace_size(args), std::size_t{(100 + 64) * 64 * 2});
  } else {
    EXPECT_TRUE(starts_with(d, "sm80 mma.sync")) << d;
    EXPECT_TRUE(contains(d, "element-wise path")) << d;
  }
  EXPECT_FALSE(contains(d, "use gemm::Gemm")) << d;
  // No workspace: the sm_80 kernel runs it (nothing to copy into).
  EXPECT_TRUE(AutoTn::run(args, nullptr, stream.get()).ok());

  auto shifted = args_for<AutoTn>(buf, GemmCoord{64, 64, 64, 1});
  shifted.a = buf.a.as<bfloat16_t const>() + 1;  // 2-byte aligned base
  std::string const s = AutoTn::describe(shifted);
  if (on_sm90()) {
    EXPECT_TRUE(contains(s, "A and B copied first")) << s;
    EXPECT_FALSE(contains(s, "K zero-padded")) << s;
  } else {
    EXPECT_TRUE(starts_with(s, "sm80 mma.sync")) << s;
  }
  stream.synchronize();
}

TEST(GemmSelect, AForcedSplitRunsInTheHopperKernel) {
  Buffers buf;
  auto args = args_for<AutoTn>(buf, GemmCoord{256, 256, 1024, 1});
  args.split_k = 4;
  std::string const d = AutoTn::describe(args);
  if (on_sm90()) {
    EXPECT_TRUE(contains(d, "split-K 4 summed in the kernel")) << d;
  } else {
    EXPECT_TRUE(starts_with(d, "sm80 mma.sync")) << d;
    EXPECT_TRUE(contains(d, "split-K 4")) << d;
  }
  EXPECT_GT(AutoTn::workspace_size(args), 0u);
  args.split_k = 3;  // 1024 / 3 is not whole: the Hopper kernel runs unsplit
  if (on_sm90()) EXPECT_FALSE(contains(AutoTn::describe(args), "split-K")) << AutoTn::describe(args);
}

TEST(GemmSelect, OtherLayoutsAreCopiedAndOtherTypesUseTheSm80Kernel) {
  Buffers buf;
  std::string const tt = AutoTt::describe(args_for<AutoTt>(buf, GemmCoord{256, 256, 128, 1}));
  if (on_sm90()) {
    EXPECT_TRUE(starts_with(tt, "sm90 TMA + WGMMA")) << tt;
    EXPECT_TRUE(contains(tt, "their layouts are not the kernel's")) << tt;
  } else {
    EXPECT_TRUE(starts_with(tt, "sm80 mma.sync")) << tt;
  }
  std::string const f = AutoTf32::describe(args_for<AutoTf32, float>(buf, GemmCoord{256, 256, 128, 1}));
  EXPECT_TRUE(starts_with(f, "sm80 mma.sync")) << f;
  EXPECT_TRUE(contains(f, "takes bf16 or fp16")) << f;
}

TEST(GemmSelect, AnSm80ConfigForcesTheSm80Kernel) {
  Buffers buf;
  std::string const d = ForcedSm80::describe(args_for<ForcedSm80>(buf, GemmCoord{256, 512, 128, 1}));
  EXPECT_TRUE(starts_with(d, "sm80 mma.sync GEMM (bf16 inputs), tile 128x256x64")) << d;
  EXPECT_FALSE(contains(d, "Hopper")) << d;
  EXPECT_EQ(ForcedSm80::plan_cache_stats().misses, 0);
}

// The sm_80 kernel on an sm_90 device loads K-contiguous 16-bit operands of 64-element k-tiles by TMA
// (cp.async caps its 128x256x64 tile at 420 TFLOP/s there, report v95); a config can opt out, and the
// other layouts, the 128x128x32 tile and unaligned operands keep cp.async.
TEST(GemmSelect, TheSm80KernelLoadsByTmaOnSm90) {
  Buffers buf;
  std::string const large = ForcedSm80::describe(args_for<ForcedSm80>(buf, GemmCoord{256, 512, 128, 1}));
  using CpAsync = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, StoreTree, Sm80LargeCpAsyncConfig>;
  std::string const opted_out = CpAsync::describe(args_for<CpAsync>(buf, GemmCoord{256, 512, 128, 1}));
  using SmallTn = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, StoreTree, gemm::Sm80SmallConfig>;
  std::string const small = SmallTn::describe(args_for<SmallTn>(buf, GemmCoord{256, 512, 128, 1}));
  using LargeTt = gemm::Gemm<bfloat16_t, RowMajor, RowMajor, StoreTree, Sm80LargeConfig>;
  std::string const tt = LargeTt::describe(args_for<LargeTt>(buf, GemmCoord{256, 512, 128, 1}));
  auto odd = args_for<ForcedSm80>(buf, GemmCoord{256, 512, 129, 1});
  odd.lda = 129;
  std::string const unaligned = ForcedSm80::describe(odd);
  EXPECT_TRUE(contains(opted_out, "16-byte cp.async path")) << opted_out;
  EXPECT_TRUE(contains(small, "16-byte cp.async path")) << small;
  EXPECT_TRUE(contains(tt, "16-byte cp.async path")) << tt;
  EXPECT_TRUE(contains(unaligned, "element-wise path")) << unaligned;
  if (on_sm90()) {
    EXPECT_TRUE(contains(large, "operands by TMA (sm_90)")) << large;
  } else {
    EXPECT_TRUE(contains(large, "16-byte cp.async path")) << large;
  }
}

// The tile model: few output tiles take narrower tiles, big problems the 128x256 one; describe()
// names the tile the model picked.
TEST(GemmSelect, TilePerProblem) {
  using gemm::choose_sm90_tile;
  using gemm::Sm90Tile;
  using gemm::Sm90TileSet;
  EXPECT_EQ(choose_sm90_tile({8192, 8192, 8192, 1}, 132), Sm90Tile::kLarge);
  EXPECT_EQ(choose_sm90_tile({4096, 14336, 4096, 1}, 132), Sm90Tile::kLarge);
  EXPECT_EQ(choose_sm90_tile({8192, 8192, 1024, 1}, 132), Sm90Tile::kLarge);
  EXPECT_EQ(choose_sm90_tile({2048, 2048, 2048, 1}, 132), Sm90Tile::kLarge);
  // Measured on an H200 (docs/notes/gemm_sm90.md): 128x64 wins with few tiles and a long K, 128x128
  // with few tiles and a short K.
  EXPECT_EQ(choose_sm90_tile({128, 8192, 8192, 1}, 132), Sm90Tile::kNarrow);
  EXPECT_EQ(choose_sm90_tile({1000, 1000, 1000, 1}, 132), Sm90Tile::kMedium);
  // Outputs of a few thousand rows: 128x96 (k >= 2048) / 128x160 where every tile runs in one round; more rounds
  // or a short mainloop keep the older tiles (H200, docs/notes/gemm_sm90.md "Mid-size tiles"); FP8 keeps the
  // 128-row tiles that have an FP8 config.
  EXPECT_EQ(choose_sm90_tile({1576, 768, 3072, 1}, 132), Sm90Tile::kMid);
  EXPECT_EQ(choose_sm90_tile({788, 768, 3072, 1}, 132), Sm90Tile::kMid);
  EXPECT_EQ(choose_sm90_tile({1576, 768, 768, 1}, 132), Sm90Tile::kMedium);
  EXPECT_EQ(choose_sm90_tile({3152, 768, 3072, 1}, 132), Sm90Tile::kWide);
  EXPECT_EQ(choose_sm90_tile({3152, 768, 768, 1}, 132), Sm90Tile::kWide);
  EXPECT_EQ(choose_sm90_tile({3152, 3072, 768, 1}, 132), Sm90Tile::kMedium);
  EXPECT_EQ(choose_sm90_tile({1576, 3072, 768, 1}, 132), Sm90Tile::kMedium);
  EXPECT_EQ(choose_sm90_tile({1576, 768, 3072, 1}, 132, Sm90TileSet::kLargeMediumNarrow), Sm90Tile::kMedium);
  // A few hundred rows over a long K: the 64x64 ping-pong tile fills the SMs the 128-row tiles leave idle
  // (16-bit only: FP8 keeps the 128-row tiles).
  EXPECT_EQ(choose_sm90_tile({197, 768, 3072, 1}, 132), Sm90Tile::kShort);
  EXPECT_NE(choose_sm90_tile({197, 768, 3072, 1}, 132, Sm90TileSet::kLargeMediumNarrow), Sm90Tile::kShort);
  if (!on_sm90()) GTEST_SKIP() << sm90_skip_reason();
  Buffers buf;
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  for (GemmCoord p : {GemmCoord{128, 8192, 8192, 1}, GemmCoord{8192, 8192, 8192, 1}, GemmCoord{8192, 8192, 1024, 1},
                      GemmCoord{1000, 1000, 1000, 1}, GemmCoord{2048, 2048, 2048, 1}, GemmCoord{197, 768, 3072, 1}}) {
    std::string const d = AutoTn::describe(args_for<AutoTn>(buf, p));
    std::string const tile = std::string("tile ") + gemm::name_of(choose_sm90_tile(p, sms)) + "x64";
    EXPECT_TRUE(contains(d, tile)) << p.m << "x" << p.n << "x" << p.k << ": " << d;
  }
}

// The same arguments twice: the second run finds the plan (no tensor-map encode); other arguments miss.
TEST(GemmSelect, RepeatedRunsReuseTheCachedPlan) {
  if (!on_sm90()) GTEST_SKIP() << sm90_skip_reason();
  Buffers buf;
  Stream stream;
  auto args = args_for<AutoTn>(buf, GemmCoord{192, 320, 96, 1});
  ASSERT_TRUE(AutoTn::run(args, nullptr, stream.get()).ok());
  auto const before = AutoTn::plan_cache_stats();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(AutoTn::run(args, nullptr, stream.get()).ok());
  auto const after = AutoTn::plan_cache_stats();
  EXPECT_EQ(after.hits - before.hits, 3);
  EXPECT_EQ(after.misses, before.misses);
  auto other = args;
  other.problem.m = 200;
  ASSERT_TRUE(AutoTn::run(other, nullptr, stream.get()).ok());
  EXPECT_EQ(AutoTn::plan_cache_stats().misses, after.misses + 1);
  stream.synchronize();
}

// Correctness whichever kernel runs: aligned and unaligned, batched, split-K, every edge shape.
TEST(GemmSelect, Bf16TnStoreResults) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(
      sm90_cases(shape_sweep_cases(900)));
}
TEST(GemmSelect, Bf16TnStrideResults) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(
      sm90_cases(stride_cases(901)));
}
TEST(GemmSelect, Bf16TnResidualReluResults) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80LargeConfig, AutoGemm>(
      sm90_cases(small_cases(902)));
}
// Residual trees load the residual by TMA where its rows are whole 16-byte pieces (the planner's
// GemmRequest::residual_by_tma) and take the staged epilogue where they are not, or where K is split:
// describe() says which. The result lists run both (packed, padded and odd leading dimensions).
using ResidualTn = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu::Tree<bfloat16_t>>;
TEST(GemmSelect, AnAlignedResidualIsLoadedByTma) {
  if (!on_sm90()) GTEST_SKIP() << sm90_skip_reason();
  Buffers buf;
  DeviceBuffer residual{kRoom};
  GemmCoord const p{512, 512, 256, 1};
  auto args = args_for<ResidualTn>(buf, p);
  args.epilogue.set("bias", buf.b.as<bfloat16_t const>());
  args.epilogue.set("C", residual.as<bfloat16_t const>());
  std::string const d = ResidualTn::describe(args);
  EXPECT_TRUE(starts_with(d, "sm90 TMA + WGMMA")) << d;
  EXPECT_TRUE(contains(d, "the residual loaded by TMA")) << d;
  auto odd = args;
  odd.epilogue.set("C", residual.as<bfloat16_t const>(), {.ld = p.n + 1});
  std::string const o = ResidualTn::describe(odd);
  EXPECT_TRUE(starts_with(o, "sm90 TMA + WGMMA")) << o;
  EXPECT_FALSE(contains(o, "the residual loaded by TMA")) << o;
  auto shifted = args;  // a base 2 bytes past a 16-byte boundary
  shifted.epilogue.set("C", residual.as<bfloat16_t const>() + 1);
  EXPECT_FALSE(contains(ResidualTn::describe(shifted), "the residual loaded by TMA")) << ResidualTn::describe(shifted);
  auto split = args;  // a split plan sums in the kernel and stages the residual
  split.split_k = 2;
  std::string const sp = ResidualTn::describe(split);
  EXPECT_TRUE(contains(sp, "split-K 2")) << sp;
  EXPECT_FALSE(contains(sp, "the residual loaded by TMA")) << sp;
}
TEST(GemmSelect, Bf16TnResidualByTmaResults) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80LargeConfig, AutoGemm>(
      sm90_cases(epilogue_cases(907)));
}
TEST(GemmSelect, Fp16TnResidualByTmaPersistent) {
  run_gemm_cases<half_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80LargeConfig, AutoGemm>(
      sm90_cases(persistent_cases(908)));
}
TEST(GemmSelect, Bf16TnAlphaBetaCResults) {  // a residual without a column vector beside it
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::AlphaBetaC, Sm80LargeConfig, AutoGemm>(
      sm90_cases(epilogue_cases(909)));
}
TEST(GemmSelect, Fp16TnStoreResults) {
  run_gemm_cases<half_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(
      sm90_cases(small_cases(903)));
}
// The 128x64 tile (picked only for few tiles with k >= 4096, so the lists above rarely reach it) on
// its own, every edge shape.
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSelect, Bf16NarrowTileShapes, bfloat16_t, specs::StoreD, gemm::Sm90NarrowConfig,
                            shape_sweep_cases(905))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSelect, Bf16NarrowTileResidualRelu, bfloat16_t, specs::ResidualRelu,
                            gemm::Sm90NarrowConfig, small_cases(906))
// The 64x64 ping-pong tile (the planner's for a few hundred rows), every edge shape, plain and with a residual.
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSelect, Bf16ShortTileShapes, bfloat16_t, specs::StoreD, gemm::Sm90ShortConfig,
                            shape_sweep_cases(912))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSelect, Fp16ShortTileResidualRelu, half_t, specs::ResidualRelu, gemm::Sm90ShortConfig,
                            small_cases(913))

// split_k = 0 lets the planner choose: on sm_90 a small output with a long K splits in the Hopper kernel
// (127 x 255 x 8191: copied, K padded to 8192, 8 splits of the 64x64 tile), a large output or a short K does not; on other
// devices the sm_80 kernel splits the small one. describe() and workspace_size() agree with the choice,
// and run() without a workspace says what it needs.
TEST(GemmSelect, SplitKZeroChooses) {
  Buffers buf;
  Stream stream;
  auto small = args_for<AutoTn>(buf, GemmCoord{127, 255, 8191, 1});
  small.split_k = 0;
  ASSERT_TRUE(AutoTn::can_implement(small).ok()) << AutoTn::can_implement(small).to_string();
  std::string const d = AutoTn::describe(small);
  if (on_sm90()) {
    EXPECT_TRUE(starts_with(d, "sm90 TMA + WGMMA")) << d;
    EXPECT_TRUE(contains(d, "tile 64x64x64")) << d;
    EXPECT_TRUE(contains(d, "split-K 8 summed in the kernel")) << d;
  } else {
    EXPECT_TRUE(starts_with(d, "sm80 mma.sync")) << d;
    EXPECT_TRUE(contains(d, "split-K ")) << d;
  }
  EXPECT_GT(AutoTn::workspace_size(small), 0u);
  Status const ran = AutoTn::run(small, nullptr, stream.get());  // no workspace: the sm_80 kernel, which splits
  EXPECT_FALSE(ran.ok());
  EXPECT_TRUE(contains(ran.message(), "chosen for split_k = 0")) << ran.to_string();
  if (on_sm90()) {
    // Aligned operands: GemmSm90<Sm90AutoConfig> gets the planner's count and must keep its 64x64 tile.
    auto aligned = args_for<AutoTn>(buf, GemmCoord{128, 256, 8192, 1});
    aligned.split_k = 0;
    std::string const ad = AutoTn::describe(aligned);
    EXPECT_TRUE(contains(ad, "tile 64x64x64")) << ad;
    EXPECT_TRUE(contains(ad, "split-K 8 summed in the kernel")) << ad;
  }
  for (GemmCoord const problem : {GemmCoord{2048, 2048, 4095, 1}, GemmCoord{1024, 1024, 128, 1}}) {
    auto other = args_for<AutoTn>(buf, problem);  // (describe and workspace_size read no buffer)
    other.split_k = 0;
    SCOPED_TRACE(::testing::Message() << problem.m << " x " << problem.n << " x " << problem.k);
    ASSERT_TRUE(AutoTn::can_implement(other).ok());
    EXPECT_FALSE(contains(AutoTn::describe(other), "split-K")) << AutoTn::describe(other);
    if (problem.k == 128 || !on_sm90()) EXPECT_EQ(AutoTn::workspace_size(other), 0u);  // (4095: the copies' bytes)
  }
  stream.synchronize();
}
TEST(GemmSelect, Bf16TnAutoSplitKResults) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(
      auto_split_k_cases(907));
}
TEST(GemmSelect, Bf16TtAutoSplitKResidualRelu) {
  run_gemm_cases<bfloat16_t, RowMajor, RowMajor, specs::ResidualRelu, Sm80LargeConfig, AutoGemm>(
      auto_split_k_cases(908));
}

// Arguments::family, the typed override of the planner's family: kSm80 runs the sm80 kernel, kSm90 the Hopper
// kernel where it can run (refused with the planner's reason elsewhere), and a Gemm without the Hopper kernel
// (tf32) refuses kSm90 and kSkinny.
TEST(GemmSelect, AForcedFamilyRunsOrIsRefused) {
  Buffers buf;
  auto args = args_for<AutoTn>(buf, GemmCoord{256, 256, 128, 1});
  args.family = gemm::GemmFamily::kSm80;
  EXPECT_TRUE(starts_with(AutoTn::describe(args), "sm80 mma.sync")) << AutoTn::describe(args);
  args.family = gemm::GemmFamily::kSm90;
  Stream stream;
  if (on_sm90()) {
    EXPECT_TRUE(starts_with(AutoTn::describe(args), "sm90 TMA + WGMMA")) << AutoTn::describe(args);
    auto few_rows = args_for<AutoTn>(buf, GemmCoord{8, 4096, 1024, 1});  // the planner's choice: skinny
    few_rows.family = gemm::GemmFamily::kSm90;
    EXPECT_TRUE(starts_with(AutoTn::describe(few_rows), "sm90 TMA + WGMMA")) << AutoTn::describe(few_rows);
    auto copied = args_for<AutoTn>(buf, GemmCoord{100, 64, 61, 1});  // needs copies: no workspace, no Hopper run
    copied.family = gemm::GemmFamily::kSm90;
    Status const ran = AutoTn::run(copied, nullptr, stream.get());
    EXPECT_FALSE(ran.ok());
    EXPECT_TRUE(contains(ran.message(), "need copying")) << ran.to_string();
  } else {
    Status const refused = AutoTn::can_implement(args);
    EXPECT_FALSE(refused.ok());
    EXPECT_TRUE(starts_with(refused.message(), "gemm: the Hopper kernel was asked for")) << refused.to_string();
  }
  auto tt = args_for<AutoTt>(buf, GemmCoord{4, 4096, 64, 1});
  tt.family = gemm::GemmFamily::kSkinny;  // B row-major: refused with the layout it needs
  EXPECT_TRUE(contains(AutoTt::describe(tt), "row-major A and K-major B")) << AutoTt::describe(tt);
  auto tf32 = args_for<AutoTf32, float>(buf, GemmCoord{64, 64, 64, 1});
  tf32.family = gemm::GemmFamily::kSm90;
  Status const refused = AutoTf32::can_implement(tf32);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.message(), "runs the sm80 kernel only")) << refused.to_string();
  EXPECT_TRUE(starts_with(AutoTf32::describe(tf32), "cannot run")) << AutoTf32::describe(tf32);
  EXPECT_FALSE(AutoTf32::run(tf32, nullptr, stream.get()).ok());
  stream.synchronize();
}

// A few rows (m <= 16), A row-major and B K-major with 16-byte-aligned rows: the skinny kernel, forced (the planner
// picks it only where its blocks fill the SMs). Every m, n off its 8-column blocks, k with a tail past its
// 32-element chunks and k below one chunk, a long k, batches (one with a shared B), an epilogue with unaligned rows.
std::vector<GemmCase> skinny_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.ld_a = c.ld_b = Ld::kAligned;
    c.family = gemm::GemmFamily::kSkinny;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  for (index_t m = 1; m <= 16; ++m) add(make_case(m, 8 * m + 3, 61 + 64 * m));
  add(make_case(16, 4096, 4096));
  add(make_case(12, 24, 31));  // k below one 32-element chunk
  add(make_case(8, 4096, 4096));
  add(make_case(1, 1, 7));
  add(make_case(6, 20, 3));
  add(make_case(3, 1000, 1001));
  GemmCase c = make_case(5, 77, 300, 3);
  c.batch_gap = 8;
  add(c);
  c = make_case(8, 40, 129, 2);
  c.shared_b = true;
  add(c);
  c = make_case(2, 33, 4100);
  c.ld_epilogue = Ld::kOdd;
  add(c);
  return cases;
}

TEST(GemmSelect, FewRowsRunTheSkinnyKernel) {
  Buffers buf;
  auto args = args_for<AutoTn>(buf, GemmCoord{8, 4096, 1024, 1});  // 512 blocks of 8 columns
  std::string const d = AutoTn::describe(args);
  EXPECT_TRUE(starts_with(d, "skinny kernel: m = 8 rows")) << d;
  EXPECT_EQ(AutoTn::workspace_size(args), 0u);
  EXPECT_TRUE(AutoTn::can_implement(args).ok());
  auto few_blocks = args_for<AutoTn>(buf, GemmCoord{8, 256, 16384, 1});  // 32 blocks: the tensor-core kernels
  EXPECT_FALSE(starts_with(AutoTn::describe(few_blocks), "skinny")) << AutoTn::describe(few_blocks);
  few_blocks.family = gemm::GemmFamily::kSkinny;  // unless forced
  EXPECT_TRUE(starts_with(AutoTn::describe(few_blocks), "skinny kernel")) << AutoTn::describe(few_blocks);
  args.problem.m = 17;  // past it: the tensor-core kernels, and a forced skinny kernel refused with the reason
  EXPECT_FALSE(starts_with(AutoTn::describe(args), "skinny")) << AutoTn::describe(args);
  args.family = gemm::GemmFamily::kSkinny;
  Status const refused = AutoTn::can_implement(args);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.message(), "m = 17 is not 1 to 16")) << refused.to_string();
  auto odd = args_for<AutoTn>(buf, GemmCoord{4, 64, 61, 1});  // packed lda = 61: rows not 16-byte aligned
  EXPECT_FALSE(starts_with(AutoTn::describe(odd), "skinny")) << AutoTn::describe(odd);
  auto tt = args_for<AutoTt>(buf, GemmCoord{4, 64, 64, 1});  // B row-major: not the skinny kernel's layout
  EXPECT_FALSE(starts_with(AutoTt::describe(tt), "skinny")) << AutoTt::describe(tt);
}
TEST(GemmSelect, Bf16SkinnyResults) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(skinny_cases(910));
}
TEST(GemmSelect, Bf16SkinnyResidualRelu) {
  run_gemm_cases<bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80LargeConfig, AutoGemm>(skinny_cases(911));
}
TEST(GemmSelect, Fp16SkinnyResults) {
  run_gemm_cases<half_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(skinny_cases(912));
}

TEST(GemmSelect, Bf16TtCopiedResults) {
  run_gemm_cases<bfloat16_t, RowMajor, RowMajor, specs::StoreD, Sm80LargeConfig, AutoGemm>(small_cases(904));
}

}  // namespace
}  // namespace tilefuse::gpu_test
