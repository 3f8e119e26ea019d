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

  // Element offset of (row, col); col may point anywhere inside its chunk.
  TILEFUSE_HOST_DEVICE static constexpr int offset(int row, int col) {
    int const phase = (row / kRowsPerLine) % kPhases;
    return row * Cols + (((col / 8) ^ phase) * 8) + (col % 8);
  }
};

// One operand (A or B) of one threadblock tile. The tile is stored as it lies in global memory: rows
// along the strided dimension, columns along the contiguous one. A row-major / B column-major are
// "K-contiguous" (rows = m or n, columns = k); the other layouts are "MN-contiguous" (rows = k).
template <class Element, class Layout, bool kIsA, int TileMN, int TileK, int Threads>
struct OperandTile {
  static constexpr bool kKContiguous =
      kIsA ? cuda::std::is_same_v<Layout, RowMajor> : cuda::std::is_same_v<Layout, ColumnMajor>;
  using Tile = SwizzledTile<kKContiguous ? TileMN : TileK, kKContiguous ? TileK : TileMN>;
  static constexpr int kChunks = Tile::kElements / 8;
  static_assert(kChunks % Threads == 0, "every thread copies the same number of chunks");
  static constexpr int kChunksPerThread = kChunks / Threads;

  // Copies one k-tile. `base` points at global element (row 0, col 0) of the tile; rows_left and
  // cols_left say how many rows and columns exist from there (<= 0: none). Missing elements are zero,
  // which the mma then multiplies harmlessly. kAligned: 16-byte cp.async for whole chunks; otherwise
  // (and for chunks cut by the edge) element-wise loads and a 16-byte shared store.
  template <bool kAligned>
  TILEFUSE_DEVICE static void load(Element* smem, Element const* base, index_t ld, index_t rows_left,
                                   index_t cols_left, int thread) {
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      int const chunk = thread + i * Threads;
      int const row = chunk / Tile::kChunksPerRow;
      int const col = (chunk % Tile::kChunksPerRow) * 8;
      Element* dst = smem + Tile::offset(row, col);
      index_t const cols_here = cols_left - col;
      bool const row_ok = row < rows_left;
      bool const whole = row_ok && cols_here >= 8;
      bool const none = !row_ok || cols_here <= 0;
      if (kAligned && (whole || none)) {
        // The chunk's source is 16-byte aligned (the device API checked pointer and ld): one cp.async
        // copies it, or zero-fills it without reading when it lies outside the operand.
        // NOTES: a chunk cut by the edge goes element by element below: cp.async's src-size would
        // read only the in-bounds prefix, but compute-sanitizer counts the whole 16 bytes.
        arch::cp_async_16(dst, whole ? base + row * ld + col : base, whole ? 16 : 0);
      } else {
        Array<Element, 8> v;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          v[e] = row_ok && e < cols_here ? base[row * ld + col + e] : Element(0.0f);
        }
        *reinterpret_cast<Array<Element, 8>*>(dst) = v;
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

// ldmatrix fragment loads (see arch/mma_sm80.h for the fragment layouts). `lane` is the lane index.
// A: the 16 x 16 fragment at (m0, k0) of the tile.
template <class Operand, class Element>
TILEFUSE_DEVICE inline void load_a_fragment(cuda::std::uint32_t (&a)[4], Element const* smem, int m0, int k0, int lane) {
  using Tile = typename Operand::Tile;
  int const tile = lane / 8;  // which of the four 8x8 tiles this lane addresses a row of
  int const r = lane % 8;
  if constexpr (Operand::kKContiguous) {
    arch::ldmatrix_x4(a, smem + Tile::offset(m0 + r + 8 * (tile % 2), k0 + 8 * (tile / 2)));
  } else {
    arch::ldmatrix_x4_trans(a, smem + Tile::offset(k0 + r + 8 * (tile / 2), m0 + 8 * (tile % 2)));
  }
}

// B: two 16 x 8 fragments, columns n0..n0+7 (b[0..1]) and n0+8..n0+15 (b[2..3]), at k0.
template <class Operand, class Element>
TILEFUSE_DEVICE inline void load_b_fragments(cuda::std::uint32_t (&b)[4], Element const* smem, int n0, int k0, int lane) {
  using Tile = typename Operand::Tile;
  int const tile = lane / 8;
  int const r = lane % 8;
  if constexpr (Operand::kKContiguous) {
    arch::ldmatrix_x4(b, smem + Tile::offset(n0 + r + 8 * (tile / 2), k0 + 8 * (tile % 2)));
  } else {
    arch::ldmatrix_x4_trans(b, smem + Tile::offset(k0 + r + 8 * (tile % 2), n0 + 8 * (tile / 2)));
  }
}

}  // namespace tilefuse::gemm::sm80
