// When the Hopper GEMM's packed epilogue may copy D out by TMA stores (gemm/device/sm90_operand_map.hpp,
// d_storable_by_tma): only where a store writes exactly D. Report v87's GPU tests found the n % 8 rule:
// a TMA store writes the 16-byte piece holding a row's last column whole, past n into the padding.
#include <tilefuse/gemm/device/sm90_operand_map.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace tilefuse::gemm {
namespace {

void const* address(std::uintptr_t offset) { return reinterpret_cast<void const*>(std::uintptr_t{1} << 20 | offset); }

TEST(Sm90StoreByTma, AlignedDWithWholePiecesIsStored) {
  EXPECT_TRUE(d_storable_by_tma(address(0), 64, 64, 1, 0));
  EXPECT_TRUE(d_storable_by_tma(address(16), 256, 272, 3, 272 * 129));
}

TEST(Sm90StoreByTma, ARowEndingInsideA16BytePieceIsNot) {
  for (index_t n : {1, 7, 65, 257, 2049}) EXPECT_FALSE(d_storable_by_tma(address(0), n, 272, 1, 0)) << "n " << n;
}

TEST(Sm90StoreByTma, UnalignedBaseOrStridesAreNot) {
  EXPECT_FALSE(d_storable_by_tma(address(2), 64, 64, 1, 0));
  EXPECT_FALSE(d_storable_by_tma(address(0), 64, 65, 1, 0));
  EXPECT_FALSE(d_storable_by_tma(address(0), 64, 64, 2, 64 * 64 + 3));
}

// A batch sharing one D (batch stride 0) has no per-entry matrix for the map's batch dimension.
TEST(Sm90StoreByTma, ASharedOutputAcrossTheBatchIsNot) {
  EXPECT_FALSE(d_storable_by_tma(address(0), 64, 64, 4, 0));
  EXPECT_TRUE(d_storable_by_tma(address(0), 64, 64, 1, 0));
}

}  // namespace
}  // namespace tilefuse::gemm
