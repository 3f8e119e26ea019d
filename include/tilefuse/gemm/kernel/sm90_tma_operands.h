// The Hopper GEMM's operand source (TmaOperands: two TMA loads per k-tile, B multicast to a cluster of two)
// and the traits by which GemmKernel (sm90_gemm.h) reads any operand source (the conv's gathering sources are
// in conv/kernel/sm90_implicit_gemm.h).
//
// GemmKernel's producer loads through an operand source (the sm80 kernel's idea; a convolution is the same
// kernel with a gathering source). A source provides
//   kProducerThreads        how many threads of warpgroup 0 load (1 for TMA, 128 for cp.async gathers);
//   kFullArrivals           the full barrier's arrival count per phase;
//   kGenericProxyWrites     whether stages are written by the generic proxy (cp.async), so the consumers
//                           fence towards the async proxy (wgmma) after the full barrier;
//   Params                  the kernel's Params derive from it (the GEMM's: tma_a, tma_b, batch masks);
//   prefetch(params)        thread 0, once (descriptor prefetch);
//   Loader(params, problem, thread, m0, n0, batch)   per tile and producer thread;
//   loader.load(params, a_stage, b_stage, full, k0)  one k-tile into an empty stage, signalling `full`
//                           (asked for k0 = 0, TileK, ... in order; it may keep state between calls);
//   finish()                per producer thread after its last tile.
// TmaOperands below is the GEMM's: one thread, two TMA loads per k-tile.
#pragma once

#include <cuda/std/concepts>
#include <cuda/std/cstdint>

#include <tilefuse/arch/cluster.h>
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

// What every source whose producer is one thread issuing TMA loads shares (the GEMM's below, the conv's
// im2col, dgrad and wgrad sources): one arrival per stage (the thread's arrive.expect_tx), stages written by
// the async proxy only, both tensor maps (Params::tma_a, tma_b) prefetched, nothing to finish.
struct OneThreadTmaSource {
  static constexpr int kProducerThreads = 1;
  static constexpr int kFullArrivals = 1;
  static constexpr bool kGenericProxyWrites = false;
  template <class Params>
  TILEFUSE_DEVICE static void prefetch(Params const& p) {
    arch::tma_prefetch_descriptor(&p.tma_a);
    arch::tma_prefetch_descriptor(&p.tma_b);
  }
  TILEFUSE_DEVICE static void finish() {}
};

// The GEMM's operand source: A (k, m, batch) and B (k, n, batch) through two 3D tiled tensor maps with
// 128-byte swizzle, issued by one producer thread.
template <class Element, class Config>
struct TmaOperands : OneThreadTmaSource {
  static constexpr bool kMulticast = true;  // supports Config::kClusterM = 2
  static constexpr bool kAMnMajor = false;
  static constexpr bool kBMnMajor = false;
  static constexpr int kClusterM = Config::kClusterM;
  static constexpr int kABytes = Config::kTileM * Config::kTileK * static_cast<int>(sizeof(Element));
  static constexpr int kBBytes = Config::kTileN * Config::kTileK * static_cast<int>(sizeof(Element));

  struct Params {
    arch::TmaDescriptor tma_a;  // A as (k, m, batch), box (TileK, TileM, 1), 128-byte swizzle
    arch::TmaDescriptor tma_b;  // B as (k, n, batch), box (TileK, TileN / ClusterM, 1), 128-byte swizzle
    // ANDed with the batch index to give the tensor map's batch coordinate: -1 (all ones) for an
    // operand with one matrix per batch entry, 0 for one matrix shared by the batch (batch stride 0;
    // its tensor map then has a batch extent of 1).
    int batch_mask_a = -1;
    int batch_mask_b = -1;
  };

  struct Loader {
    int m0, n0, batch;
    arch::TmaDescriptor const* a_map = nullptr;  // another tensor map for this tile's A (redirect_a), or tma_a
    TILEFUSE_DEVICE Loader(Params const&, GemmCoord const&, int /*thread*/, int m0_, int n0_, int batch_)
        : m0(m0_), n0(n0_), batch(batch_) {}
    // This tile's rows of A from `map` (one matrix, no batch) at row `row0` instead (the row gate's own rows).
    TILEFUSE_DEVICE void redirect_a(arch::TmaDescriptor const* map, int row0) {
      a_map = map;
      m0 = row0;
    }
    // Every CTA receives all of A's and B's bytes for the stage; with a cluster of two, each CTA loads
    // half of the B tile (its rank's) into both CTAs, at the same offsets.
    TILEFUSE_DEVICE void load(Params const& p, char* a, char* b, cuda::std::uint64_t* full, int k0) const {
      arch::mbarrier_arrive_expect_tx(full, kABytes + kBBytes);
      if (a_map != nullptr) {
        arch::tma_load_3d(a, a_map, full, k0, m0, 0);
      } else {
        arch::tma_load_3d(a, &p.tma_a, full, k0, m0, batch & p.batch_mask_a);
      }
      if constexpr (kClusterM == 1) {
        arch::tma_load_3d(b, &p.tma_b, full, k0, n0, batch & p.batch_mask_b);
      } else {
        int const rank = arch::cluster_rank();
        constexpr int kHalfRows = Config::kTileN / 2;
        arch::tma_load_3d_multicast(b + rank * kHalfRows * Config::kTileK * static_cast<int>(sizeof(Element)), &p.tma_b,
                                    full, k0, n0 + rank * kHalfRows, batch & p.batch_mask_b,
                                    static_cast<cuda::std::uint16_t>(0x3));
      }
    }
  };
};

// The contract above as a concept (GemmKernel's Operands parameter). Beside it every source says whether it
// can load for a cluster of two (kMulticast: TmaOperands can, the conv's gathers cannot) and whether it
// stores A or B MN-major (kAMnMajor / kBMnMajor): each stage's operand is then Tile / 64 blocks of 64
// rows, each TileK rows of 64 contiguous elements (128-byte rows, 128-byte swizzle), as a 64-wide TMA box
// of an M- or N-contiguous tensor writes it (conv dgrad's filter, wgrad's dy^T and x; 16-bit elements only:
// FP8 wgmma takes K-major operands).
template <class S>
concept Sm90OperandSource =
    requires {
      { S::kProducerThreads } -> cuda::std::convertible_to<int>;
      { S::kFullArrivals } -> cuda::std::convertible_to<int>;
      { S::kGenericProxyWrites } -> cuda::std::convertible_to<bool>;
      { S::kMulticast } -> cuda::std::convertible_to<bool>;
      { S::kAMnMajor } -> cuda::std::convertible_to<bool>;
      { S::kBMnMajor } -> cuda::std::convertible_to<bool>;
      { S::kABytes } -> cuda::std::convertible_to<int>;
      { S::kBBytes } -> cuda::std::convertible_to<int>;
      typename S::Params;
      typename S::Loader;
    } &&
    cuda::std::constructible_from<typename S::Loader, typename S::Params const&, GemmCoord const&, int, int, int, int> &&
    requires(typename S::Params const& p, typename S::Loader& loader, char* stage, cuda::std::uint64_t* full) {
      S::prefetch(p);
      S::finish();
      loader.load(p, stage, stage, full, 0);
    };

}  // namespace tilefuse::gemm::sm90
