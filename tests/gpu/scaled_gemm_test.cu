// gemm::ScaledGemm (FP8 A x FP8 B with torch._scaled_mm's scales, on the Hopper kernel) against
// reference::scaled_gemm (float64, dequantize-multiply-convert).
//
// Exact cases: A and B hold integers in [-2, 2] (exact in e4m3 and e5m2), the scales are powers of two,
// the bias integers in [-3, 3]. Every product and partial sum is then an integer times a power of two
// far inside fp32's range, so the kernel's fp32 result equals the float64 one and the outputs must
// match bit for bit after the same rounding (fp8 outputs saturate alike). That holds for promoted
// accumulation (each k-tile's tensor-core sum is at most 128 * 4 = 512); fast accumulation sums the
// whole K in the tensor cores' reduced-precision accumulator, so its cases are checked against a bound
// instead (a relative 2^-10 of sum |a b| * |scales|, plus half an output ulp).
// Random-normal case: inputs quantized to e4m3, normal scales; error bound against float64.
// Outputs are poisoned (every byte 0xff: NaN) before each run, with 256 guard elements before and after
// D that must come back untouched. Tests skip on devices other than sm_90.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <tilefuse/gemm/device/scaled_gemm.hpp>
#include <tilefuse/reference/scaled_gemm.hpp>

#include "gemm_sm90_test_cases.hpp"
#include "gpu_test_support.hpp"

#include "fp8_experiment_configs.hpp"  // bench/fp8

namespace tilefuse::gpu_test {
namespace {

using gemm::Fp8Accumulation;
using gemm::ScalingMode;

struct ScaledCase {
  index_t m, n, k;
  std::uint64_t seed;
  bool normal = false;  // random-normal inputs and scales instead of integers and powers of two
};

std::vector<ScaledCase> scaled_cases(std::uint64_t seed) {
  // n and k multiples of 16 (torch's rule); m anything. Edges of the 128 x 256 and 128 x 128 tiles,
  // one k-tile, partial k-tiles, several of them: 1 to 5, 8 and 16 k-tiles of 128, odd and even counts (the
  // promoted mainloop pairs k-tiles and ends on a single one when their count is odd).
  return {{1, 16, 16, seed},         {17, 48, 32, seed + 1},     {128, 128, 128, seed + 2}, {129, 272, 144, seed + 3},
          {65, 32, 336, seed + 7},   {300, 256, 400, seed + 4},  {200, 144, 592, seed + 8}, {255, 144, 1024, seed + 5},
          {64, 512, 2048, seed + 6}};
}

template <class T>
std::vector<T> integer_matrix(index_t count, std::mt19937_64& rng, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = convert<T>(static_cast<float>(dist(rng)));
  return v;
}

std::vector<float> power_of_two_scales(index_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> dist(-2, 2);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = std::ldexp(1.0f, dist(rng));
  return v;
}

template <class T>
std::vector<T> normal_matrix(index_t count, std::mt19937_64& rng, float sigma) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<T> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = convert<T>(dist(rng));
  return v;
}

template <class T>
std::vector<T> download(DeviceBuffer const& buffer, cudaStream_t stream) {
  std::vector<T> host(buffer.bytes() / sizeof(T));
  buffer.download(host.data(), stream);
  return host;
}

template <class ElementAB, class ElementOut, ScalingMode Mode, bool kHasBias, Fp8Accumulation Acc, class Config = void,
          class ElementB = ElementAB, bool kAmax = false>
void run_scaled_case(ScaledCase const& c) {
  using Bias = std::conditional_t<sizeof(ElementOut) == 2, ElementOut, bfloat16_t>;
  using Op = gemm::ScaledGemm<ElementAB, ElementOut, Mode, kHasBias, Acc, Bias, Config, ElementB, kAmax>;
  constexpr bool kFp8Out = sizeof(ElementOut) == 1;
  bool const exact = !c.normal && Acc == Fp8Accumulation::kPromoted;
  std::mt19937_64 rng(c.seed);
  Stream stream;

  std::vector<ElementAB> a = c.normal ? normal_matrix<ElementAB>(c.m * c.k, rng, 1.0f)
                                      : integer_matrix<ElementAB>(c.m * c.k, rng, -2, 2);
  // B column-major: element (kk, col) at col * k + kk.
  std::vector<ElementB> b = c.normal ? normal_matrix<ElementB>(c.k * c.n, rng, 1.0f)
                                     : integer_matrix<ElementB>(c.k * c.n, rng, -2, 2);
  // Scale counts and torch's layouts per mode (block-wise: scale_a M x KB M-major, scale_b KB x NB
  // KB-major, KB = ceil(K / 128), NB = ceil(N / 128)).
  index_t const kb = (c.k + 127) / 128, nb = (c.n + 127) / 128;
  index_t const scales_a = Mode == ScalingMode::kPerTensor ? 1 : Mode == ScalingMode::kRowWise ? c.m : c.m * kb;
  index_t const scales_b = Mode == ScalingMode::kPerTensor ? 1 : Mode == ScalingMode::kRowWise ? c.n : kb * nb;
  std::vector<float> sa = power_of_two_scales(scales_a, rng);
  std::vector<float> sb = power_of_two_scales(scales_b, rng);
  if (c.normal) {
    std::uniform_real_distribution<float> u(0.25f, 2.0f);
    for (auto& x : sa) x = u(rng);
    for (auto& x : sb) x = u(rng);
  }
  std::vector<Bias> bias = integer_matrix<Bias>(c.n, rng, -3, 3);
  float const scale_result = 0.25f;

  DeviceBuffer da(a.size()), db(b.size()), dsa(sa.size() * 4), dsb(sb.size() * 4), dbias(bias.size() * sizeof(Bias)),
      dscale_result(4);
  da.upload(a.data(), stream.get());
  db.upload(b.data(), stream.get());
  dsa.upload(sa.data(), stream.get());
  dsb.upload(sb.data(), stream.get());
  dbias.upload(bias.data(), stream.get());
  dscale_result.upload(&scale_result, stream.get());
  constexpr index_t kGuard = 256;
  DeviceBuffer dd(static_cast<std::size_t>(c.m * c.n + 2 * kGuard) * sizeof(ElementOut));
  dd.fill_bytes(0xff, stream.get());

  typename Op::Arguments args;
  args.m = c.m, args.n = c.n, args.k = c.k;
  args.a = da.as<ElementAB>();
  args.b = db.as<ElementB>();
  args.scale_a = dsa.as<float>();
  args.scale_b = dsb.as<float>();
  if constexpr (kHasBias) args.bias = dbias.as<Bias>();
  if constexpr (kFp8Out) args.scale_result = dscale_result.as<float>();
  args.d = dd.as<ElementOut>() + kGuard;
  DeviceBuffer damax(sizeof(float));
  damax.fill_bytes(0xff, stream.get());  // NaN until written
  if constexpr (kAmax) args.amax = damax.as<float>();
  std::string const what = "case " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                           " seed " + std::to_string(c.seed) + ": " + Op::describe(args);
  Status const s = Op::run(args, stream.get());
  ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
  stream.synchronize();

  std::vector<ElementOut> got = download<ElementOut>(dd, stream.get());
  std::vector<ElementOut> want(static_cast<std::size_t>(c.m * c.n));
  double want_amax = 0.0;
  reference::ScaleGrid ga, gb;
  if constexpr (Mode == ScalingMode::kPerTensor) {
    ga = {sa.data(), c.m, c.k, 0, 0};
    gb = {sb.data(), c.k, c.n, 0, 0};
  } else if constexpr (Mode == ScalingMode::kRowWise) {
    ga = {sa.data(), 1, c.k, 1, 0};
    gb = {sb.data(), c.k, 1, 0, 1};
  } else {
    ga = {sa.data(), 1, 128, 1, c.m};
    gb = {sb.data(), 128, 128, 1, kb};
  }
  Status const r = reference::scaled_gemm<ElementOut>(
      MatrixRef<ElementAB const, RowMajor>{a.data(), c.m, c.k, c.k, 0}, ga,
      MatrixRef<ElementB const, ColumnMajor>{b.data(), c.k, c.n, c.k, 0}, gb, kHasBias ? bias.data() : nullptr,
      kFp8Out ? &scale_result : nullptr, MatrixRef<ElementOut, RowMajor>{want.data(), c.m, c.n, c.n, 0}, &want_amax);
  ASSERT_TRUE(r.ok()) << r.to_string();
  if constexpr (kAmax) {
    float const got_amax = download<float>(damax, stream.get())[0];
    // Exact cases: y is an integer times a power of two in fp32 as in float64; otherwise the elements' bound.
    double const room = exact ? 0.0 : std::ldexp(want_amax, -9);
    EXPECT_LE(std::abs(static_cast<double>(got_amax) - want_amax), room)
        << what << ": amax " << got_amax << ", want " << want_amax;
  }

  // Guards untouched (still all-ones bytes).
  auto const* bytes = reinterpret_cast<std::uint8_t const*>(got.data());
  std::size_t const guard_bytes = kGuard * sizeof(ElementOut);
  for (std::size_t i = 0; i < guard_bytes; ++i) {
    ASSERT_EQ(bytes[i], 0xff) << what << ": guard byte " << i << " before D was written";
    ASSERT_EQ(bytes[got.size() * sizeof(ElementOut) - 1 - i], 0xff) << what << ": guard byte after D was written";
  }
  int failures = 0;
  for (index_t row = 0; row < c.m && failures < 5; ++row) {
    for (index_t col = 0; col < c.n && failures < 5; ++col) {
      double const g = to_double(got[static_cast<std::size_t>(kGuard + row * c.n + col)]);
      double const w = to_double(want[static_cast<std::size_t>(row * c.n + col)]);
      double tolerance = 0.0;
      if (!exact) {
        // sum |a b| * |sa sb| bounds the accumulation error; half an output ulp the final rounding.
        double magnitude = 0.0;
        for (index_t i = 0; i < c.k; ++i) {
          magnitude += std::abs(to_double(a[static_cast<std::size_t>(row * c.k + i)]) * ga.at(row, i) *
                                to_double(b[static_cast<std::size_t>(col * c.k + i)]) * gb.at(i, col));
        }
        if constexpr (kFp8Out) magnitude *= scale_result;
        // The tensor cores add FP8 products with fewer bits than fp32 (about 13 within one k-tile: the
        // first normal-input run missed a 2^-20 bound by 2^-13 of the magnitude), promoted or not.
        double const accumulation = (Acc == Fp8Accumulation::kFast ? std::ldexp(1.0, -10) : std::ldexp(1.0, -11)) * magnitude;
        double const ulp = std::is_same_v<ElementOut, float> ? std::ldexp(std::abs(w), -23)
                           : std::is_same_v<ElementOut, bfloat16_t> ? std::ldexp(std::abs(w), -7)
                           : std::is_same_v<ElementOut, half_t>     ? std::ldexp(std::abs(w), -10)
                                                                    : std::ldexp(std::abs(w), -2);
        tolerance = accumulation + ulp;
      }
      bool const ok = exact ? (g == w || (std::isnan(g) && std::isnan(w))) : std::abs(g - w) <= tolerance;
      if (!ok) {
        ++failures;
        ADD_FAILURE() << what << ": D(" << row << ", " << col << ") = " << g << ", want " << w
                      << (exact ? " exactly" : " within " + std::to_string(tolerance));
      }
    }
  }
}

template <class ElementAB, class ElementOut, ScalingMode Mode, bool kHasBias, Fp8Accumulation Acc, class Config = void,
          class ElementB = ElementAB, bool kAmax = false>
void run_scaled_cases(std::vector<ScaledCase> const& cases) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  for (ScaledCase const& c : cases) {
    run_scaled_case<ElementAB, ElementOut, Mode, kHasBias, Acc, Config, ElementB, kAmax>(c);
    if (testing::Test::HasFailure()) return;
  }
}

constexpr auto kPerTensor = ScalingMode::kPerTensor;
constexpr auto kRowWise = ScalingMode::kRowWise;
constexpr auto kPromoted = Fp8Accumulation::kPromoted;
constexpr auto kFast = Fp8Accumulation::kFast;

TEST(ScaledGemm, E4m3PerTensorBf16Promoted) { run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, false, kPromoted>(scaled_cases(1100)); }
TEST(ScaledGemm, E4m3PerTensorBf16BiasPromoted) { run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, true, kPromoted>(scaled_cases(1110)); }
TEST(ScaledGemm, E4m3RowWiseBf16Promoted) { run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, false, kPromoted>(scaled_cases(1120)); }
TEST(ScaledGemm, E4m3RowWiseFp16BiasPromoted) { run_scaled_cases<float_e4m3_t, half_t, kRowWise, true, kPromoted>(scaled_cases(1130)); }
TEST(ScaledGemm, E4m3RowWiseFp32Promoted) { run_scaled_cases<float_e4m3_t, float, kRowWise, false, kPromoted>(scaled_cases(1140)); }
TEST(ScaledGemm, E4m3PerTensorE4m3OutPromoted) { run_scaled_cases<float_e4m3_t, float_e4m3_t, kPerTensor, false, kPromoted>(scaled_cases(1150)); }
TEST(ScaledGemm, E4m3PerTensorBf16FastPingPong) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, false, kFast, gemm::Sm90Fp8PingPongConfig>(scaled_cases(1160));
}
TEST(ScaledGemm, E4m3PerTensorBf16Fast) { run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, false, kFast>(scaled_cases(1170)); }
TEST(ScaledGemm, E4m3RowWiseBf16BiasFast) { run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, true, kFast>(scaled_cases(1180)); }
// The default row-wise fast accumulation runs ping-pong for K of at most 8 k-tiles (its correctness: the
// short cases of E4m3RowWiseBf16BiasFast); per-tensor and explicit configs keep their kernel. Host logic.
TEST(ScaledGemm, RowWiseFastPicksPingPongForShortK) {
  using RowWise = gemm::ScaledGemm<float_e4m3_t, bfloat16_t, kRowWise, false, kFast>;
  using PerTensor = gemm::ScaledGemm<float_e4m3_t, bfloat16_t, kPerTensor, false, kFast>;
  using RowWiseLarge = gemm::ScaledGemm<float_e4m3_t, bfloat16_t, kRowWise, false, kFast, bfloat16_t, gemm::Sm90Fp8LargeConfig>;
  using RowWisePromoted = gemm::ScaledGemm<float_e4m3_t, bfloat16_t, kRowWise, false, kPromoted>;
  auto const picks = [](auto op, index_t k) {
    typename decltype(op)::Arguments a;
    a.m = 16384, a.n = 8192, a.k = k;
    return decltype(op)::picks_ping_pong(a);
  };
  EXPECT_TRUE(picks(RowWise{}, 1024));
  EXPECT_FALSE(picks(RowWise{}, 1040));  // 9 k-tiles
  EXPECT_FALSE(picks(PerTensor{}, 1024));
  EXPECT_FALSE(picks(RowWiseLarge{}, 1024));
  EXPECT_FALSE(picks(RowWisePromoted{}, 1024));
}

// Row-wise on the 128 x 256 cooperative tile (what the default picks for large problems): the tile's scale_b staged
// per consumer warp, its rows' scale_a in registers.
TEST(ScaledGemm, E4m3RowWiseFp16FastCooperative) {
  run_scaled_cases<float_e4m3_t, half_t, kRowWise, false, kFast, gemm::Sm90Fp8LargeConfig>(scaled_cases(1185));
}
TEST(ScaledGemm, E4m3RowWiseBf16NormalPromoted) {
  std::vector<ScaledCase> cases = scaled_cases(1190);
  for (auto& c : cases) c.normal = true;
  run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, false, kPromoted>(cases);
}

TEST(ScaledGemm, E4m3RowWiseBf16PromotedEvery2) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, false, kPromoted, gemm::Sm90Fp8PromotedEvery2Config>(scaled_cases(1230));
}

// amax = max |y| over D (before scale_result), for FP8 recipes: an e4m3 output with scale_result (exact
// cases), a bf16 row-wise one with bias and fast accumulation (bound), and block-wise with normal inputs.
TEST(ScaledGemm, E4m3PerTensorE4m3OutAmax) {
  run_scaled_cases<float_e4m3_t, float_e4m3_t, kPerTensor, false, kPromoted, void, float_e4m3_t, true>(scaled_cases(1310));
}
TEST(ScaledGemm, E4m3PerTensorBf16FastAmax) {  // the default fast config (the fp8 bench's amax row)
  std::vector<ScaledCase> cases = scaled_cases(1340);
  cases.push_back({2304, 256, 256, 1349});  // more rows than reduce_vector_kernel's 1024 threads
  run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, false, kFast, void, float_e4m3_t, true>(cases);
}
TEST(ScaledGemm, E4m3RowWiseBf16BiasFastAmax) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, true, kFast, void, float_e4m3_t, true>(scaled_cases(1320));
}
TEST(ScaledGemm, E4m3BlockWiseBf16NormalAmax) {
  std::vector<ScaledCase> cases = scaled_cases(1330);
  for (auto& c : cases) c.normal = true;
  run_scaled_cases<float_e4m3_t, bfloat16_t, ScalingMode::kBlockWise, false, kPromoted, void, float_e4m3_t, true>(cases);
}

// The promoted mainloop with one partial set (each k-tile waited for before the next is issued): the fp8
// bench's A/B baseline for the default's two alternating sets.
TEST(ScaledGemm, E4m3PerTensorBf16PromotedInLine) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, false, kPromoted, gemm::Sm90Fp8PromotedInLineConfig>(
      scaled_cases(1290));
}

constexpr auto kBlockWise = ScalingMode::kBlockWise;
TEST(ScaledGemm, E4m3BlockWiseBf16InLine) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kBlockWise, false, kPromoted, gemm::Sm90Fp8BlockScaledInLineConfig>(
      scaled_cases(1300));
}
TEST(ScaledGemm, E4m3BlockWiseBf16) { run_scaled_cases<float_e4m3_t, bfloat16_t, kBlockWise, false, kPromoted>(scaled_cases(1200)); }
TEST(ScaledGemm, E4m3BlockWiseFp16Bias) { run_scaled_cases<float_e4m3_t, half_t, kBlockWise, true, kPromoted>(scaled_cases(1210)); }
TEST(ScaledGemm, E4m3BlockWiseFp32Normal) {
  std::vector<ScaledCase> cases = scaled_cases(1220);
  for (auto& c : cases) c.normal = true;
  run_scaled_cases<float_e4m3_t, float, kBlockWise, false, kPromoted>(cases);
}

// Block-wise scales in layouts torch does not make, through GemmSm90 directly: scale_a's k-blocks
// padded to a multiple of 4 rows (DeepGEMM's layout for TMA), so the producer lanes copy 16 bytes of
// which 0-3 rows lie past m (m % 4 != 0) or all 4; and a row-major scale_a (row stride KB), copied 4
// bytes per row. fp32 D, exact (integer inputs, power-of-two scales).
TEST(ScaledGemm, E4m3BlockWiseScaleLayouts) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  using Tree = epilogue::Store<"D", float, epilogue::Acc>;
  using Op = gemm::GemmSm90<float_e4m3_t, RowMajor, ColumnMajor, Tree, gemm::Sm90Fp8BlockScaledConfig>;
  struct Layout {
    index_t m, n, k;
    bool row_major;  // scale_a (m x KB) row-major instead of M-major padded
  };
  for (Layout const c : {Layout{17, 144, 592, false}, Layout{129, 272, 400, false}, Layout{255, 128, 1024, false},
                         Layout{65, 48, 336, true}, Layout{128, 256, 256, true}}) {
    std::mt19937_64 rng(4000 + c.m);
    Stream stream;
    index_t const kb = (c.k + 127) / 128, nb = (c.n + 127) / 128, m_padded = (c.m + 3) / 4 * 4;
    std::vector<float_e4m3_t> a = integer_matrix<float_e4m3_t>(c.m * c.k, rng, -2, 2);
    std::vector<float_e4m3_t> b = integer_matrix<float_e4m3_t>(c.k * c.n, rng, -2, 2);
    std::vector<float> sa = power_of_two_scales(c.row_major ? c.m * kb : m_padded * kb, rng);
    std::vector<float> sb = power_of_two_scales(kb * nb, rng);
    index_t const sa_row = c.row_major ? kb : 1, sa_kblock = c.row_major ? 1 : m_padded;
    DeviceBuffer da(a.size()), db(b.size()), dsa(sa.size() * 4), dsb(sb.size() * 4), dd(c.m * c.n * sizeof(float));
    da.upload(a.data(), stream.get());
    db.upload(b.data(), stream.get());
    dsa.upload(sa.data(), stream.get());
    dsb.upload(sb.data(), stream.get());
    dd.fill_bytes(0xff, stream.get());
    Op::Arguments args;
    args.problem = {c.m, c.n, c.k, 1};
    args.a = da.as<float_e4m3_t>();
    args.b = db.as<float_e4m3_t>();
    args.epilogue.set("D", dd.as<float>());
    args.block_scale_a = dsa.as<float>();
    args.block_scale_a_strides[0] = sa_row;
    args.block_scale_a_strides[1] = sa_kblock;
    args.block_scale_b = dsb.as<float>();
    args.block_scale_b_strides[0] = 1;
    args.block_scale_b_strides[1] = kb;
    std::string const what = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                             (c.row_major ? ", scale_a row-major" : ", scale_a M-major padded to " + std::to_string(m_padded));
    Status const s = Op::run(args, nullptr, stream.get());
    ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
    stream.synchronize();
    std::vector<float> got = download<float>(dd, stream.get());
    std::vector<float> want(static_cast<std::size_t>(c.m * c.n));
    reference::ScaleGrid const ga{sa.data(), 1, 128, sa_row, sa_kblock}, gb{sb.data(), 128, 128, 1, kb};
    Status const r = reference::scaled_gemm<float>(MatrixRef<float_e4m3_t const, RowMajor>{a.data(), c.m, c.k, c.k, 0}, ga,
                                                   MatrixRef<float_e4m3_t const, ColumnMajor>{b.data(), c.k, c.n, c.k, 0},
                                                   gb, static_cast<bfloat16_t const*>(nullptr), nullptr,
                                                   MatrixRef<float, RowMajor>{want.data(), c.m, c.n, c.n, 0});
    ASSERT_TRUE(r.ok()) << r.to_string();
    int failures = 0;
    for (std::size_t i = 0; i < want.size() && failures < 5; ++i) {
      if (got[i] != want[i]) {
        ++failures;
        ADD_FAILURE() << what << ": D[" << i / c.n << ", " << i % c.n << "] = " << got[i] << ", want " << want[i];
      }
    }
    if (testing::Test::HasFailure()) return;
  }
}

// Mixed FP8 types (torch accepts e4m3 x e5m2 and e5m2 x e4m3).
TEST(ScaledGemm, E4m3xE5m2RowWiseBf16Promoted) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, false, kPromoted, void, float_e5m2_t>(scaled_cases(1270));
}
TEST(ScaledGemm, E5m2xE4m3PerTensorBf16Fast) {
  run_scaled_cases<float_e5m2_t, bfloat16_t, kPerTensor, true, kFast, void, float_e4m3_t>(scaled_cases(1280));
}

// Clusters of two sharing B by TMA multicast.
TEST(ScaledGemm, E4m3RowWiseBf16FastPingPongMulticast) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kRowWise, false, kFast, gemm::Sm90Fp8PingPongMulticastConfig>(scaled_cases(1240));
}
TEST(ScaledGemm, E4m3PerTensorBf16PromotedMulticast) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kPerTensor, false, kPromoted, gemm::Sm90Fp8PromotedMulticastConfig>(scaled_cases(1250));
}
TEST(ScaledGemm, E4m3BlockWiseBf16BiasMulticast) {
  run_scaled_cases<float_e4m3_t, bfloat16_t, kBlockWise, true, kPromoted, gemm::Sm90Fp8BlockScaledMulticastConfig>(scaled_cases(1260));
}

// Refusals: each names what is wrong.
TEST(ScaledGemm, Refusals) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  using Op = gemm::ScaledGemm<float_e4m3_t, bfloat16_t, kRowWise>;
  DeviceBuffer da(64 * 64), db(64 * 64), dd(64 * 64 * 2), ds(64 * 4);
  typename Op::Arguments args;
  args.m = 64, args.n = 64, args.k = 64;
  args.a = da.as<float_e4m3_t>();
  args.b = db.as<float_e4m3_t>();
  args.scale_a = ds.as<float>();
  args.scale_b = ds.as<float>();
  args.d = dd.as<bfloat16_t>();
  EXPECT_TRUE(Op::can_implement(args).ok()) << Op::can_implement(args).to_string();

  auto bad_k = args;
  bad_k.k = 40;  // not a multiple of 16
  Status s = Op::can_implement(bad_k);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("16"), std::string::npos) << s.to_string();

  auto host_scale = args;
  float host_value = 1.0f;
  host_scale.scale_a = &host_value;
  s = Op::can_implement(host_scale);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("scale_a"), std::string::npos) << s.to_string();

  auto misaligned = args;
  misaligned.a = da.as<float_e4m3_t>() + 1;
  s = Op::can_implement(misaligned);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("aligned"), std::string::npos) << s.to_string();

  // amax: only from an operation that computes it, and then required.
  auto stray_amax = args;
  stray_amax.amax = ds.as<float>();
  s = Op::can_implement(stray_amax);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("kAmax"), std::string::npos) << s.to_string();
  using AmaxOp = gemm::ScaledGemm<float_e4m3_t, bfloat16_t, kRowWise, false, kPromoted, bfloat16_t, void, float_e4m3_t, true>;
  typename AmaxOp::Arguments no_amax;
  no_amax.m = 64, no_amax.n = 64, no_amax.k = 64;
  no_amax.a = args.a, no_amax.b = args.b, no_amax.scale_a = args.scale_a, no_amax.scale_b = args.scale_b, no_amax.d = args.d;
  s = AmaxOp::can_implement(no_amax);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("amax is null"), std::string::npos) << s.to_string();
  no_amax.amax = ds.as<float>();
  EXPECT_TRUE(AmaxOp::can_implement(no_amax).ok()) << AmaxOp::can_implement(no_amax).to_string();

  // torch refuses e5m2 x e5m2 on CUDA, and so do we.
  using E5m2Op = gemm::ScaledGemm<float_e5m2_t, bfloat16_t, kPerTensor>;
  typename E5m2Op::Arguments e5;
  e5.m = 64, e5.n = 64, e5.k = 64;
  e5.a = da.as<float_e5m2_t>();
  e5.b = db.as<float_e5m2_t>();
  e5.scale_a = ds.as<float>();
  e5.scale_b = ds.as<float>();
  e5.d = dd.as<bfloat16_t>();
  s = E5m2Op::can_implement(e5);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("e5m2"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace tilefuse::gpu_test
