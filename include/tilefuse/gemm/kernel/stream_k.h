// Stream-K division of the persistent Hopper kernel's work (sm90_gemm.h, Config::kStreamK): the
// tiles x k-tiles iterations of the problem, in order (tile-major), are cut into one contiguous range
// per block of the grid, as equal as whole k-tiles allow. A tile whose k-tiles fall in two or more
// ranges is computed in pieces: every piece but the one that ends the tile stores its fp32 partial
// sums in the workspace (a slot per block: a range can end inside a tile only once), and the block
// holding the tile's last k-tiles adds them and runs the epilogue.
//
// Each block walks its range backwards, tile by tile (the k-tiles inside a piece stay in order): the
// piece it may store comes first, the piece it may finish comes last. So the pieces a block waits for
// belong to blocks with lower indices, which stored them at their start: no wait in the usual case, and
// no block waits for one that may not have started (blocks start in index order).
// Host-and-device: tests/unit checks the division (every iteration once, one stored piece per block).
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

// One tile's k-tiles [k_begin, k_end) within one block's range.
struct StreamKPiece {
  int tile = 0;
  int k_begin = 0;
  int k_end = 0;
};

struct StreamKDivision {
  long long total = 0;  // tiles x k_tiles
  int blocks = 1;
  int k_tiles = 1;

  TILEFUSE_HOST_DEVICE StreamKDivision(int tiles, int k_tiles_, int blocks_)
      : total(static_cast<long long>(tiles) * k_tiles_), blocks(blocks_), k_tiles(k_tiles_) {}

  // Block b's range starts at b * q + min(b, r) for total = q * blocks + r: the first r ranges are one
  // iteration longer.
  TILEFUSE_HOST_DEVICE long long begin(int block) const {
    long long const q = total / blocks;
    long long const r = total % blocks;
    return block * q + (block < r ? block : r);
  }
  TILEFUSE_HOST_DEVICE long long end(int block) const { return begin(block + 1); }

  // The piece that stores a partial (ends before its tile does), and the one that adds the partials of
  // the tile's earlier pieces (ends the tile, starts after its first k-tile).
  TILEFUSE_HOST_DEVICE bool stores_partial(StreamKPiece const& piece) const { return piece.k_end < k_tiles; }
  TILEFUSE_HOST_DEVICE static bool adds_partials(StreamKPiece const& piece) { return piece.k_begin > 0; }
  // Whether block `other` (below the adding block) holds one of the earlier pieces of `tile`: its range
  // ends inside the tile. Walk other = block - 1, block - 2, ... while this holds.
  TILEFUSE_HOST_DEVICE bool holds_earlier_piece(int other, int tile) const {
    return other >= 0 && end(other) > static_cast<long long>(tile) * k_tiles;
  }
};

// A block's pieces, last first (see above): while (walk.next(&piece)) { ... }.
struct StreamKWalk {
  long long position;  // one past the next piece's last iteration
  long long stop;      // the range's first iteration
  int k_tiles;

  TILEFUSE_HOST_DEVICE StreamKWalk(StreamKDivision const& d, int block)
      : position(d.end(block)), stop(d.begin(block)), k_tiles(d.k_tiles) {}

  TILEFUSE_HOST_DEVICE bool next(StreamKPiece* piece) {
    if (position <= stop) return false;
    long long const tile = (position - 1) / k_tiles;
    long long const first = tile * k_tiles;
    long long const from = first > stop ? first : stop;
    piece->tile = static_cast<int>(tile);
    piece->k_begin = static_cast<int>(from - first);
    piece->k_end = static_cast<int>(position - first);
    position = from;
    return true;
  }
};

}  // namespace tilefuse::gemm::sm90
