// loads_auxiliary: true exactly for trees with an AuxLoad somewhere below the root.
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

}  // namespace
}  // namespace tilefuse::epilogue
