// The operand source of the plain GEMM: A and B are strided, batched matrices in memory, and each
// k-tile is copied with OperandTile's 16-byte cp.async (interior tiles without any edge handling) or
// element-wise (edges, unaligned operands).
//
// An operand source is what the sm_80 kernel's mainloop asks for its tiles; the implicit-GEMM
// convolution has its own (conv/kernel/implicit_gemm_operands.h). A source provides
//   LayoutA, LayoutB   how the tiles lie in shared memory (K- or MN-contiguous)
//   Params             its kernel parameters
//   Loader<OperandA, OperandB>(params, problem, batch, m0, n0, thread) with
//     load(params, smem_a, smem_b, k0, k_end)   issue the cp.asyncs of one k-tile (the kernel commits them)
//     prepare_stage(params, smem_a, smem_b, k0)  runs once the k-tile's copies have landed, before the
//                                               block's barrier: a thread may rewrite the chunks it
//                                               copied itself (mainloop fusion); usually empty
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/sm80_smem_tile.h>

namespace tilefuse::gemm::sm80 {

// One dense operand of one threadblock: `mn_left` rows (A) or columns (B) from the tile's first.
// NOTES: the leading dimension is passed in at each load (it lives in the kernel's parameter space)
// rather than copied into the loader: the copy cost the 128x256 kernel 30 registers and 104 bytes of
// spills (docs/notes/gemm_sm80.md, operand sources).
template <class Operand, bool kAligned>
struct DenseTileLoader {
  using Element = typename Operand::ElementType;
  Element const* data;  // this batch entry's matrix
  index_t mn0;
  index_t mn_left;

  TILEFUSE_DEVICE bool is_whole(index_t k_left) const {
    return kAligned && k_left >= Operand::kTileK && mn_left >= Operand::kTileMN;
  }
  TILEFUSE_DEVICE void load_interior(Element* smem, index_t ld, index_t k0, int thread) const {
    Operand::load_interior(smem, Operand::k_tile_base(data, ld, mn0, k0), ld, thread);
  }
  TILEFUSE_DEVICE void load(Element* smem, index_t ld, index_t k0, index_t k_left, int thread) const {
    Operand::template load<kAligned>(smem, Operand::k_tile_base(data, ld, mn0, k0), ld,
                                     Operand::rows_left(mn_left, k_left), Operand::cols_left(mn_left, k_left), thread);
  }
};

template <class Element, class LayoutA_, class LayoutB_, bool kAligned>
struct DenseOperands {
  using LayoutA = LayoutA_;
  using LayoutB = LayoutB_;

  struct Params {
    Element const* a = nullptr;
    index_t lda = 0;
    index_t batch_stride_a = 0;
    Element const* b = nullptr;
    index_t ldb = 0;
    index_t batch_stride_b = 0;
  };

  template <class OperandA, class OperandB>
  struct Loader {
    DenseTileLoader<OperandA, kAligned> a;
    DenseTileLoader<OperandB, kAligned> b;
    int thread;

    TILEFUSE_DEVICE Loader(Params const& p, GemmCoord const& problem, int batch, index_t m0, index_t n0, int thread_)
        : a{p.a + batch * p.batch_stride_a, m0, problem.m - m0},
          b{p.b + batch * p.batch_stride_b, n0, problem.n - n0},
          thread(thread_) {}

    TILEFUSE_DEVICE void prepare_stage(Params const&, Element*, Element*, index_t) const {}

    TILEFUSE_DEVICE void load(Params const& p, Element* smem_a, Element* smem_b, index_t k0, index_t k_end) const {
      index_t const k_left = k_end - k0;
      // NOTES: the interior case is kept apart so the hot loop carries none of the edge handling.
      if (a.is_whole(k_left) && b.is_whole(k_left)) {
        a.load_interior(smem_a, p.lda, k0, thread);
        b.load_interior(smem_b, p.ldb, k0, thread);
      } else {
        a.load(smem_a, p.lda, k0, k_left, thread);
        b.load(smem_b, p.ldb, k0, k_left, thread);
      }
    }
  };
};

}  // namespace tilefuse::gemm::sm80
