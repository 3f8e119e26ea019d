// The wgrad of few channels as im2col + the Hopper GEMM (conv/device/conv2d_wgrad_im2col.hpp): the plan's
// sizes for ResNet-50's stem and each reason it is refused. The gather's arithmetic is checked against
// torch's wgrad in tests/python/test_conv2d_wgrad_im2col.py.
#include <gtest/gtest.h>

#include <string>

#include <tilefuse/conv/device/conv2d_wgrad_im2col.hpp>

namespace tilefuse::conv {
namespace {

ConvPlanInput stem_wgrad(index_t c, DeviceFacts device) {
  ConvPlanInput in;
  Conv2dProblem& p = in.problem;
  p.mode = ConvMode::kWgrad;
  p.N = 64, p.H = 224, p.W = 224, p.C = c, p.K = 64, p.R = 7, p.S = 7, p.pad_h = 3, p.pad_w = 3;
  p.stride_h = 2, p.stride_w = 2;
  in.device = device;
  return in;
}

TEST(Conv2dWgradIm2col, ResNetStemRunsAsOneHopperGemm) {
  WgradIm2col const plan = plan_wgrad_im2col(stem_wgrad(3, {9, 0, 132}), true, true);
  ASSERT_TRUE(plan.use) << plan.why;
  EXPECT_EQ(plan.columns, 147);
  EXPECT_EQ(plan.padded_columns, 152);
  EXPECT_EQ(plan.padded_k, 64 * 112 * 112);
  EXPECT_EQ(plan.workspace_bytes, (64 + 152) * 64 * 112 * 112 * 2);
  EXPECT_EQ(plan.gemm.family, gemm::GemmFamily::kSm90);
  EXPECT_FALSE(plan.gemm.copy_operands) << plan.gemm.why;  // dyT and colsT are written in the kernel's layouts
  EXPECT_GT(plan.gemm.sm90.split_k, 1) << plan.gemm.why;   // 2 tiles over 802816 pixels: K is split
  EXPECT_NE(plan.why.find("147 columns"), std::string::npos) << plan.why;
}

TEST(Conv2dWgradIm2col, PixelsPaddedToWholeChunks) {
  ConvPlanInput in = stem_wgrad(3, {9, 0, 132});
  in.problem.N = 1, in.problem.H = 17, in.problem.W = 19;  // 9 x 10 = 90 pixels
  WgradIm2col const plan = plan_wgrad_im2col(in, true, true);
  ASSERT_TRUE(plan.use) << plan.why;
  EXPECT_EQ(plan.padded_k, 96);
}

TEST(Conv2dWgradIm2col, RefusedWithTheReason) {
  auto why = [](ConvPlanInput const& in, bool bare = true, bool gathers = true) {
    WgradIm2col const d = plan_wgrad_im2col(in, bare, gathers);
    EXPECT_FALSE(d.use);
    return d.why;
  };
  ConvPlanInput fprop = stem_wgrad(3, {9, 0, 132});
  fprop.problem.mode = ConvMode::kFprop;
  EXPECT_NE(why(fprop).find("not a wgrad"), std::string::npos);
  EXPECT_NE(why(stem_wgrad(3, {9, 0, 132}), false).find("epilogue"), std::string::npos);
  EXPECT_NE(why(stem_wgrad(3, {9, 0, 132}), true, false).find("gather"), std::string::npos);
  EXPECT_NE(why(stem_wgrad(3, {8, 0, 108})).find("sm80 kernel"), std::string::npos);
  EXPECT_NE(why(stem_wgrad(64, {9, 0, 132})).find("Hopper wgrad takes it"), std::string::npos);
  EXPECT_NE(why(stem_wgrad(16, {9, 0, 132})).find("not below a 16-byte chunk"), std::string::npos);
  EXPECT_NE(why(stem_wgrad(12, {9, 0, 132})).find("not below a 16-byte chunk"), std::string::npos);
  ConvPlanInput huge = stem_wgrad(3, {9, 0, 132});
  huge.problem.N = 512;  // (64 + 152) x 512 x 112 x 112 x 2 bytes: 2.6 GiB of scratch
  EXPECT_NE(why(huge).find("split the batch"), std::string::npos);
  ConvPlanInput fp32 = stem_wgrad(3, {9, 0, 132});
  fp32.element = ConvElement::kFloat32;
  EXPECT_NE(why(fp32).find("bf16 or fp16"), std::string::npos);
}

}  // namespace
}  // namespace tilefuse::conv
