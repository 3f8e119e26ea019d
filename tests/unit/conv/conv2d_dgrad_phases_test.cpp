// The strided dgrad by phases (conv/device/conv2d_dgrad_phases.hpp): the phases, run as the stride-1
// fprops they describe and stored through their row maps, give the direct dgrad's dx exactly (integer values), for random
// strides, paddings, filters and sizes that are not multiples of the stride; and the plan's choices.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include <tilefuse/conv/device/conv2d_dgrad_phases.hpp>

namespace tilefuse::conv {
namespace {

// dx[n][h][w][c] = sum over (p, q, r, s, k) with p*S - pad + r = h (and for w) of dy[n][p][q][k] * w[k][r][s][c].
std::vector<long> direct_dgrad(Conv2dProblem const& p, std::vector<long> const& dy, std::vector<long> const& w) {
  std::vector<long> dx(p.N * p.H * p.W * p.C, 0);
  for (index_t n = 0; n < p.N; ++n)
    for (index_t y = 0; y < p.P(); ++y)
      for (index_t x = 0; x < p.Q(); ++x)
        for (index_t r = 0; r < p.R; ++r)
          for (index_t s = 0; s < p.S; ++s) {
            index_t const h = y * p.stride_h - p.pad_h + r, v = x * p.stride_w - p.pad_w + s;
            if (h < 0 || h >= p.H || v < 0 || v >= p.W) continue;
            for (index_t k = 0; k < p.K; ++k)
              for (index_t c = 0; c < p.C; ++c)
                dx[((n * p.H + h) * p.W + v) * p.C + c] +=
                    dy[((n * p.P() + y) * p.Q() + x) * p.K + k] * w[((k * p.R + r) * p.S + s) * p.C + c];
          }
  return dx;
}

// The phases as the caller runs them: each a stride-1 fprop of dy (padding from the phase) over the
// filter's taps transposed, every pixel of its output grid stored where phase_row_map puts it (as the
// kernel's lane stores do: gemm::sm90::mapped_row_offset, nothing outside the crop); the pixels of phases
// without taps are 0. Every element of dx must be written exactly once.
std::vector<long> dgrad_by_phases(Conv2dProblem const& p, std::vector<long> const& dy, std::vector<long> const& w) {
  std::vector<long> dx(p.N * p.H * p.W * p.C, -999);  // poisoned: every element must be written
  std::vector<int> writes(dx.size(), 0);
  for (DgradPhase const& ph : dgrad_phases(p)) {
    if (ph.empty()) {
      for (index_t n = 0; n < p.N; ++n)
        for (index_t i = 0; i < ph.h.extent; ++i)
          for (index_t j = 0; j < ph.w.extent; ++j)
            for (index_t c = 0; c < p.C; ++c) {
              index_t const at = ((n * p.H + ph.a + i * p.stride_h) * p.W + ph.b + j * p.stride_w) * p.C + c;
              dx[at] = 0;
              ++writes[at];
            }
      continue;
    }
    Conv2dProblem const& f = ph.fprop;
    gemm::sm90::OutputRowMap const map = phase_row_map(ph, p);
    for (index_t row = 0; row < f.N * f.P() * f.Q(); ++row) {
      index_t const at = gemm::sm90::mapped_row_offset(map, row, p.C);
      if (at < 0) continue;
      EXPECT_EQ(at % p.C, 0);
      index_t const n = row / (f.P() * f.Q()), oy = row / f.Q() % f.P(), ox = row % f.Q();
      for (index_t c = 0; c < p.C; ++c) {
        long sum = 0;
        for (index_t u = 0; u < f.R; ++u)
          for (index_t t = 0; t < f.S; ++t) {
            index_t const y = oy - f.pad_h + u, x = ox - f.pad_w + t;
            if (y < 0 || y >= f.H || x < 0 || x >= f.W) continue;
            index_t const r = ph.h.taps[u], s = ph.w.taps[t];
            for (index_t k = 0; k < p.K; ++k)
              sum += dy[((n * p.P() + y) * p.Q() + x) * p.K + k] * w[((k * p.R + r) * p.S + s) * p.C + c];
          }
        dx[at + c] = sum;
        ++writes[at + c];
      }
    }
  }
  for (int count : writes) EXPECT_EQ(count, 1);
  return dx;
}

TEST(Conv2dDgradPhases, RowDivisionByMultiplyAndShiftIsExact) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::int64_t> row(0, (std::int64_t{1} << 31) - 1);
  std::vector<std::int64_t> divisors{1, 2, 3, 7, 14, 28, 49, 56, 196, 784, 3136, 12544, 65535, 65536, 1 << 20, 2147483647};
  for (int t = 0; t < 200; ++t) divisors.push_back(1 + row(rng) % (t < 100 ? 100000 : 2147483647));
  for (std::int64_t d : divisors) {
    gemm::sm90::RowDivisor const by = gemm::sm90::row_divisor(d);
    for (std::int64_t x : {std::int64_t{0}, d - 1, d, d + 1, 2 * d - 1, (std::int64_t{1} << 31) - 1}) {
      if (x < 0 || x >= (std::int64_t{1} << 31)) continue;
      ASSERT_EQ(gemm::sm90::divide_row(static_cast<std::uint32_t>(x), by), x / d) << x << " / " << d;
    }
    for (int t = 0; t < 2000; ++t) {
      std::int64_t const x = row(rng);
      ASSERT_EQ(gemm::sm90::divide_row(static_cast<std::uint32_t>(x), by), x / d) << x << " / " << d;
    }
  }
}

TEST(Conv2dDgradPhases, RowMapOffIsRowTimesLd) {
  EXPECT_EQ(gemm::sm90::mapped_row_offset(gemm::sm90::OutputRowMap{}, 37, 24), 37 * 24);
}

TEST(Conv2dDgradPhases, PhasesStoredThroughTheirRowMapsAreTheDirectDgradExactly) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    Conv2dProblem p;
    p.mode = ConvMode::kDgrad;
    p.N = pick(1, 2), p.C = pick(1, 3), p.K = pick(1, 3);
    p.R = pick(1, 7), p.S = pick(1, 5);
    p.stride_h = pick(1, 4), p.stride_w = pick(1, 4);
    p.pad_h = pick(0, p.R - 1), p.pad_w = pick(0, p.S - 1);
    p.H = pick(p.R, p.R + 9), p.W = pick(p.S, p.S + 9);
    ASSERT_GT(p.P(), 0);
    std::vector<long> dy(p.N * p.P() * p.Q() * p.K), w(p.K * p.R * p.S * p.C);
    for (long& v : dy) v = pick(-4, 4);
    for (long& v : w) v = pick(-4, 4);
    ASSERT_EQ(dgrad_by_phases(p, dy, w), direct_dgrad(p, dy, w))
        << "H " << p.H << " W " << p.W << " R " << p.R << " S " << p.S << " stride " << p.stride_h << "x" << p.stride_w
        << " pad " << p.pad_h << "x" << p.pad_w;
  }
}

ConvPlanInput resnet_dgrad(index_t hw, index_t c, index_t k, index_t rs, index_t stride, DeviceFacts device) {
  ConvPlanInput in;
  Conv2dProblem& p = in.problem;
  p.mode = ConvMode::kDgrad;
  p.N = 64, p.H = hw, p.W = hw, p.C = c, p.K = k, p.R = rs, p.S = rs, p.pad_h = rs / 2, p.pad_w = rs / 2;
  p.stride_h = stride, p.stride_w = stride;
  in.device = device;
  return in;
}

TEST(Conv2dDgradPhases, ResNetStridedDgradsRunByPhasesOnHopper) {
  DgradPhases const three = plan_dgrad_phases(resnet_dgrad(56, 128, 128, 3, 2, {9, 0, 132}), true);
  ASSERT_TRUE(three.use) << three.why;
  EXPECT_EQ(three.phases.size(), 4u);
  EXPECT_EQ(three.phases[3].fprop.R, 2);  // dx's odd rows and columns: taps 2 and 0 each way
  DgradPhases const one = plan_dgrad_phases(resnet_dgrad(56, 256, 512, 1, 2, {9, 0, 132}), true);
  ASSERT_TRUE(one.use) << one.why;
  int with_taps = 0;
  for (DgradPhase const& ph : one.phases) with_taps += !ph.empty();
  EXPECT_EQ(with_taps, 1);  // a 1x1 stride-2 filter reaches the even rows and columns only
  EXPECT_NE(one.why.find("the others zero"), std::string::npos) << one.why;
}

TEST(Conv2dDgradPhases, RefusedWithTheReason) {
  auto why = [](ConvPlanInput const& in, bool bare = true) {
    DgradPhases const d = plan_dgrad_phases(in, bare);
    EXPECT_FALSE(d.use);
    return d.why;
  };
  EXPECT_NE(why(resnet_dgrad(56, 128, 128, 3, 1, {9, 0, 132})).find("not a strided"), std::string::npos);
  EXPECT_NE(why(resnet_dgrad(56, 128, 128, 3, 2, {9, 0, 132}), false).find("epilogue"), std::string::npos);
  EXPECT_NE(why(resnet_dgrad(56, 128, 128, 3, 2, {8, 0, 108})).find("sm_80"), std::string::npos);
  EXPECT_NE(why(resnet_dgrad(56, 128, 12, 3, 2, {9, 0, 132})).find("multiples of 8"), std::string::npos);  // dy's 12
  ConvPlanInput split = resnet_dgrad(56, 128, 128, 3, 2, {9, 0, 132});
  split.split_k = 2;
  EXPECT_NE(why(split).find("split_k = 2"), std::string::npos);
  ConvPlanInput dilated = resnet_dgrad(56, 128, 128, 3, 2, {9, 0, 132});
  dilated.problem.dilation_h = 2;
  EXPECT_NE(why(dilated).find("dilat"), std::string::npos);
}

TEST(Conv2dDgradPhases, ChannelsToPadMakeWholeChunks) {
  Conv2dProblem p;
  p.C = 3, p.K = 64;
  EXPECT_EQ(channels_to_pad(p, ConvElement::kBfloat16), 5);
  p.C = 16;
  EXPECT_EQ(channels_to_pad(p, ConvElement::kBfloat16), 0);
  p.C = 3, p.K = 10;
  EXPECT_EQ(channels_to_pad(p, ConvElement::kFloat16), 0);  // K not whole chunks: padding C would not help
}

}  // namespace
}  // namespace tilefuse::conv
