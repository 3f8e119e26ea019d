// Operand tiles in shared memory for the sm_80 GEMM: the XOR-swizzled layout that keeps ldmatrix and
// cp.async free of bank conflicts, the global -> shared copy (16-byte cp.async, or element by element
// for unaligned operands), and the fragment loads for A and B in either layout: ldmatrix for 16-bit
// elements and K-contiguous 32-bit ones, 32-bit shared loads for MN-contiguous 32-bit (tf32) tiles.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/ldmatrix.h>
#include <tilefuse/arch/mma_sm80.h>
#include <tilefuse/core/array.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/tensor_ref.h>

namespace tilefuse::gemm::sm80 {

// How a tile's 16-byte chunks are permuted within each row (chunk c of row r is stored at chunk
// c ^ phase(r)):
//  kLdmatrix: phase cycles over 8 values once per 128-byte line, so the 8 rows one ldmatrix tile reads
//    at the same column fall into 8 different bank groups (and so do a quarter-warp's cp.async chunks).
//  kScalarRead: phase(r) = 2 (r % 4), for 32-bit tiles whose fragments are read one element per lane
//    (MN-contiguous tf32 operands: lanes read rows t and columns g, g + 8 for t < 4, g < 8 — 4 rows x
//    2 chunks, which the phases 0, 2, 4, 6 spread over the 8 bank groups). Needs rows of whole
//    128-byte lines.
enum class Swizzle { kLdmatrix, kScalarRead };

// Rows x Cols elements of ElementBytes (2 or 4) bytes, row by row, in 16-byte chunks of
// kChunkElements = 16 / ElementBytes elements, swizzled as above.
template <int Rows, int Cols, int ElementBytes = 2, Swizzle kSwizzle = Swizzle::kLdmatrix>
struct SwizzledTile {
  static constexpr int kRows = Rows;
  static constexpr int kCols = Cols;
  static constexpr int kChunkElements = 16 / ElementBytes;
  static constexpr int kChunksPerRow = Cols / kChunkElements;
  static constexpr bool kScalar = kSwizzle == Swizzle::kScalarRead;
  static constexpr int kRowsPerLine = kScalar || kChunksPerRow >= 8 ? 1 : 8 / kChunksPerRow;
  static constexpr int kPhases = kScalar ? 4 : (kChunksPerRow >= 8 ? 8 : kChunksPerRow);
  static constexpr int kPhaseScale = kScalar ? 2 : 1;
  static constexpr int kElements = Rows * Cols;
  static_assert(ElementBytes == 2 || ElementBytes == 4, "tiles hold 16-bit or 32-bit elements");
  static_assert(Cols % kChunkElements == 0 && kChunksPerRow >= 2, "tile rows are whole 16-byte chunks, at least two");
  static_assert(!kScalar || kChunksPerRow % 8 == 0, "the scalar-read swizzle needs rows of whole 128-byte lines");

  // Rows whose phase pattern repeats: moving a row index by a multiple of this keeps its phase.
  static constexpr int kPhasePeriod = kRowsPerLine * kPhases;

  TILEFUSE_HOST_DEVICE static constexpr int phase(int row) { return ((row / kRowsPerLine) % kPhases) * kPhaseScale; }

  // Element offset of (row, col); col may point anywhere inside its chunk.
  TILEFUSE_HOST_DEVICE static constexpr int offset(int row, int col) {
    return row * Cols + (((col / kChunkElements) ^ phase(row)) * kChunkElements) + (col % kChunkElements);
  }

  // The lane-dependent part of an ldmatrix address (row r0 + row, chunk c0 / kChunkElements + chunk),
  // computed once per thread: with r0 a multiple of kPhasePeriod and c0 a multiple of two chunks, the
  // swizzled chunk is (c0 / kChunkElements) ^ chunk_xor, so each ldmatrix costs one XOR instead of the
  // whole swizzle.
  struct LaneAddress {
    int row_offset;  // row * Cols
    int chunk_xor;   // chunk ^ phase(row), chunk in {0, 1}
  };
  TILEFUSE_HOST_DEVICE static constexpr LaneAddress lane_address(int row, int chunk) {
    return {row * Cols, chunk ^ phase(row)};
  }
  TILEFUSE_HOST_DEVICE static constexpr int offset(LaneAddress lane, int r0, int c0) {
    return r0 * Cols + lane.row_offset + (((c0 / kChunkElements) ^ lane.chunk_xor) * kChunkElements);
  }
};

// One operand (A or B) of one threadblock tile. The tile is stored as it lies in global memory: rows
// along the strided dimension, columns along the contiguous one. A row-major / B column-major are
// "K-contiguous" (rows = m or n, columns = k); the other layouts are "MN-contiguous" (rows = k).
// Elements are 16-bit (bf16, fp16) or 32-bit (float, tfloat32_t: the tf32 path); a 16-byte chunk holds
// kChunkElements of them. 32-bit MN-contiguous tiles are read with 32-bit loads (ldmatrix cannot
// transpose 32-bit elements), so they take the scalar-read swizzle.
template <class Element, class Layout, bool kIsA_, int TileMN, int TileK, int Threads>
struct OperandTile {
  using ElementType = Element;
  static constexpr bool kIsA = kIsA_;
  static constexpr int kTileMN = TileMN;
  static constexpr int kTileK = TileK;
  static constexpr bool kKContiguous =
      kIsA_ ? cuda::std::is_same_v<Layout, RowMajor> : cuda::std::is_same_v<Layout, ColumnMajor>;
  static constexpr int kElementBytes = static_cast<int>(sizeof(Element));
  static_assert(kElementBytes == 2 || kElementBytes == 4, "operands are 16-bit or 32-bit elements");
  static constexpr int kChunkElements = 16 / kElementBytes;
  // The fragments are read with 32-bit shared loads rather than ldmatrix.
  static constexpr bool kScalarFragments = kElementBytes == 4 && !kKContiguous;
  using Tile = SwizzledTile<kKContiguous ? TileMN : TileK, kKContiguous ? TileK : TileMN, kElementBytes,
                            kScalarFragments ? Swizzle::kScalarRead : Swizzle::kLdmatrix>;
  static constexpr int kChunks = Tile::kElements / kChunkElements;
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
    int const col = (thread % Tile::kChunksPerRow) * kChunkElements;
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
    int const col = (thread % Tile::kChunksPerRow) * kChunkElements;
    Element* dst = smem + Tile::offset(row0, col);
    Element const* src = base + row0 * ld + col;
    index_t const cols_here = cols_left - col;
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      bool const row_ok = row0 + i * kRowStep < rows_left;
      bool const whole = row_ok && cols_here >= kChunkElements;
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
        Array<Element, kChunkElements> v;
#pragma unroll
        for (int e = 0; e < kChunkElements; ++e) v[e] = row_ok && e < cols_here ? chunk_src[e] : Element(0.0f);
        *reinterpret_cast<Array<Element, kChunkElements>*>(chunk_dst) = v;
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

// Fragment loads (see arch/mma_sm80.h for the fragment layouts). One k-step covers two chunks of k:
// 16 elements of 16 bits (m16n8k16) or 8 of 32 bits (m16n8k8.tf32); in units of chunks both mmas'
// fragments are the same 8x8 tiles of 16-byte rows, so one ldmatrix code serves both element sizes.
// Lane i addresses row i % 8 of 8x8 tile i / 8; which row and column block that is depends on the
// operand's layout. FragmentLanes holds the per-lane part of the addresses, computed once per thread.
template <class Operand, bool kScalar = Operand::kScalarFragments>
struct FragmentLanes {
  using Tile = typename Operand::Tile;
  typename Tile::LaneAddress lane;

  TILEFUSE_HOST_DEVICE explicit FragmentLanes(int lane_id) {
    int const tile = lane_id / 8;
    int const r = lane_id % 8;
    // A: tiles (m, k) = (0,0) (8,0) (0,8) (8,8); B: (n, k) = (0,0) (0,8) (8,0) (8,8) (k in chunks: 0, 1).
    int const mn_block = Operand::kIsA ? tile % 2 : tile / 2;
    int const k_block = Operand::kIsA ? tile / 2 : tile % 2;
    lane = Operand::kKContiguous ? Tile::lane_address(r + 8 * mn_block, k_block)   // rows mn, columns k
                                 : Tile::lane_address(r + 8 * k_block, mn_block);  // rows k, columns mn
  }

  // Address of the fragment whose (mn, k) corner is (mn0, k0): mn0 a multiple of 16, k0 of a k-step.
  TILEFUSE_HOST_DEVICE typename Operand::ElementType const* at(typename Operand::ElementType const* smem, int mn0, int k0) const {
    return smem + (Operand::kKContiguous ? Tile::offset(lane, mn0, k0) : Tile::offset(lane, k0, mn0));
  }
};

// 32-bit MN-contiguous tiles (rows k, columns mn, scalar-read swizzle): each lane loads its elements
// (k = k0 + t + 4q, mn = mn0 + g + 8h), g = lane / 4, t = lane % 4, with 32-bit loads; k0 a multiple of 4
// (so row k's phase is 2t) and mn0 of 16. The chunk of mn is (mn0 & ~31) / 4 + (mn0 & 16) / 4 + g / 4
// + 2h, whose last three terms occupy distinct bits below 8, so its swizzled position is
// (mn0 & ~31) / 4 + ((g / 4) ^ 2t) ^ ((mn0 & 16) / 4 + 2h): the element offset is the lane's `base`
// (t * Cols + 4 ((g / 4) ^ 2t) + g % 4) with bits 3 and 4 flipped by (mn0 & 16) + 8h, plus
// (k0 + 4q) * Cols + (mn0 & ~31). One register per lane and one XOR per load.
// Bank check: for one (q, h), the 32 lanes read rows t < 4 and chunks g / 4 + 2h (+ 4), which the
// phases 2t send to 8 different chunk positions of the 128-byte line, 4 lanes (g % 4) per chunk: no
// conflict. (Rows are whole lines, so the row does not move the bank.)
template <class Operand>
struct FragmentLanes<Operand, true> {
  using Tile = typename Operand::Tile;
  static_assert(Tile::kScalar && Tile::kChunkElements == 4, "32-bit elements in the scalar-read swizzle");
  int base;

  TILEFUSE_HOST_DEVICE explicit FragmentLanes(int lane_id) {
    int const g = lane_id / 4;
    int const t = lane_id % 4;
    base = t * Tile::kCols + (((g / 4) ^ (2 * t)) * 4) + g % 4;
  }

  // Element (k0 + t + 4q, mn0 + g + 8h) of this lane: its offset in the tile, and its value.
  TILEFUSE_HOST_DEVICE int offset(int mn0, int k0, int q, int h) const {
    return (k0 + 4 * q) * Tile::kCols + (mn0 & ~31) + (base ^ ((mn0 & 16) + 8 * h));
  }
  TILEFUSE_DEVICE cuda::std::uint32_t load(typename Operand::ElementType const* smem, int mn0, int k0, int q, int h) const {
    return arch::ld_shared_b32(smem + offset(mn0, k0, q, h));
  }
};

// A: the 16 x (one k-step) fragment at (m0, k0).
template <class Operand>
TILEFUSE_DEVICE inline void load_a_fragment(cuda::std::uint32_t (&a)[4], FragmentLanes<Operand> const& lanes,
                                            typename Operand::ElementType const* smem, int m0, int k0) {
  if constexpr (Operand::kScalarFragments) {
    // a0 = (m g, k t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4).
    a[0] = lanes.load(smem, m0, k0, 0, 0);
    a[1] = lanes.load(smem, m0, k0, 0, 1);
    a[2] = lanes.load(smem, m0, k0, 1, 0);
    a[3] = lanes.load(smem, m0, k0, 1, 1);
  } else if constexpr (Operand::kKContiguous) {
    arch::ldmatrix_x4(a, lanes.at(smem, m0, k0));
  } else {
    arch::ldmatrix_x4_trans(a, lanes.at(smem, m0, k0));
  }
}

// B: two (one k-step) x 8 fragments, columns n0..n0+7 (b[0..1]) and n0+8..n0+15 (b[2..3]), at k0.
template <class Operand>
TILEFUSE_DEVICE inline void load_b_fragments(cuda::std::uint32_t (&b)[4], FragmentLanes<Operand> const& lanes,
                                             typename Operand::ElementType const* smem, int n0, int k0) {
  if constexpr (Operand::kScalarFragments) {
    // b0 = (k t, n g), b1 = (k t + 4, n g) of each n-tile.
    b[0] = lanes.load(smem, n0, k0, 0, 0);
    b[1] = lanes.load(smem, n0, k0, 1, 0);
    b[2] = lanes.load(smem, n0, k0, 0, 1);
    b[3] = lanes.load(smem, n0, k0, 1, 1);
  } else if constexpr (Operand::kKContiguous) {
    arch::ldmatrix_x4(b, lanes.at(smem, n0, k0));
  } else {
    arch::ldmatrix_x4_trans(b, lanes.at(smem, n0, k0));
  }
}

}  // namespace tilefuse::gemm::sm80
