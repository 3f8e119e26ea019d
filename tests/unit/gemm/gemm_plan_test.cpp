// Tests of the GEMM planner (gemm/device/gemm_plan.hpp: plan_gemm, plan_gemm_sm90, choose_sm90_split): the
// kernel family per device and operand type, the copies into the Hopper kernel's layouts, the in-kernel split
// where the tiles leave most SMs idle, forced families and splits. Host only.
#include <tilefuse/gemm/device/gemm_plan.hpp>
#include <tilefuse/gemm/device/gemm_sm80_describe.hpp>
#include <tilefuse/gemm/device/gemm_sm90_describe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <vector>

namespace tilefuse::gemm {
namespace {

constexpr DeviceFacts kH100{9, 0, 132};
constexpr DeviceFacts kA100{8, 0, 108};

GemmPlan planned(GemmRequest const& r, DeviceFacts const& device = kH100) {
  GemmPlan plan;
  Status const s = plan_gemm(r, device, &plan);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return plan;
}

GemmRequest request(index_t m, index_t n, index_t k) {
  GemmRequest r;
  r.problem = {m, n, k, 1};
  return r;
}

bool contains(std::string const& text, char const* word) { return text.find(word) != std::string::npos; }

TEST(GemmPlan, HopperOnSm90ForSixteenBitOperands) {
  GemmPlan const p = planned(request(8192, 8192, 8192));
  EXPECT_EQ(p.family, GemmFamily::kSm90);
  EXPECT_FALSE(p.copy_operands);
  EXPECT_EQ(p.sm90.config, "Sm90LargeConfig");
  EXPECT_EQ(p.sm90.split_k, 1);

  GemmPlan const a100 = planned(request(8192, 8192, 8192), kA100);
  EXPECT_EQ(a100.family, GemmFamily::kSm80);
  EXPECT_TRUE(contains(a100.why, "sm_80")) << a100.why;
  EXPECT_EQ(a100.sm80_config, "Sm80LargeConfig");
  EXPECT_EQ(a100.split_k, 1);
  // The sm80 kernel's split for split_k = 0 (choose_split_k on its 128x256x64 tile), its path from the facts.
  GemmRequest skinny = request(127, 255, 8191);
  skinny.tma_aligned = false;
  GemmPlan const s80 = planned(skinny, kA100);
  // One 128x256 tile and 128 k-tiles of 64: min(2 x 108 SMs, 128 / 8 k-tiles per split at least, 128) = 16.
  EXPECT_EQ(s80.split_k, 16);
  EXPECT_FALSE(s80.sm80_aligned);

  GemmRequest tf32 = request(512, 512, 512);
  tf32.sixteen_bit = false;
  EXPECT_EQ(planned(tf32).family, GemmFamily::kSm80);
  GemmRequest no_code = request(512, 512, 512);
  no_code.hopper_code = false;
  EXPECT_TRUE(contains(planned(no_code).why, "no sm_90a code"));
}

// A residual TMA can read is loaded by TMA (Sm90TmaResidual over the tile's config) unless K is split; FP8
// plans and the sm80 kernel never take it.
TEST(GemmPlan, AResidualTmaCanReadIsLoadedByTma) {
  GemmRequest r = request(8192, 8192, 8192);
  r.residual_by_tma = true;
  GemmPlan const p = planned(r);
  EXPECT_EQ(p.family, GemmFamily::kSm90);
  EXPECT_TRUE(p.sm90.residual_by_tma);
  EXPECT_EQ(p.sm90.config, "tilefuse::gemm::Sm90TmaResidual<tilefuse::gemm::Sm90LargeConfig>");
  EXPECT_TRUE(contains(p.why, "residual loaded by TMA")) << p.why;
  r.residual_by_tma = false;
  EXPECT_EQ(planned(r).sm90.config, "Sm90LargeConfig");

  GemmRequest narrow = request(197, 3072, 768);  // the 128x64 tile, unsplit
  narrow.residual_by_tma = true;
  GemmPlan const n = planned(narrow);
  EXPECT_EQ(n.sm90.split_k, 1);
  EXPECT_EQ(n.sm90.config, "tilefuse::gemm::Sm90TmaResidual<tilefuse::gemm::" +
                               std::string(config_name_of(Sm90Tile::kNarrow, false)) + ">");

  GemmRequest split = request(256, 256, 16384);  // split in the kernel: the residual is staged
  split.residual_by_tma = true;
  GemmPlan const s = planned(split);
  ASSERT_GT(s.sm90.split_k, 1);
  EXPECT_FALSE(s.sm90.residual_by_tma);
  EXPECT_EQ(s.sm90.config, sm90_split_config_name(Sm90Tile::kShort));

  EXPECT_FALSE(plan_gemm_sm90({8192, 8192, 8192, 1}, kH100, /*fp8=*/true, std::nullopt, 1, true).residual_by_tma);
  GemmPlan const a100 = planned(r, kA100);
  EXPECT_EQ(a100.family, GemmFamily::kSm80);
  EXPECT_FALSE(a100.sm90.residual_by_tma);
}

// The 64x64 ping-pong tile where 128-row tiles leave most SMs idle; never for FP8 (it has no FP8 config), never
// split (a split asked for with it forced is dropped, with the reason).
// 128x96 (k >= 2048) and 128x160 only where every tile runs in one round: the shapes where they won on an H200;
// with two rounds or a short mainloop they lost, and the older tiles stay.
TEST(GemmPlan, MidSizeTilesInOneRoundOnly) {
  struct Case {
    index_t m, n, k;
    Sm90Tile tile;
    char const* config;
  };
  for (Case c : {Case{1576, 768, 3072, Sm90Tile::kMid, "Sm90MidConfig"}, Case{788, 768, 3072, Sm90Tile::kMid, "Sm90MidConfig"},
                 Case{3152, 768, 3072, Sm90Tile::kWide, "Sm90WideConfig"},
                 Case{3152, 768, 768, Sm90Tile::kWide, "Sm90WideConfig"}}) {
    GemmPlan const p = planned(request(c.m, c.n, c.k));
    EXPECT_EQ(p.sm90.kind, c.tile) << c.m << "x" << c.n << "x" << c.k << ": " << p.why;
    EXPECT_EQ(p.sm90.config, c.config);
    EXPECT_EQ(p.sm90.tile_n, c.tile == Sm90Tile::kMid ? 96 : 160);
    EXPECT_EQ(p.sm90.split_k, 1);
  }
  for (auto [m, n, k] : {std::array<index_t, 3>{1000, 1000, 1000}, {1576, 768, 768}, {1576, 3072, 768},
                         {3152, 3072, 768}, {12608, 768, 3072}, {788, 3072, 768}}) {
    EXPECT_FALSE(sixteen_bit_only(planned(request(m, n, k)).sm90.kind) &&
                 planned(request(m, n, k)).sm90.kind != Sm90Tile::kShort)
        << m << "x" << n << "x" << k << ": " << planned(request(m, n, k)).sm90.config;
  }
  // The residual by TMA on them: their Sm90TmaResidual twins.
  GemmRequest residual = request(3152, 768, 3072);
  residual.residual_by_tma = true;
  EXPECT_TRUE(contains(planned(residual).sm90.config, "Sm90TmaResidual<tilefuse::gemm::Sm90WideConfig>"))
      << planned(residual).sm90.config;
}

TEST(GemmPlan, ShortTileForFewRowsOnly16Bit) {
  for (auto [m, n, k] : {std::array<index_t, 3>{197, 768, 3072}, {394, 768, 3072}, {197, 768, 768}}) {
    GemmPlan const p = planned(request(m, n, k));
    EXPECT_EQ(p.sm90.kind, Sm90Tile::kShort) << m << "x" << n << "x" << k << ": " << p.why;
    EXPECT_EQ(p.sm90.config, "Sm90ShortConfig");
    EXPECT_EQ(p.sm90.tile_m, 64);
    EXPECT_EQ(p.sm90.tile_n, 64);
    EXPECT_EQ(p.sm90.split_k, 1);
  }
  for (auto [m, n, k] : {std::array<index_t, 3>{1576, 768, 3072}, {197, 3072, 768}, {1000, 1000, 1000},
                         {128, 8192, 8192}, {8192, 8192, 8192}}) {
    EXPECT_NE(planned(request(m, n, k)).sm90.kind, Sm90Tile::kShort) << m << "x" << n << "x" << k;
  }
  Sm90GemmPlan const fp8 = plan_gemm_sm90({197, 768, 3072, 1}, kH100, /*fp8=*/true);
  EXPECT_NE(fp8.kind, Sm90Tile::kShort);
  EXPECT_TRUE(contains(fp8.config, "Fp8")) << fp8.config;
  // The 128x96 and 128x160 tiles are 16-bit only too.
  for (auto [m, n, k] : {std::array<index_t, 3>{1576, 768, 3072}, {788, 768, 3072}, {3152, 768, 3072}}) {
    EXPECT_TRUE(sixteen_bit_only(plan_gemm_sm90({m, n, k, 1}, kH100).kind)) << m << "x" << n << "x" << k;
    Sm90GemmPlan const p = plan_gemm_sm90({m, n, k, 1}, kH100, /*fp8=*/true);
    EXPECT_FALSE(sixteen_bit_only(p.kind)) << m << "x" << n << "x" << k << ": " << p.config;
    EXPECT_TRUE(contains(p.config, "Fp8")) << p.config;
  }

  GemmRequest residual = request(197, 768, 3072);
  residual.residual_by_tma = true;
  EXPECT_EQ(planned(residual).sm90.config, "tilefuse::gemm::Sm90TmaResidual<tilefuse::gemm::Sm90ShortConfig>");

  // The 64x64 tile splits when asked, as the others do.
  Sm90GemmPlan const forced = plan_gemm_sm90({256, 256, 16384, 1}, kH100, false, Sm90Tile::kShort, 4);
  EXPECT_EQ(forced.split_k, 4);
  EXPECT_EQ(forced.config, "tilefuse::gemm::Sm90SplitReduce<tilefuse::gemm::Sm90ShortConfig>");
  EXPECT_TRUE(contains(forced.why, "as asked")) << forced.why;
}

// What the Python package prebuilds: every config the planner can name, split included, twins apart.
TEST(GemmPlan, ConfigChoicesNameEveryTile) {
  std::vector<std::string> const plain = sm90_config_choices(false);
  std::vector<std::string> const twins = sm90_config_choices(true);
  for (Sm90Tile t : kSm90Tiles) {
    EXPECT_NE(std::find(plain.begin(), plain.end(), config_name_of(t, false)), plain.end()) << name_of(t);
    EXPECT_NE(std::find(twins.begin(), twins.end(), sm90_tma_residual_config_name(t)), twins.end()) << name_of(t);
  }
  EXPECT_NE(std::find(plain.begin(), plain.end(), sm90_split_config_name(Sm90Tile::kMedium)), plain.end());
  EXPECT_NE(std::find(plain.begin(), plain.end(), sm90_split_config_name(Sm90Tile::kShort)), plain.end());
  EXPECT_EQ(twins.size(), std::size(kSm90Tiles));
}

TEST(GemmPlan, UnalignedOrOtherLayoutsAreCopiedWithKPadded) {
  GemmRequest odd = request(4095, 4097, 4093);
  odd.tma_aligned = false;
  GemmPlan const p = planned(odd);
  EXPECT_EQ(p.family, GemmFamily::kSm90);
  EXPECT_TRUE(p.copy_operands);
  EXPECT_EQ(p.padded_k, 4096);
  EXPECT_TRUE(contains(p.why, "K zero-padded 4093 -> 4096")) << p.why;

  GemmRequest tt = request(256, 256, 128);
  tt.hopper_layouts = false;
  GemmPlan const t = planned(tt);
  EXPECT_TRUE(t.copy_operands);
  EXPECT_EQ(t.padded_k, 128);
  EXPECT_TRUE(contains(t.why, "layouts are not the kernel's")) << t.why;

  EXPECT_EQ(planned(request(64, 64, 0)).padded_k, 8);  // k = 0: eight zeros, acc = 0
}

TEST(GemmPlan, SplitsWhereTheTilesLeaveMostSmsIdle) {
  // A mid-size output with K long for it: 16 tiles of 128x128 on 132 SMs, K = 3072 in 3 parts (more fill the SMs,
  // but each split adds its reductions of the output).
  GemmPlan const square = planned(request(512, 512, 3072));
  EXPECT_EQ(square.sm90.split_k, 3);
  EXPECT_EQ(square.sm90.config, "tilefuse::gemm::Sm90SplitReduce<tilefuse::gemm::Sm90MediumConfig>");
  // Outputs of a few 128-row tiles with long K split on the 64x64 tile: fewer splits fill the SMs, so fewer sums
  // (measured on an H200: 256 x 256 x 16384 split 8 14.5 us against 18.0 on 128x128 split 16; 128 x 256 x 8192
  // split 8 11.4 us; 64 x 64 x 65536 split 32-64 13.6-13.7 us against 15.8 on 128x128 split 128).
  GemmPlan const tall = planned(request(128, 256, 8192));
  EXPECT_EQ(tall.sm90.split_k, 8);
  EXPECT_EQ(tall.sm90.kind, Sm90Tile::kShort);
  EXPECT_EQ(tall.sm90.config, "tilefuse::gemm::Sm90SplitReduce<tilefuse::gemm::Sm90ShortConfig>");
  EXPECT_EQ(tall.sm90.tile_m, 64);
  EXPECT_TRUE(contains(tall.why, "choose_sm90_split")) << tall.why;
  for (auto [m, n, k, split] : {std::array<index_t, 4>{256, 256, 16384, 8}, {64, 64, 65536, 64}}) {
    Sm90GemmPlan const p = planned(request(m, n, k)).sm90;
    EXPECT_EQ(p.kind, Sm90Tile::kShort) << m << "x" << n << "x" << k;
    EXPECT_EQ(p.split_k, split) << m << "x" << n << "x" << k;
  }
  // Where 128x128 needs fewer than 16 splits it keeps them (the 64x64 tile measured 0-38% slower on these).
  for (auto [m, n, k, split] : {std::array<index_t, 4>{128, 512, 8192, 8}, {512, 512, 8192, 4}, {64, 3072, 8192, 4},
                                {64, 512, 3072, 8}, {256, 256, 3072, 6}, {2048, 64, 8192, 8}, {788, 64, 3072, 8}}) {
    Sm90GemmPlan const p = planned(request(m, n, k)).sm90;
    EXPECT_EQ(p.kind, Sm90Tile::kMedium) << m << "x" << n << "x" << k;
    EXPECT_EQ(p.split_k, split) << m << "x" << n << "x" << k;
  }
  // gemm::Gemm hands GemmSm90 the planner's split count: asked for explicitly, that count keeps the planner's tile
  // (another count runs on 128x128).
  for (auto [m, n, k] : {std::array<index_t, 3>{256, 256, 16384}, {64, 64, 65536}, {512, 512, 3072}, {66, 66, 2048}}) {
    Sm90GemmPlan const chosen = plan_gemm_sm90({m, n, k, 1}, kH100, false, std::nullopt, 0);
    Sm90GemmPlan const asked = plan_gemm_sm90({m, n, k, 1}, kH100, false, std::nullopt, chosen.split_k);
    EXPECT_EQ(asked.config, chosen.config) << m << "x" << n << "x" << k;
    EXPECT_EQ(asked.split_k, chosen.split_k) << m << "x" << n << "x" << k;
  }
  EXPECT_EQ(plan_gemm_sm90({256, 256, 16384, 1}, kH100, false, std::nullopt, 4).kind, Sm90Tile::kMedium);
  Sm90GemmPlan const paired = plan_gemm_sm90({256, 256, 16384, 1}, kH100, false, std::nullopt, 8);
  EXPECT_TRUE(contains(paired.why, "choose_sm90_split: the tile it pairs with this count")) << paired.why;
  // The 64x64 tile splits into at most 64 parts (128 splits of one tile ran slower than 32 or 64).
  for (auto [m, n, k] : {std::array<index_t, 3>{32, 32, 262144}, {64, 64, 131072}, {8, 200, 524288}, {64, 64, 65536}}) {
    Sm90GemmPlan const p = planned(request(m, n, k)).sm90;
    if (p.kind == Sm90Tile::kShort) EXPECT_LE(p.split_k, 64) << m << "x" << n << "x" << k;
  }
  // FP8 never splits, not even where 16-bit operands would.
  Sm90GemmPlan const fp8 = plan_gemm_sm90({256, 256, 16384, 1}, kH100, /*fp8=*/true, std::nullopt, 0);
  EXPECT_EQ(fp8.split_k, 1);
  EXPECT_TRUE(contains(fp8.config, "Fp8")) << fp8.config;
  // A tiny output with a long K on 128x128: far past the old cap of 16 parts.
  EXPECT_EQ(planned(request(3, 40, 16384)).sm90.split_k, 64);
  // The 64x64 split must beat the same tile unsplit, and keeps parts of at least 16 k-tiles.
  EXPECT_EQ(planned(request(197, 768, 3072)).sm90.split_k, 1);
  // The split's baseline is the best 128-row tile (its costs were fitted beside them), not the 64x64 one.
  EXPECT_EQ(planned(request(66, 66, 2048)).sm90.split_k, 8);
  // ... nor 128x96 or 128x160, which the model would let undercut splits fitted against the 128-row tiles.
  EXPECT_EQ(planned(request(394, 256, 2048)).sm90.split_k, 4);
  EXPECT_EQ(planned(request(1576, 64, 2048)).sm90.split_k, 4);
  // Enough tiles (128 of 128x64), a short K, a batch; or a split whose sums cost more than it saves (48
  // tiles of 128x128 over K = 768: measured 0.0175 ms split in 2 against 0.0103 unsplit on an H200): no split.
  EXPECT_EQ(planned(request(197, 3072, 768)).sm90.split_k, 1);
  EXPECT_EQ(planned(request(8, 1000, 768)).sm90.split_k, 1);
  EXPECT_EQ(planned(request(128, 8192, 8192)).sm90.split_k, 1);
  EXPECT_EQ(planned(request(197, 768, 128)).sm90.split_k, 1);
  GemmRequest batched = request(128, 512, 8192);
  batched.problem.batch = 2;
  EXPECT_EQ(planned(batched).sm90.split_k, 1);
  // Copied operands split on the padded K (8191 -> 8192: 8 parts of 1024 on the 64x64 tile).
  GemmRequest skinny = request(127, 255, 8191);
  skinny.tma_aligned = false;
  GemmPlan const s = planned(skinny);
  EXPECT_TRUE(s.copy_operands);
  EXPECT_EQ(s.sm90.split_k, 8);
  EXPECT_EQ(s.sm90.kind, Sm90Tile::kShort);
  // split_k = 1 never splits; a forced split is taken where the kernel can split so, else dropped with why.
  GemmRequest none = request(197, 768, 3072);
  none.split_k = 1;
  EXPECT_EQ(planned(none).sm90.split_k, 1);
  GemmRequest forced = request(1024, 1024, 1024);
  forced.split_k = 4;
  EXPECT_EQ(planned(forced).sm90.split_k, 4);
  forced.split_k = 3;
  GemmPlan const dropped = planned(forced);
  EXPECT_EQ(dropped.sm90.split_k, 1);
  EXPECT_TRUE(contains(dropped.why, "split_k = 3 not taken")) << dropped.why;
}

TEST(GemmPlan, ForcedFamilies) {
  GemmRequest sm80 = request(8192, 8192, 8192);
  sm80.family = GemmFamily::kSm80;
  EXPECT_EQ(planned(sm80).family, GemmFamily::kSm80);
  GemmRequest sm90 = request(512, 512, 512);
  sm90.family = GemmFamily::kSm90;
  GemmPlan plan;
  Status const s = plan_gemm(sm90, kA100, &plan);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "the Hopper kernel was asked for")) << s.message();
}

TEST(GemmPlan, RefusesWhatNoKernelCanRun) {
  GemmPlan plan;
  Status const turing = plan_gemm(request(512, 512, 512), DeviceFacts{7, 5, 40}, &plan);
  EXPECT_FALSE(turing.ok());
  EXPECT_TRUE(contains(turing.message(), "sm_75")) << turing.message();
  // The sm80 kernel's grid: batch x split on z, at most 65535 (the Hopper kernel folds the batch into its tiles).
  GemmRequest batched = request(64, 64, 64);
  batched.problem.batch = 70000;
  Status const grid = plan_gemm(batched, kA100, &plan);
  EXPECT_FALSE(grid.ok());
  EXPECT_TRUE(contains(grid.message(), "65535")) << grid.message();
  EXPECT_EQ(planned(batched).family, GemmFamily::kSm90);
  batched.problem.batch = 65535;
  EXPECT_EQ(planned(batched, kA100).split_k, 1);
  EXPECT_EQ(planned(request(64, 64, 64), DeviceFacts{}).family, GemmFamily::kSm80);  // facts unknown: planned
}

TEST(GemmPlan, AFewRowsRunTheSkinnyKernelWhereItsBlocksFillTheSms) {
  GemmRequest r = request(8, 4096, 1024);  // 512 blocks of 8 columns
  r.skinny_code = true;
  GemmPlan const p = planned(r);
  EXPECT_EQ(p.family, GemmFamily::kSkinny);
  EXPECT_TRUE(contains(p.why, "skinny kernel: m = 8 rows")) << p.why;
  EXPECT_EQ(planned(r, kA100).family, GemmFamily::kSkinny);
  GemmRequest no_code = request(8, 4096, 1024);  // a caller without the kernel (the conv planners)
  EXPECT_EQ(planned(no_code).family, GemmFamily::kSm90);
  GemmRequest nine = r;
  nine.problem.m = 17;
  EXPECT_EQ(planned(nine).family, GemmFamily::kSm90);
  GemmRequest few = r;
  few.problem.n = 256;  // 32 blocks, each streaming a K of 1024: short, so the skinny kernel still
  EXPECT_EQ(planned(few).family, GemmFamily::kSkinny);
  few.problem.k = 16384;  // ... but over a long K most SMs would sit idle: the Hopper kernel splits it
  GemmPlan const idle = planned(few);
  EXPECT_EQ(idle.family, GemmFamily::kSm90);
  GemmRequest head = request(8, 1000, 768);  // a classifier head: 125 blocks, k = 768
  head.skinny_code = true;
  EXPECT_EQ(planned(head).family, GemmFamily::kSkinny);
  head.problem.k = skinny::kSkinnyShortK + 8;
  EXPECT_EQ(planned(head).family, GemmFamily::kSm90);
  GemmRequest split = r;
  split.split_k = 2;
  EXPECT_EQ(planned(split).family, GemmFamily::kSm90);
  GemmRequest tiled = r;
  tiled.tile = Sm90Tile::kNarrow;
  EXPECT_EQ(planned(tiled).family, GemmFamily::kSm90);
  GemmRequest unaligned = r;
  unaligned.tma_aligned = false;
  EXPECT_NE(planned(unaligned).family, GemmFamily::kSkinny);
  // Forced: wherever it can run, and refused with the reason where it cannot.
  few.family = GemmFamily::kSkinny;
  EXPECT_EQ(planned(few).family, GemmFamily::kSkinny);
  nine.family = GemmFamily::kSkinny;
  GemmPlan plan;
  Status const refused = plan_gemm(nine, kH100, &plan);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.message(), "m = 17 is not 1 to 16")) << refused.message();
}

TEST(GemmPlan, GemmsWorkspaceHoldsTheCopiesThenTheSplitSums) {
  GemmRequest r = request(127, 255, 8191);
  r.tma_aligned = false;
  GemmPlan const p = planned(r);
  ASSERT_TRUE(p.copy_operands);
  ASSERT_GT(p.sm90.split_k, 1);
  HopperWorkspace const w = hopper_workspace(p, r.problem, 127 * 8191, 8191 * 255, 2);
  EXPECT_EQ(w.b_offset, (127u * 8192 * 2 + 255) / 256 * 256);
  EXPECT_EQ(w.split_offset, w.b_offset + (255u * 8192 * 2 + 255) / 256 * 256);
  GemmCoord const run{127, 255, 8192, 1};
  EXPECT_EQ(w.bytes, w.split_offset + sm90_split_workspace_bytes(run, p.sm90.tile_m, p.sm90.tile_n));
  // The split runs on the 64x64 tile: 127 x 256 fp32 sums, then a ticket per 16 rows of its 2 x 4 tiles.
  EXPECT_EQ(p.sm90.kind, Sm90Tile::kShort);
  EXPECT_EQ(sm90_split_workspace_bytes(run, p.sm90.tile_m, p.sm90.tile_n), std::size_t{130176});
  GemmRequest shared = request(64, 64, 61);  // batch 3 with a B shared by the batch: B copied once
  shared.problem.batch = 3;
  shared.tma_aligned = false;
  GemmPlan const q = planned(shared);
  HopperWorkspace const v = hopper_workspace(q, shared.problem, 64 * 61, 0, 2);
  EXPECT_EQ(v.b_offset, (3u * 64 * 64 * 2 + 255) / 256 * 256);
  EXPECT_EQ(v.bytes - v.b_offset, (64u * 64 * 2 + 255) / 256 * 256);
}

TEST(GemmPlan, SplitWorkspaceMatchesTheKernelsLayout) {
  // 197 x 768 on 128x128 tiles: 197 rows of 768 floats, then 2 x 8 x 6 tickets.
  EXPECT_EQ(sm90_split_tickets_offset({197, 768, 3072, 1}), std::size_t{197} * 768 * 4);
  EXPECT_EQ(sm90_split_workspace_bytes({197, 768, 3072, 1}, 128, 128), std::size_t{197} * 768 * 4 + 96 * 4);
  EXPECT_EQ(sm90_split_tickets_offset({64, 66, 512, 1}), std::size_t{64} * 68 * 4);  // rows padded to 4 floats
}

TEST(GemmSm90Describe, SaysWhatTheKernelAndThePlanAre) {
  // The text gemm::GemmSm90::describe() and Python's Operation.describe() (through tilefuse._C) both give.
  Sm90GemmKernelFacts large{128, 256, 64, 4, 2, false, 1, true, false};
  EXPECT_EQ(describe_sm90_gemm(large, 117, 117, true, 1),
            "sm90 TMA + WGMMA GEMM (warp-specialized, persistent), tile 128x256x64, 4 stages, 2 consumer warpgroups, "
            "117 tiles on 117 blocks, the residual loaded by TMA, D stored by TMA");
  Sm90GemmKernelFacts pair{128, 128, 64, 6, 2, true, 2, false, true};
  std::string const text = describe_sm90_gemm(pair, 84, 84, false, 3);
  EXPECT_NE(text.find("2 consumer warpgroups (ping-pong), clusters of 2 along M"), std::string::npos) << text;
  EXPECT_NE(text.find("84 tile pairs on 84 blocks, split-K 3 summed in the kernel"), std::string::npos) << text;
  EXPECT_EQ(text.find("D stored by TMA"), std::string::npos) << text;
}

TEST(GemmSm80Describe, SaysThePathAndWhy) {
  EXPECT_EQ(sm80_why_narrow(false, 64, 64, 1, 0, 0, 8), "a or b is not 16-byte aligned");
  EXPECT_EQ(sm80_why_narrow(true, 4093, 64, 1, 0, 0, 8), "lda = 4093 or ldb = 64 is not a multiple of 8 elements");
  EXPECT_EQ(sm80_why_narrow(true, 64, 64, 2, 4100, 0, 8), "a batch stride is not a multiple of 8 elements");
  EXPECT_EQ(sm80_why_narrow(true, 64, 64, 1, 4100, 0, 8), "");  // one batch entry: its stride is never used
  Sm80GemmKernelFacts const large = sm80_gemm_kernel_facts<Sm80LargeConfig>();
  EXPECT_EQ(describe_sm80_gemm(large, "bf16", false, false, "lda = 4093 or ldb = 64 is not a multiple of 8 elements", 3,
                               " (Hopper kernel refused: the device is sm_80)"),
            "sm80 mma.sync GEMM (bf16 inputs), tile 128x256x64, 8 warps, 3 stages, element-wise path (lda = 4093 or "
            "ldb = 64 is not a multiple of 8 elements), split-K 3 (Hopper kernel refused: the device is sm_80)");
  EXPECT_EQ(describe_sm80_gemm(large, "fp16", true, true, "", 1, ""),
            "sm80 mma.sync GEMM (fp16 inputs), tile 128x256x64, 8 warps, 3 stages, operands by TMA (sm_90)");
}

}  // namespace
}  // namespace tilefuse::gemm
