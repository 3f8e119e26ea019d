// Tests of Conv2dProblem: output sizes of known layers, tensor and implicit-GEMM extents per mode,
// and check()'s messages for each invalid field.
#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/conv2d_problem_check.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace tilefuse {
namespace {

constexpr Conv2dProblem resnet50_conv1() {
  Conv2dProblem p;
  p.N = 8;
  p.H = p.W = 224;
  p.C = 3;
  p.K = 64;
  p.R = p.S = 7;
  p.pad_h = p.pad_w = 3;
  p.stride_h = p.stride_w = 2;
  return p;
}

// P() and Q() are usable in constant expressions (tile shapes are chosen at compile time).
static_assert(resnet50_conv1().P() == 112 && resnet50_conv1().Q() == 112);

Conv2dProblem square(index_t hw, index_t rs, index_t pad, index_t stride, index_t dilation = 1) {
  Conv2dProblem p;
  p.N = 1;
  p.H = p.W = hw;
  p.C = p.K = 16;
  p.R = p.S = rs;
  p.pad_h = p.pad_w = pad;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

TEST(Conv2dProblem, OutputSizesOfKnownShapes) {
  EXPECT_EQ(resnet50_conv1().P(), 112);
  EXPECT_EQ(resnet50_conv1().Q(), 112);
  EXPECT_EQ(square(56, 3, 1, 1).P(), 56);       // ResNet 3x3 "same"
  EXPECT_EQ(square(56, 1, 0, 2).P(), 28);       // ResNet 1x1 downsample
  EXPECT_EQ(square(56, 3, 1, 2).P(), 28);       // ResNet-50 v1.5 3x3 stride 2
  EXPECT_EQ(square(32, 3, 2, 1, 2).P(), 32);    // dilated "same": 2 * pad == dilation * (R - 1)
  EXPECT_EQ(square(7, 3, 0, 2).P(), 3);         // (7 - 3) / 2 + 1
  EXPECT_EQ(square(8, 3, 0, 2).P(), 3);         // the last row is dropped: floor((8 - 3) / 2) + 1
  EXPECT_EQ(square(5, 5, 0, 1).P(), 1);         // the filter fits exactly once
  EXPECT_EQ(square(5, 5, 1, 1, 2).P(), 0);      // covers 9 rows of 7: the plain formula's -1 becomes 0
  EXPECT_EQ(square(2, 3, 0, 2).P(), 0);         // covers 3 rows of 2; truncating (-1) / 2 + 1 would say 1

  Conv2dProblem p = square(10, 3, 0, 1);
  p.W = 20;
  p.S = 5;
  p.pad_w = 2;
  p.stride_w = 3;
  EXPECT_EQ(p.P(), 8);
  EXPECT_EQ(p.Q(), 7);  // (20 + 4 - 5) / 3 + 1
}

TEST(Conv2dProblem, TensorExtents) {
  Conv2dProblem p = resnet50_conv1();
  EXPECT_EQ(p.activation_extent(), (Coord4D{8, 224, 224, 3}));
  EXPECT_EQ(p.filter_extent(), (Coord4D{64, 7, 7, 3}));
  EXPECT_EQ(p.output_extent(), (Coord4D{8, 112, 112, 64}));

  p.C = 32;
  p.groups = 4;
  EXPECT_EQ(p.filter_extent(), (Coord4D{64, 7, 7, 8}));  // each filter sees C / groups channels
  EXPECT_EQ(p.channels_per_group(), 8);
  EXPECT_EQ(p.filters_per_group(), 16);
}

TEST(Conv2dProblem, GemmExtentPerMode) {
  Conv2dProblem p = resnet50_conv1();
  index_t const npq = 8 * 112 * 112;
  EXPECT_EQ(p.gemm_extent(ConvMode::kFprop), (GemmCoord{npq, 64, 7 * 7 * 3, 1}));
  EXPECT_EQ(p.gemm_extent(ConvMode::kDgrad), (GemmCoord{8 * 224 * 224, 3, 7 * 7 * 64, 1}));
  EXPECT_EQ(p.gemm_extent(ConvMode::kWgrad), (GemmCoord{64, 7 * 7 * 3, npq, 1}));
  // gemm_extent() follows the mode field.
  EXPECT_EQ(p.gemm_extent(), p.gemm_extent(ConvMode::kFprop));
  p.mode = ConvMode::kDgrad;
  EXPECT_EQ(p.gemm_extent(), p.gemm_extent(ConvMode::kDgrad));
  p.mode = ConvMode::kWgrad;
  EXPECT_EQ(p.gemm_extent(), p.gemm_extent(ConvMode::kWgrad));

  // Grouped: one GEMM per group (batch = groups) over C / groups channels and K / groups filters.
  Conv2dProblem g = square(14, 3, 1, 1);
  g.N = 2;
  g.C = 32;
  g.K = 64;
  g.groups = 4;
  EXPECT_EQ(g.gemm_extent(ConvMode::kFprop), (GemmCoord{2 * 14 * 14, 16, 3 * 3 * 8, 4}));
  EXPECT_EQ(g.gemm_extent(ConvMode::kDgrad), (GemmCoord{2 * 14 * 14, 8, 3 * 3 * 16, 4}));
  EXPECT_EQ(g.gemm_extent(ConvMode::kWgrad), (GemmCoord{16, 3 * 3 * 8, 2 * 14 * 14, 4}));
}

TEST(Conv2dProblem, CheckAcceptsValidProblems) {
  for (Conv2dProblem const& p : {resnet50_conv1(), square(56, 3, 1, 1), square(5, 5, 0, 1), square(32, 3, 2, 1, 2)}) {
    Status const st = check(p);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  Conv2dProblem depthwise = square(14, 3, 1, 1);
  depthwise.groups = 16;
  EXPECT_TRUE(check(depthwise).ok());
}

struct BadField {
  std::string needle;  // what the message must contain: the field and its value
  std::function<void(Conv2dProblem&)> spoil;
};

TEST(Conv2dProblem, CheckNamesEachBadField) {
  std::vector<BadField> const cases = {
      {"N = 0", [](Conv2dProblem& p) { p.N = 0; }},
      {"H = -2", [](Conv2dProblem& p) { p.H = -2; }},
      {"W = 0", [](Conv2dProblem& p) { p.W = 0; }},
      {"C = 0", [](Conv2dProblem& p) { p.C = 0; }},
      {"K = 0", [](Conv2dProblem& p) { p.K = 0; }},
      {"R = 0", [](Conv2dProblem& p) { p.R = 0; }},
      {"S = -1", [](Conv2dProblem& p) { p.S = -1; }},
      {"pad_h = -1", [](Conv2dProblem& p) { p.pad_h = -1; }},
      {"pad_w = -3", [](Conv2dProblem& p) { p.pad_w = -3; }},
      {"stride_h = 0", [](Conv2dProblem& p) { p.stride_h = 0; }},
      {"stride_w = -1", [](Conv2dProblem& p) { p.stride_w = -1; }},
      {"dilation_h = 0", [](Conv2dProblem& p) { p.dilation_h = 0; }},
      {"dilation_w = 0", [](Conv2dProblem& p) { p.dilation_w = 0; }},
      {"groups = 0", [](Conv2dProblem& p) { p.groups = 0; }},
      {"C = 16 is not divisible by groups = 3", [](Conv2dProblem& p) { p.groups = 3; p.K = 18; }},
      {"K = 20 is not divisible by groups = 8", [](Conv2dProblem& p) { p.groups = 8; p.K = 20; }},
      {"mode = 7", [](Conv2dProblem& p) { p.mode = static_cast<ConvMode>(7); }},
  };
  for (BadField const& bad : cases) {
    Conv2dProblem p = square(12, 3, 1, 1);
    ASSERT_TRUE(check(p).ok());
    bad.spoil(p);
    Status const st = check(p);
    EXPECT_FALSE(st.ok()) << "accepted a problem with " << bad.needle;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(bad.needle), std::string::npos)
        << "message does not name '" << bad.needle << "': " << st.message();
  }
}

TEST(Conv2dProblem, CheckExplainsAFilterThatDoesNotFit) {
  // R = 5 with dilation 2 covers 9 rows; H = 5 with pad_h = 1 gives 7.
  Conv2dProblem p = square(12, 3, 1, 1);
  p.H = 5;
  p.R = 5;
  p.dilation_h = 2;
  ASSERT_EQ(p.P(), 0);
  Status st = check(p);
  ASSERT_FALSE(st.ok());
  for (char const* needle : {"R = 5", "dilation_h = 2", "covers 9 rows", "has only 7", "H + 2 * pad_h = 5 + 2 * 1",
                             "increase pad_h"}) {
    EXPECT_NE(st.message().find(needle), std::string::npos) << "missing '" << needle << "': " << st.message();
  }

  // The same along the width names the width's fields.
  Conv2dProblem q = square(12, 3, 0, 1);
  q.W = 2;
  st = check(q);
  ASSERT_FALSE(st.ok());
  for (char const* needle : {"S = 3", "covers 3 columns", "has only 2", "W + 2 * pad_w = 2 + 2 * 0", "increase pad_w"}) {
    EXPECT_NE(st.message().find(needle), std::string::npos) << "missing '" << needle << "': " << st.message();
  }
}

TEST(Conv2dProblem, UnsetExtentsAreReported) {
  // A default problem leaves every extent at 0, so a forgotten field is an error, not a silent 1.
  Conv2dProblem p;
  EXPECT_EQ(p.groups, 1);
  EXPECT_EQ(p.stride_h, 1);
  EXPECT_EQ(p.dilation_w, 1);
  EXPECT_EQ(p.mode, ConvMode::kFprop);
  Status const st = check(p);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("N = 0"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tilefuse
