// Array, coordinates, strided tensor views and Status.
#include <gtest/gtest.h>

#include <vector>

#include <tilefuse/core/array.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>

namespace tilefuse {
namespace {

TEST(Array, IsAlignedForVectorAccess) {
  static_assert(alignof(Array<half_t, 8>) == 16);
  static_assert(alignof(Array<float, 2>) == 8);
  static_assert(alignof(Array<float, 3>) == 4);
  static_assert(alignof(Array<double, 4>) == 16);
  static_assert(sizeof(Array<half_t, 8>) == 16);
  auto a = Array<int, 5>::filled(7);
  a[4] = 9;
  EXPECT_EQ(a.size(), 5);
  EXPECT_EQ(a[0] + a[4], 16);
}

TEST(MatrixRef, MapsCoordinatesForBothLayouts) {
  std::vector<int> storage(2 * 3 * 4);
  auto row = MatrixRef<int, RowMajor>::packed(storage.data(), 3, 4);
  EXPECT_EQ(row.ld, 4);
  EXPECT_EQ(row.offset(2, 1), 9);
  EXPECT_EQ(row.offset(2, 1, 1), 21);
  auto col = MatrixRef<int, ColumnMajor>::packed(storage.data(), 3, 4);
  EXPECT_EQ(col.ld, 3);
  EXPECT_EQ(col.offset(2, 1), 5);
  MatrixRef<int, ColumnMajor> padded{storage.data(), 3, 4, 5, 20};
  EXPECT_EQ(padded.offset(1, 2, 1), 20 + 2 * 5 + 1);
  padded.at(1, 2, 0) = 42;
  EXPECT_EQ(storage[11], 42);
}

TEST(Tensor4DRef, NhwcAndKrscAreInnermostContiguous) {
  std::vector<float> storage(2 * 3 * 4 * 5);
  auto x = TensorNHWC<float>::packed(storage.data(), Coord4D{2, 3, 4, 5});
  EXPECT_EQ(x.stride2, 5);
  EXPECT_EQ(x.stride1, 20);
  EXPECT_EQ(x.stride0, 60);
  EXPECT_EQ(x.element_count(), 120);
  EXPECT_EQ(x.offset({1, 2, 3, 4}), 119);
  x.at(1, 0, 1, 2) = 3.5f;
  EXPECT_EQ(storage[60 + 5 + 2], 3.5f);
}

TEST(Status, CarriesASentence) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.to_string(), "success");
  Status bad = invalid_argument("lda = ", 7, " is smaller than K = ", 8, ": pass lda >= K");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "lda = 7 is smaller than K = 8: pass lda >= K");
  EXPECT_EQ(bad.to_string(), "invalid argument: lda = 7 is smaller than K = 8: pass lda >= K");
  auto forwards = [&]() -> Status {
    TILEFUSE_RETURN_IF_ERROR(bad);
    return {};
  };
  EXPECT_EQ(forwards().message(), bad.message());
}

}  // namespace
}  // namespace tilefuse
