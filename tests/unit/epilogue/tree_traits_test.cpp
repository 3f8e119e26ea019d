// loads_auxiliary: true exactly for trees with an AuxLoad somewhere below the root.
// stores_16bit_from_accumulator: true exactly for one row-major 16-bit Store over a tree that reads
// no memory and stores nothing (the sm90 kernel's packed epilogue takes those).
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

TEST(EpilogueTreeTraits, Stores16BitFromAccumulatorOnlyForMemoryFreeInputs) {
  static_assert(stores_16bit_from_accumulator<Store<"D", bfloat16_t, Acc>>);
  static_assert(stores_16bit_from_accumulator<Store<"D", half_t, Relu<Acc>>>);
  static_assert(stores_16bit_from_accumulator<Store<"D", bfloat16_t, Where<Less<Row, Constant<64.0f>>, Sigmoid<Acc>, Tanh<Acc>>>>);
  // 32-bit or 8-bit D, a column-major D, and inputs that read memory or store take the general path.
  static_assert(!stores_16bit_from_accumulator<Store<"D", float, Acc>>);
  static_assert(!stores_16bit_from_accumulator<Store<"D", bfloat16_t, Acc, ColumnMajor>>);
  static_assert(!stores_16bit_from_accumulator<Store<"D", bfloat16_t, Mul<Acc, Scalar<"alpha">>>>);
  static_assert(!stores_16bit_from_accumulator<Store<"D", bfloat16_t, Add<Acc, RowBroadcast<"bias", float>>>>);
  static_assert(!stores_16bit_from_accumulator<Store<"D", bfloat16_t, Add<Acc, AuxLoad<"C", bfloat16_t>>>>);
  static_assert(!stores_16bit_from_accumulator<Store<"D", bfloat16_t, Store<"aux", bfloat16_t, Acc>>>);
  static_assert(!stores_16bit_from_accumulator<Relu<Store<"D", bfloat16_t, Acc>>>);
  SUCCEED();
}

}  // namespace
}  // namespace tilefuse::epilogue
