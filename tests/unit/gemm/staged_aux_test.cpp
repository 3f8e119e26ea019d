// sm90_staged_aux.h, the packed epilogue's staged residual: which trees qualify (one 16-bit row-major
// AuxLoad), and that staged_aux_params finds that node's Params wherever it sits in the tree.
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm90_staged_aux.h>

#include <gtest/gtest.h>

#include <type_traits>

namespace tilefuse::gemm::sm90 {
namespace {

using namespace tilefuse::epilogue;

using ResidualRelu = Relu<Add<Add<Acc, RowBroadcast<"bias", bfloat16_t>>, AuxLoad<"C", bfloat16_t>>>;
using AlphaBetaC = Add<Mul<Scalar<"alpha">, Acc>, Mul<Scalar<"beta">, AuxLoad<"C", half_t>>>;

TEST(StagedAux, QualifiesExactlyOneSixteenBitRowMajorAuxLoad) {
  static_assert(StagedAux<ResidualRelu>::kCount == 1);
  static_assert(std::is_same_v<StagedAux<ResidualRelu>::Type, AuxLoad<"C", bfloat16_t>>);
  static_assert(has_stageable_aux<ResidualRelu>());
  static_assert(has_stageable_aux<AlphaBetaC>());
  static_assert(!has_stageable_aux<Relu<Add<Acc, RowBroadcast<"bias", bfloat16_t>>>>());  // none
  static_assert(!has_stageable_aux<Add<Acc, AuxLoad<"C", float>>>());                      // 32-bit
  static_assert(!has_stageable_aux<Add<Acc, AuxLoad<"C", bfloat16_t, ColumnMajor>>>());    // column-major
  static_assert(StagedAux<Add<AuxLoad<"C", bfloat16_t>, AuxLoad<"E", bfloat16_t>>>::kCount == 2);
  static_assert(!has_stageable_aux<Add<AuxLoad<"C", bfloat16_t>, AuxLoad<"E", bfloat16_t>>>());  // two
  SUCCEED();
}

TEST(StagedAux, FindsTheAuxLoadParamsAtAnyPosition) {
  ResidualRelu::Params relu{};
  // Relu -> Add(Add(acc, bias), C): C is the outer Add's second input.
  auto const& outer = cuda::std::get<0>(relu.children);
  EXPECT_EQ(staged_aux_params<ResidualRelu>(relu), &cuda::std::get<1>(outer.children));

  AlphaBetaC::Params scaled{};
  // Add(Mul(alpha, acc), Mul(beta, C)): C is the second Mul's second input, after an AuxLoad-free subtree.
  auto const& second = cuda::std::get<1>(scaled.children);
  EXPECT_EQ(staged_aux_params<AlphaBetaC>(scaled), &cuda::std::get<1>(second.children));
  EXPECT_NE(staged_aux_params<AlphaBetaC>(scaled), nullptr);
}

}  // namespace
}  // namespace tilefuse::gemm::sm90
