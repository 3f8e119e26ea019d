// The stream-K division of the Hopper kernel (gemm/kernel/stream_k.h), walked as the kernel walks it:
// every (tile, k-tile) computed exactly once; at most one stored piece per block (its workspace slot);
// every stored piece added by exactly one block, a higher one, whose walk names exactly the blocks that
// stored pieces of its tile; pieces in descending order; a block's stored piece comes first and the
// piece it adds to comes last. Grids of a few blocks up to 132 SMs, tiles shorter and longer than a range.
#include <array>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include <tilefuse/gemm/kernel/stream_k.h>

namespace tilefuse::gemm::sm90 {
namespace {

void check_division(int tiles, int k_tiles, int blocks) {
  SCOPED_TRACE(testing::Message() << tiles << " tiles x " << k_tiles << " k-tiles on " << blocks << " blocks");
  StreamKDivision const d(tiles, k_tiles, blocks);
  ASSERT_EQ(d.begin(0), 0);
  ASSERT_EQ(d.end(blocks - 1), static_cast<long long>(tiles) * k_tiles);
  std::vector<int> computed(static_cast<std::size_t>(tiles) * k_tiles, 0);
  std::map<int, std::set<int>> stored_by_tile;  // tile -> blocks that stored a piece of it
  std::map<int, int> adder_of_tile;
  std::map<int, std::set<int>> named_by_adder;
  for (int b = 0; b < blocks; ++b) {
    long long const length = d.end(b) - d.begin(b);
    ASSERT_LE(length, static_cast<long long>(tiles) * k_tiles / blocks + 1);
    ASSERT_GE(length, static_cast<long long>(tiles) * k_tiles / blocks);
    StreamKWalk walk(d, b);
    StreamKPiece piece;
    int stores = 0, pieces = 0, last_tile = tiles;
    bool added = false;
    while (walk.next(&piece)) {
      ASSERT_FALSE(added) << "a block adds partials only in its last piece";
      ASSERT_LT(piece.tile, last_tile) << "pieces go in descending tile order";
      last_tile = piece.tile;
      ASSERT_GE(piece.k_begin, 0);
      ASSERT_LT(piece.k_begin, piece.k_end);
      ASSERT_LE(piece.k_end, k_tiles);
      for (int k = piece.k_begin; k < piece.k_end; ++k) ++computed[static_cast<std::size_t>(piece.tile) * k_tiles + k];
      if (d.stores_partial(piece)) {
        ASSERT_EQ(pieces, 0) << "the stored piece is the block's first";
        ++stores;
        stored_by_tile[piece.tile].insert(b);
      } else if (StreamKDivision::adds_partials(piece)) {
        ASSERT_EQ(adder_of_tile.count(piece.tile), 0u);
        adder_of_tile[piece.tile] = b;
        for (int other = b - 1; d.holds_earlier_piece(other, piece.tile); --other) named_by_adder[piece.tile].insert(other);
        added = true;
      }
      ++pieces;
    }
    ASSERT_LE(stores, 1) << "one workspace slot per block";
  }
  for (std::size_t i = 0; i < computed.size(); ++i) ASSERT_EQ(computed[i], 1) << "iteration " << i;
  for (auto const& [tile, stored] : stored_by_tile) {
    ASSERT_EQ(adder_of_tile.count(tile), 1u) << "tile " << tile << " has stored pieces and no block adding them";
    EXPECT_EQ(named_by_adder[tile], stored) << "tile " << tile;
    for (int b : stored) EXPECT_LT(b, adder_of_tile[tile]) << "a block waits only for lower blocks";
  }
  for (auto const& [tile, adder] : adder_of_tile) EXPECT_EQ(stored_by_tile.count(tile), 1u) << "tile " << tile;
}

TEST(StreamK, EveryIterationOnceAndEveryStoredPieceAddedOnce) {
  // ResNet-50's #7 (98 tiles x 36 k-tiles) and #10 (50 x 72) on 132 SMs, UNet's 32x32 C = 1280 layer, tiles
  // longer than two ranges (a tile over three blocks), one tile, more blocks than tiles, exact multiples.
  for (auto [tiles, k_tiles, blocks] : std::vector<std::array<int, 3>>{{98, 36, 132},
                                                                       {50, 72, 132},
                                                                       {320, 180, 132},
                                                                       {3, 100, 132},
                                                                       {1, 7, 5},
                                                                       {5, 1, 4},
                                                                       {264, 16, 132},
                                                                       {7, 13, 3},
                                                                       {1000, 3, 97}}) {
    check_division(tiles, k_tiles, blocks);
  }
}

TEST(StreamK, RandomGrids) {
  for (int tiles = 1; tiles <= 40; tiles += 3) {
    for (int k_tiles = 1; k_tiles <= 40; k_tiles += 5) {
      for (int blocks = 1; blocks <= 60 && blocks <= tiles * k_tiles; blocks += 7) check_division(tiles, k_tiles, blocks);
    }
  }
}

}  // namespace
}  // namespace tilefuse::gemm::sm90
