// Operand tiles in shared memory for the sm_80 GEMM: the XOR-swizzled layout that keeps ldmatrix and
// cp.async free of bank conflicts, the global -> shared copy (16-byte cp.async, or element by element
// for unaligned operands), and the ldmatrix fragment loads for A and B in either layout.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/ldmatrix.h>
#include <tilefuse/core/array.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/tensor_ref.h>

namespace tilefuse::gemm::sm80 {

// Rows x Cols 16-bit elements, row by row, in 16-byte chunks (8 elements). Chunk c of row r is stored
// at chunk c ^ phase(r), where phase cycles once per 128-byte line: the 8 rows one ldmatrix reads at the
// same column then fall into 8 different bank groups.
template <int Rows, int Cols>
struct SwizzledTile {
  static constexpr int kRows = Rows;
  static constexpr int kCols = Cols;
  static constexpr int kChunksPerRow = Cols / 8;
  static constexpr int kRowsPerLine = kChunksPerRow >= 8 ? 1 : 8 / kChunksPerRow;
  static constexpr int kPhases = kChunksPerRow >= 8 ? 8 : kChunksPerRow;
  static constexpr int kElements = Rows * Cols;
  static_assert(Cols % 8 == 0 && Cols >= 16, "tile rows are whole 16-byte chunks, at least two");

  // Rows whose phase pattern repeats: moving a row index by a multiple of this keeps its phase.
  static constexpr int kPhasePeriod = kRowsPerLine * kPhases;

  TILEFUSE_HOST_DEVICE static constexpr int phase(int row) { return (row / kRowsPerLine) % kPhases; }

  // Element offset of (row, col); col may point anywhere inside its chunk.
  TILEFUSE_HOST_DEVICE static constexpr int offset(int row, int col) {
    return row * Cols + (((col / 8) ^ phase(row)) * 8) + (col % 8);
  }

  // The lane-dependent part of an ldmatrix address (row r0 + row, chunk c0/8 + chunk), computed once per
  // thread: with r0 a multiple of kPhasePeriod and c0 a multiple of 16 columns, the swizzled chunk is
  // (c0 / 8) ^ chunk_xor, so each ldmatrix costs one XOR instead of the whole swizzle.
  struct LaneAddress {
    int row_offset;  // row * Cols
    int chunk_xor;   // chunk ^ phase(row), chunk in {0, 1}
  };
  TILEFUSE_HOST_DEVICE static constexpr LaneAddress lane_address(int row, int chunk) {
    return {row * Cols, chunk ^ phase(row)};
  }
  TILEFUSE_HOST_DEVICE static constexpr int offset(LaneAddress lane, int r0, int c0) {
    return r0 * Cols + lane.row_offset + (((c0 / 8) ^ lane.chunk_xor) * 8);
  }
};

// One operand (A or B) of one threadblock tile. The tile is stored as it lies in global memory: rows
// along the strided dimension, columns along the contiguous one. A row-major / B column-major are
// "K-contiguous" (rows = m or n, columns = k); the other layouts are "MN-contiguous" (rows = k).
template <class Element, class Layout, bool kIsA_, int TileMN, int TileK, int Threads>
struct OperandTile {
  using ElementType = Element;
  static constexpr bool kIsA = kIsA_;
  static constexpr int kTileMN = TileMN;
  static constexpr int kTileK = TileK;
  static constexpr bool kKContiguous =
      kIsA_ ? cuda::std::is_same_v<Layout, RowMajor> : cuda::std::is_same_v<Layout, ColumnMajor>;
  using Tile = SwizzledTile<kKContiguous ? TileMN : TileK, kKContiguous ? TileK : TileMN>;
  static constexpr int kChunks = Tile::kElements / 8;
  static_assert(kChunks % Threads == 0, "every thread copies the same number of chunks");
  static constexpr int kChunksPerThread = kChunks / Threads;

  // Copies one k-tile. `base` points at global element (row 0, col 0) of the tile; rows_left and
  // cols_left say how many rows and columns exist from there (<= 0: none). Missing elements are zero,
  // which the mma then multiplies harmlessly. kAligned: 16-byte cp.async for whole chunks; otherwise
  // (and for chunks cut by the edge) element-wise loads and a 16-byte shared store.
  // Thread t copies chunks t, t + Threads, ...: the same column, rows kRowStep apart. kRowStep is a
  // multiple of the swizzle period, so those chunks share one swizzled column and every address
  // advances by a constant.
  static constexpr int kRowStep = Threads / Tile::kChunksPerRow;
  static_assert(Threads % Tile::kChunksPerRow == 0 && kRowStep % Tile::kPhasePeriod == 0,
                "a thread's chunks must keep one swizzled column");

  // The k-tile lies wholly inside an aligned operand: every chunk is one unpredicated cp.async.
  // NOTES: kept apart from load() so the hot loop carries none of the edge handling (a few
  // instructions per chunk instead of a few dozen).
  TILEFUSE_DEVICE static void load_interior(Element* smem, Element const* base, index_t ld, int thread) {
    int const row0 = thread / Tile::kChunksPerRow;
    int const col = (thread % Tile::kChunksPerRow) * 8;
    Element* dst = smem + Tile::offset(row0, col);
    Element const* src = base + row0 * ld + col;
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      arch::cp_async_16(dst + i * kRowStep * Tile::kCols, src + i * kRowStep * ld, 16);
    }
  }

  template <bool kAligned>
  TILEFUSE_DEVICE static void load(Element* smem, Element const* base, index_t ld, index_t rows_left,
                                   index_t cols_left, int thread) {
    int const row0 = thread / Tile::kChunksPerRow;
    int const col = (thread % Tile::kChunksPerRow) * 8;
    Element* dst = smem + Tile::offset(row0, col);
    Element const* src = base + row0 * ld + col;
    index_t const cols_here = cols_left - col;
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      bool const row_ok = row0 + i * kRowStep < rows_left;
      bool const whole = row_ok && cols_here >= 8;
      bool const none = !row_ok || cols_here <= 0;
      Element* chunk_dst = dst + i * kRowStep * Tile::kCols;
      Element const* chunk_src = src + i * kRowStep * ld;
      if (kAligned && (whole || none)) {
        // The chunk's source is 16-byte aligned (the device API checked pointer and ld): one cp.async
        // copies it, or zero-fills it without reading when it lies outside the operand.
        // NOTES: a chunk cut by the edge goes element by element below: cp.async's src-size would
        // read only the in-bounds prefix, but compute-sanitizer counts the whole 16 bytes.
        arch::cp_async_16(chunk_dst, whole ? chunk_src : base, whole ? 16 : 0);
      } else {
        Array<Element, 8> v;
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = row_ok && e < cols_here ? chunk_src[e] : Element(0.0f);
        *reinterpret_cast<Array<Element, 8>*>(chunk_dst) = v;
      }
    }
  }

  // Where the k-tile `k_tile` of this threadblock starts, and how much of it exists.
  TILEFUSE_DEVICE static Element const* k_tile_base(Element const* operand, index_t ld, index_t mn0, index_t k0) {
    return kKContiguous ? operand + mn0 * ld + k0 : operand + k0 * ld + mn0;
  }
  TILEFUSE_DEVICE static index_t rows_left(index_t mn_left, index_t k_left) { return kKContiguous ? mn_left : k_left; }
  TILEFUSE_DEVICE static index_t cols_left(index_t mn_left, index_t k_left) { return kKContiguous ? k_left : mn_left; }
};

// ldmatrix fragment loads (see arch/mma_sm80.h for the fragment layouts). Lane i addresses row i % 8 of
// 8x8 tile i / 8; which row and column block that is depends on the operand's layout. LaneAddresses
// holds the per-lane part, computed once per thread.
template <class Operand>
struct FragmentLanes {
  using Tile = typename Operand::Tile;
  typename Tile::LaneAddress lane;

  TILEFUSE_DEVICE explicit FragmentLanes(int lane_id) {
    int const tile = lane_id / 8;
    int const r = lane_id % 8;
    // A: tiles (m, k) = (0,0) (8,0) (0,8) (8,8); B: (n, k) = (0,0) (0,8) (8,0) (8,8).
    int const mn_block = Operand::kIsA ? tile % 2 : tile / 2;
    int const k_block = Operand::kIsA ? tile / 2 : tile % 2;
    lane = Operand::kKContiguous ? Tile::lane_address(r + 8 * mn_block, k_block)   // rows mn, columns k
                                 : Tile::lane_address(r + 8 * k_block, mn_block);  // rows k, columns mn
  }

  // Address of the fragment whose (mn, k) corner is (mn0, k0); both multiples of 16.
  TILEFUSE_DEVICE typename Operand::ElementType const* at(typename Operand::ElementType const* smem, int mn0, int k0) const {
    return smem + (Operand::kKContiguous ? Tile::offset(lane, mn0, k0) : Tile::offset(lane, k0, mn0));
  }
};

// A: the 16 x 16 fragment at (m0, k0).
template <class Operand>
TILEFUSE_DEVICE inline void load_a_fragment(cuda::std::uint32_t (&a)[4], FragmentLanes<Operand> const& lanes,
                                            typename Operand::ElementType const* smem, int m0, int k0) {
  if constexpr (Operand::kKContiguous) {
    arch::ldmatrix_x4(a, lanes.at(smem, m0, k0));
  } else {
    arch::ldmatrix_x4_trans(a, lanes.at(smem, m0, k0));
  }
}

// B: two 16 x 8 fragments, columns n0..n0+7 (b[0..1]) and n0+8..n0+15 (b[2..3]), at k0.
template <class Operand>
TILEFUSE_DEVICE inline void load_b_fragments(cuda::std::uint32_t (&b)[4], FragmentLanes<Operand> const& lanes,
                                             typename Operand::ElementType const* smem, int n0, int k0) {
  if constexpr (Operand::kKContiguous) {
    arch::ldmatrix_x4(b, lanes.at(smem, n0, k0));
  } else {
    arch::ldmatrix_x4_trans(b, lanes.at(smem, n0, k0));
  }
}

}  // namespace tilefuse::gemm::sm80
