// The tf32 path beyond D = acc:
//  * fused epilogues that are exact on integer data (float tensors), compared bit for bit;
//  * N(0, 1) inputs in all four layouts, float and tfloat32_t (Inputs::kNormal): D against float64 sums
//    of the tf32-rounded inputs within an fp32-accumulation bound that a kernel skipping the tf32
//    rounding, or dropping a k-tile, exceeds (gemm_harness.hpp: normal_input_bound);
//  * a config whose shared memory exceeds the device's limit is refused by can_implement and run.
#include <string>

#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmTf32Epilogue, Fp32AlphaBetaCRowColLarge, float, RowMajor, ColumnMajor, specs::AlphaBetaC, Sm80Tf32LargeConfig, 800)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmTf32Epilogue, Fp32ResidualReluColRowSmall, float, ColumnMajor, RowMajor, specs::ResidualRelu, Sm80Tf32SmallConfig, 801)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmTf32Epilogue, Fp32BiasColRowRowSmall, float, RowMajor, RowMajor, specs::BiasCol, Sm80Tf32SmallConfig, 802)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmTf32Epilogue, Fp32AuxAmaxColColLarge, float, ColumnMajor, ColumnMajor, specs::AuxAmax, Sm80Tf32LargeConfig, 803)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmTf32Epilogue, Fp32ColumnMajorCRowRowLarge, float, RowMajor, RowMajor, specs::ResidualColumnMajorC, Sm80Tf32LargeConfig, 804)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmTf32Epilogue, Tf32BiasRowReluColRowLarge, tfloat32_t, ColumnMajor, RowMajor, specs::BiasRowRelu, Sm80Tf32LargeConfig, 805)

#define TILEFUSE_GPU_TF32_NORMAL_TEST(Name, T, LA, LB, Config, seed)                                              \
  TEST(GemmTf32Accuracy, Name) {                                                                                  \
    ::tilefuse::gpu_test::run_gemm_cases<T, LA, LB, specs::StoreD, Config>(::tilefuse::gpu_test::tf32_normal_cases(seed)); \
  }

TILEFUSE_GPU_TF32_NORMAL_TEST(Fp32RowColLarge, float, RowMajor, ColumnMajor, Sm80Tf32LargeConfig, 810)
TILEFUSE_GPU_TF32_NORMAL_TEST(Fp32RowRowSmall, float, RowMajor, RowMajor, Sm80Tf32SmallConfig, 811)
TILEFUSE_GPU_TF32_NORMAL_TEST(Fp32ColRowLarge, float, ColumnMajor, RowMajor, Sm80Tf32LargeConfig, 812)
TILEFUSE_GPU_TF32_NORMAL_TEST(Fp32ColColSmall, float, ColumnMajor, ColumnMajor, Sm80Tf32SmallConfig, 813)
TILEFUSE_GPU_TF32_NORMAL_TEST(Tf32RowColSmall, tfloat32_t, RowMajor, ColumnMajor, Sm80Tf32SmallConfig, 814)
TILEFUSE_GPU_TF32_NORMAL_TEST(Tf32ColRowLarge, tfloat32_t, ColumnMajor, RowMajor, Sm80Tf32LargeConfig, 815)

// 128 x 256 x 32 floats in 8 stages: 384 KiB of operands, more than any GPU's block may have.
using HugeConfig = gemm::Sm80TileConfig<128, 256, 32, 2, 4, 8>;
using HugeOp = gemm::Gemm<float, RowMajor, ColumnMajor, specs::StoreD::Tree<float>, HugeConfig>;

TEST(GemmTf32CanImplement, RefusesConfigBeyondSharedMemory) {
  DeviceBuffer a(64 * 64 * sizeof(float));
  DeviceBuffer b(64 * 64 * sizeof(float));
  DeviceBuffer d(64 * 64 * sizeof(float));
  HugeOp::Arguments args;
  args.problem = GemmCoord{64, 64, 64, 1};
  args.a = a.as<float const>();
  args.b = b.as<float const>();
  args.epilogue.set("D", d.as<float>());
  Status const s = HugeOp::can_implement(args);
  ASSERT_FALSE(s.ok()) << "a config needing " << HugeOp::describe(args) << " was accepted";
  EXPECT_NE(s.message().find("shared memory"), std::string::npos) << s.to_string();
  EXPECT_FALSE(HugeOp::run(args, nullptr, nullptr).ok());
  EXPECT_NE(HugeOp::describe(args).find("cannot run"), std::string::npos);

  // The tf32 configs themselves fit (sm_80: 163 KiB per block, sm_90: 227 KiB).
  using LargeOp = gemm::Gemm<float, RowMajor, ColumnMajor, specs::StoreD::Tree<float>>;
  LargeOp::Arguments ok;
  ok.problem = args.problem;
  ok.a = args.a;
  ok.b = args.b;
  ok.epilogue.set("D", d.as<float>());
  EXPECT_TRUE(LargeOp::can_implement(ok).ok()) << LargeOp::can_implement(ok).to_string();
  EXPECT_NE(LargeOp::describe(ok).find("tf32"), std::string::npos) << LargeOp::describe(ok);
}

}  // namespace
}  // namespace tilefuse::gpu_test
