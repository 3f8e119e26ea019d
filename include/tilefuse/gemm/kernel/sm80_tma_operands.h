// An operand source of the sm_80 kernel for sm_90 devices: A (k, m, batch) and B (k, n, batch), both
// K-contiguous, through two 3D tiled tensor maps with the 128-byte swizzle, one thread issuing each
// k-tile's two copies and an mbarrier per stage saying when they have landed.
//
// Why on an mma.sync kernel: on an H200, 16-byte cp.asyncs fill the 128x256x64 tile's 48 KiB k-tiles
// at 4.9 TB/s, which caps the kernel at 420 TFLOP/s, below the 646 TFLOP/s mma.sync ceiling; the TMA
// engine fills the same ring at 9.3 TB/s (docs/notes/gemm_sm80.md, the ceilings; bench/gemm/mma_ceiling.cu).
//
// The tiles land in the layout ldmatrix reads: a K-contiguous tile of 64 16-bit elements has 128-byte
// rows, and TMA's 128-byte swizzle moves chunk c of row r to c ^ (r % 8), as SwizzledTile's kLdmatrix
// phase does (sm80_smem_tile.h); the stage bases are 1024-byte aligned, which that needs. Elements
// outside the operands arrive as zeros, so edge tiles need no handling. Host side: gemm::Gemm encodes
// the maps (gemm/device/gemm.hpp).
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm80 {

template <class Element>
struct TmaOperands {
  using LayoutA = RowMajor;
  using LayoutB = ColumnMajor;
  static constexpr bool kLoadsByTma = true;

  struct Params {
    arch::TmaDescriptor tma_a;  // A as (k, m, batch), box (TileK, TileM, 1), 128-byte swizzle
    arch::TmaDescriptor tma_b;  // B as (k, n, batch), box (TileK, TileN, 1), 128-byte swizzle
    // ANDed with the batch index: -1 for an operand with one matrix per batch entry, 0 for one matrix
    // shared by the batch (batch stride 0; its map has a batch extent of 1).
    int batch_mask_a = -1;
    int batch_mask_b = -1;
  };

  template <class OperandA, class OperandB>
  struct Loader {
    static_assert(OperandA::kKContiguous && OperandB::kKContiguous, "TMA loads K-contiguous tiles only");
    static_assert(OperandA::kTileK * sizeof(Element) == 128, "the 128-byte swizzle needs rows of 128 bytes");
    static constexpr int kBytes = (OperandA::Tile::kElements + OperandB::Tile::kElements) * static_cast<int>(sizeof(Element));
    int m0, n0, batch;

    TILEFUSE_DEVICE Loader(Params const&, GemmCoord const&, int batch_, index_t m0_, index_t n0_, int /*thread*/)
        : m0(static_cast<int>(m0_)), n0(static_cast<int>(n0_)), batch(batch_) {}

    // Issued by one thread: the k-tile at k0 into (smem_a, smem_b), signalling `full` with its bytes.
    TILEFUSE_DEVICE void load(Params const& p, Element* smem_a, Element* smem_b, cuda::std::uint64_t* full,
                              index_t k0) const {
      arch::mbarrier_arrive_expect_tx(full, kBytes);
      arch::tma_load_3d(smem_a, &p.tma_a, full, static_cast<int>(k0), m0, batch & p.batch_mask_a);
      arch::tma_load_3d(smem_b, &p.tma_b, full, static_cast<int>(k0), n0, batch & p.batch_mask_b);
    }

    TILEFUSE_DEVICE void prepare_stage(Params const&, Element*, Element*, index_t) const {}
  };

  TILEFUSE_DEVICE static void prefetch(Params const& p) {
    arch::tma_prefetch_descriptor(&p.tma_a);
    arch::tma_prefetch_descriptor(&p.tma_b);
  }
};

}  // namespace tilefuse::gemm::sm80
