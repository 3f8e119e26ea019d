// The operand source of the implicit-GEMM convolution for the sm_80 kernel (see
// gemm/kernel/sm80_dense_operands.h for what an operand source is). The gathered operands (fprop's
// and dgrad's A, dgrad's and wgrad's B) are copied chunk by chunk through conv/implicit_gemm.h's
// mapping, with zero-filled cp.async for padding; the plain ones (fprop's B = w, wgrad's A = dy) are
// strided matrices and take the GEMM's dense copies.
//
// kAligned (C and K multiples of 8, 16-byte aligned tensors): every 8-element chunk along the
// contiguous dimension is 8 consecutive elements or wholly zero, so it is one cp.async. Otherwise
// each element is gathered on its own (e.g. C = 3 in a first layer).
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/conv/implicit_gemm.h>
#include <tilefuse/conv/input_transform.h>
#include <tilefuse/core/array.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/gemm/kernel/sm80_dense_operands.h>
#include <tilefuse/gemm/kernel/sm80_smem_tile.h>

namespace tilefuse::conv::sm80 {

// Copies the k-tiles of one gathered operand of one threadblock. Thread t owns the chunks of
// OperandTile's assignment: one tile column `col` and the rows row0 + i * kRowStep. When the tile is
// K-contiguous those rows are mn coordinates fixed for the whole mainloop, so their part of the
// mapping is computed once; when it is MN-contiguous the thread's column is its one mn coordinate.
template <class Operand, class Gather, bool kAligned>
struct GatherTileLoader {
  using Element = typename Operand::ElementType;
  using Tile = typename Operand::Tile;
  static constexpr bool kKContiguous = Operand::kKContiguous;
  static constexpr int kChunks = Operand::kChunksPerThread;
  static constexpr int kRowStep = Operand::kRowStep;
  static constexpr int kMnParts = kKContiguous ? kChunks : 1;
  static_assert(Gather::kKContiguous == kKContiguous, "the tile must lie as the tensor does");

  // NOTES: the gather (the problem's geometry) and the tensor pointer are passed in at each load from
  // the kernel's parameter space instead of being stored here: stored copies stay live in registers
  // for the whole mainloop (the same copy of a leading dimension cost the GEMM 30 registers).
  index_t mn0;
  int row0;
  int col;
  typename Gather::MnPart mn[kMnParts];

  TILEFUSE_DEVICE GatherTileLoader(Gather const& gather, index_t mn0_, int thread)
      : mn0(mn0_), row0(thread / Tile::kChunksPerRow), col((thread % Tile::kChunksPerRow) * 8) {
#pragma unroll
    for (int i = 0; i < kMnParts; ++i) mn[i] = gather.mn_part(mn0 + (kKContiguous ? row0 + i * kRowStep : col));
  }

  TILEFUSE_DEVICE void load(Gather const& gather, Element const* tensor, Element* smem, index_t k0) const {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      int const row = row0 + i * kRowStep;
      Element* dst = smem + Tile::offset(row, col);
      if constexpr (kAligned) {
        // K-contiguous: every chunk of the thread has the same k, so k_part is computed once per k-tile
        // (hoisted by the compiler).
        index_t const offset = kKContiguous ? gather.offset(mn[i], gather.k_part(k0 + col))
                                            : gather.offset(mn[0], gather.k_part(k0 + row));
        // A chunk outside the tensor (padding, past the end) is zero-filled without a read.
        arch::cp_async_16(dst, offset >= 0 ? tensor + offset : tensor, offset >= 0 ? 16 : 0);
      } else {
        Array<Element, 8> v;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          index_t const offset = kKContiguous ? gather.offset(mn[i], gather.k_part(k0 + col + e))
                                              : gather.offset(gather.mn_part(mn0 + col + e), gather.k_part(k0 + row));
          v[e] = offset >= 0 ? tensor[offset] : Element(0.0f);
        }
        *reinterpret_cast<Array<Element, 8>*>(dst) = v;
      }
    }
  }

  // Mainloop fusion: rewrites, in shared memory, the chunks this thread copied for the k-tile at k0 as
  // Transform::apply(x, scale[c], shift[c]); zeros of padding and of coordinates past the end stay zero.
  // Only for K-contiguous activation gathers whose k parts carry the channel (fprop's A).
  // NOTES: on the 16-byte path all of a thread's chunks share one k, so the 8 channels' scale and shift
  // are loaded once per k-tile, all 16 loads before any use: loaded per element, in the chunk loop,
  // they serialized behind the shared-memory stores and made the fused conv 8x slower
  // (docs/notes/conv_sm80.md, mainloop fusion).
  template <class Transform>
  TILEFUSE_DEVICE void transform(Gather const& gather, InputTransformParams const& t, Element* smem, index_t k0) const {
    static_assert(kKContiguous, "the input transform applies to fprop's activation tile");
    if constexpr (kAligned) {
      auto const tap = gather.k_part(k0 + col);  // channels tap.c .. tap.c + 7 (c = 0 past the end: harmless)
      float scale[8], shift[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) scale[e] = t.scale[tap.c + e], shift[e] = t.shift[tap.c + e];
#pragma unroll
      for (int i = 0; i < kChunks; ++i) {
        if (gather.offset(mn[i], tap) < 0) continue;  // padding or past the end: stays zero
        Element* dst = smem + Tile::offset(row0 + i * kRowStep, col);
        Array<Element, 8> v = *reinterpret_cast<Array<Element, 8> const*>(dst);
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = Element(Transform::apply(static_cast<float>(v[e]), scale[e], shift[e]));
        *reinterpret_cast<Array<Element, 8>*>(dst) = v;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kChunks; ++i) {
        Element* dst = smem + Tile::offset(row0 + i * kRowStep, col);
        Array<Element, 8> v = *reinterpret_cast<Array<Element, 8> const*>(dst);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          auto const tap = gather.k_part(k0 + col + e);  // element-wise path: each element its own tap
          if (gather.offset(mn[i], tap) < 0) continue;
          v[e] = Element(Transform::apply(static_cast<float>(v[e]), t.scale[tap.c], t.shift[tap.c]));
        }
        *reinterpret_cast<Array<Element, 8>*>(dst) = v;
      }
    }
  }
};

// Layout tags that make the kernel's OperandTile lie as the gathered tensor does.
template <bool kIsA, bool kKContiguous>
using TileLayout = cuda::std::conditional_t<kIsA == kKContiguous, RowMajor, ColumnMajor>;

template <class Element, ConvMode kMode, bool kAligned, class InputTransform = NoInputTransform>
struct ImplicitGemmOperands {
  using GatherA = ImplicitGemmOperand<kMode, true>;
  using GatherB = ImplicitGemmOperand<kMode, false>;
  using LayoutA = TileLayout<true, GatherA::kKContiguous>;
  using LayoutB = TileLayout<false, GatherB::kKContiguous>;
  // fprop's B (w as K x RSC) and wgrad's A (dy as NPQ x K) are plain matrices.
  static constexpr bool kDenseA = kMode == ConvMode::kWgrad;
  static constexpr bool kDenseB = kMode == ConvMode::kFprop;

  static_assert(!InputTransform::kEnabled || kMode == ConvMode::kFprop, "input transforms are for fprop");

  struct Params {
    ConvGeometry geometry;
    Element const* a = nullptr;  // fprop: x, dgrad: dy, wgrad: dy
    Element const* b = nullptr;  // fprop: w, dgrad: w, wgrad: x
    InputTransformParams input_transform;  // fprop with an InputTransform: per-channel scale and shift
  };

  template <class OperandA, class OperandB>
  struct Loader {
    using DenseA = gemm::sm80::DenseTileLoader<OperandA, kAligned>;
    using DenseB = gemm::sm80::DenseTileLoader<OperandB, kAligned>;
    using LoaderA = cuda::std::conditional_t<kDenseA, DenseA, GatherTileLoader<OperandA, GatherA, kAligned>>;
    using LoaderB = cuda::std::conditional_t<kDenseB, DenseB, GatherTileLoader<OperandB, GatherB, kAligned>>;
    LoaderA a;
    LoaderB b;
    int thread;

    TILEFUSE_DEVICE Loader(Params const& p, GemmCoord const& problem, int /*batch*/, index_t m0, index_t n0, int thread_)
        : a(make_a(p, problem, m0, thread_)), b(make_b(p, problem, n0, thread_)), thread(thread_) {}

    TILEFUSE_DEVICE void prepare_stage(Params const& p, Element* smem_a, Element*, index_t k0) const {
      if constexpr (InputTransform::kEnabled) {
        a.template transform<InputTransform>(GatherA(p.geometry), p.input_transform, smem_a, k0);
      }
    }

    // k_end is the split's end; k-tiles never straddle splits, so the gathers' own bound (the GEMM's K)
    // is the only one they need.
    TILEFUSE_DEVICE void load(Params const& p, Element* smem_a, Element* smem_b, index_t k0, index_t k_end) const {
      if constexpr (kDenseA) {
        load_dense(a, index_t{p.geometry.K}, smem_a, k0, k_end);  // dy column-major, ld = K
      } else {
        a.load(GatherA(p.geometry), p.a, smem_a, k0);
      }
      if constexpr (kDenseB) {
        load_dense(b, index_t{p.geometry.R} * p.geometry.S * p.geometry.C, smem_b, k0, k_end);  // w, ld = R*S*C
      } else {
        b.load(GatherB(p.geometry), p.b, smem_b, k0);
      }
    }

   private:
    template <class L>
    TILEFUSE_DEVICE void load_dense(L const& loader, index_t ld, Element* smem, index_t k0, index_t k_end) const {
      index_t const k_left = k_end - k0;
      if (loader.is_whole(k_left)) {
        loader.load_interior(smem, ld, k0, thread);
      } else {
        loader.load(smem, ld, k0, k_left, thread);
      }
    }

    TILEFUSE_DEVICE static LoaderA make_a(Params const& p, GemmCoord const& problem, index_t m0, int thread) {
      if constexpr (kDenseA) {
        return DenseA{p.a, m0, problem.m - m0};  // dy column-major, ld = K
      } else {
        return LoaderA(GatherA(p.geometry), m0, thread);
      }
    }
    TILEFUSE_DEVICE static LoaderB make_b(Params const& p, GemmCoord const& problem, index_t n0, int thread) {
      if constexpr (kDenseB) {
        return DenseB{p.b, n0, problem.n - n0};  // w column-major K x N, ld = R*S*C
      } else {
        return LoaderB(GatherB(p.geometry), n0, thread);
      }
    }
  };
};

}  // namespace tilefuse::conv::sm80
