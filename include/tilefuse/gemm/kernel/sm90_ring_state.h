// Where a producer or a consumer is in a ring of kSlots shared-memory stages guarded by mbarriers: the
// stage and the barrier phase to wait for, which flips each time the ring wraps. A part of
// gemm::sm90::GemmKernel (sm90_gemm.h): its operand ring and its residual ring.
//
// Pipeline state: every stage has a full barrier (Operands::kFullArrivals arrivals; for TMA, the
// producer's arrive.expect_tx, plus the TMA bytes; with block-wise scales 32 more, one per scale-copying
// lane) and an empty barrier (one arrival per consumer warp).
// Producer and consumers walk the same sequence (tile, k-tile) -> (stage, phase), so their counters
// agree without communication.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

template <int kSlots>
struct RingState {
  int stage = 0;
  cuda::std::uint32_t phase = 0;
  TILEFUSE_DEVICE void advance() {
    if (++stage == kSlots) {
      stage = 0;
      phase ^= 1u;
    }
  }
  // Skips `count` stages (ping-pong: the other warpgroup's tile).
  TILEFUSE_DEVICE void advance_by(int count) {
    int const total = stage + count;
    phase ^= static_cast<cuda::std::uint32_t>((total / kSlots) & 1);
    stage = total % kSlots;
  }
};

}  // namespace tilefuse::gemm::sm90
