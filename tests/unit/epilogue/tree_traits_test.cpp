// loads_auxiliary: true exactly for trees with an AuxLoad somewhere below the root.
// stores_16bit_of_elementwise: true exactly for one row-major 16-bit Store over a tree without sinks
// (the sm90 kernel's packed epilogue takes those); kLoadsPerElement tells apart those whose
// loads depend on the element (the packed epilogue takes the others).
#include <gtest/gtest.h>

#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/tree_traits.h>

namespace tilefuse::epilogue {
namespace {

TEST(EpilogueTreeTraits, LoadsAuxiliaryFindsAuxLoadAtAnyDepth) {
  static_assert(!loads_auxiliary<Store<"D", float, Acc>>);
  static_assert(!loads_auxiliary<Store<"D", float, Relu<Add<Acc, RowBroadcast<"bias", float>>>>>);
  static_assert(loads_auxiliary<Store<"D", float, Add<Acc, AuxLoad<"C", float>>>>);
  static_assert(loads_auxiliary<Store<"D", float, Where<Less<Row, Scalar<"r0">>, Acc, Relu<Add<Acc, AuxLoad<"C", float>>>>>>);
  SUCCEED();
}

TEST(EpilogueTreeTraits, Stores16BitOfElementwiseOnlyForSinkFreeInputs) {
  static_assert(stores_16bit_of_elementwise<Store<"D", bfloat16_t, Acc>>);
  static_assert(stores_16bit_of_elementwise<Store<"D", half_t, Relu<Acc>>>);
  static_assert(stores_16bit_of_elementwise<Store<"D", bfloat16_t, Where<Less<Row, Constant<64.0f>>, Sigmoid<Acc>, Tanh<Acc>>>>);
  static_assert(stores_16bit_of_elementwise<Store<"D", bfloat16_t, Mul<Acc, Scalar<"alpha">>>>);
  static_assert(stores_16bit_of_elementwise<Store<"D", bfloat16_t, Relu<Add<Add<Acc, RowBroadcast<"bias", float>>, AuxLoad<"C", bfloat16_t>>>>>);
  static_assert(!Stores16BitOfElementwise<Store<"D", bfloat16_t, Where<Less<Row, Constant<64.0f>>, Acc, Relu<Acc>>>>::kLoadsPerElement);
  static_assert(!Stores16BitOfElementwise<Store<"D", bfloat16_t, Mul<Acc, Scalar<"alpha">>>>::kLoadsPerElement);
  static_assert(Stores16BitOfElementwise<Store<"D", bfloat16_t, Add<Acc, ColBroadcast<"bias", float>>>>::kLoadsPerElement);
  static_assert(Stores16BitOfElementwise<Store<"D", bfloat16_t, Add<Acc, AuxLoad<"C", bfloat16_t>>>>::kLoadsPerElement);
  // 32-bit or 8-bit D, a column-major D, and trees with a sink below the root take the general path.
  static_assert(!stores_16bit_of_elementwise<Store<"D", float, Acc>>);
  static_assert(!stores_16bit_of_elementwise<Store<"D", bfloat16_t, Acc, ColumnMajor>>);
  static_assert(!stores_16bit_of_elementwise<Store<"D", bfloat16_t, Store<"aux", bfloat16_t, Acc>>>);
  static_assert(!stores_16bit_of_elementwise<Store<"D", bfloat16_t, Relu<ColReduce<"amax", reduce::AbsMax, Acc>>>>);
  static_assert(!stores_16bit_of_elementwise<Relu<Store<"D", bfloat16_t, Acc>>>);
  SUCCEED();
}

}  // namespace
}  // namespace tilefuse::epilogue
