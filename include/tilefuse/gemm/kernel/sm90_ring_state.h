// Where a producer or a consumer is in a ring of kSlots shared-memory stages guarded by mbarriers: the
// stage and the barrier phase to wait for, which flips each time the ring wraps; and the operand ring's
// shared storage. A part of gemm::sm90::GemmKernel (sm90_gemm.h): its operand ring and its residual ring.
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

// The operand ring's shared storage: the stages' A tiles, then their B tiles (whole KiB each: the 128-byte
// swizzle's atoms stay aligned), and each stage's full and empty barriers, two regions that the kernel's
// plan places (sm90_shared_memory.h) once it knows how many stages fit.
template <int kABytes, int kBBytes>
struct OperandRingStorage {
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "stages stay 1024-byte aligned");
  static constexpr int kBytesPerStage = kABytes + kBBytes;
  TILEFUSE_HOST_DEVICE static constexpr int operand_bytes(int stages) { return stages * kBytesPerStage; }
  TILEFUSE_HOST_DEVICE static constexpr int barrier_bytes(int stages) {
    return 2 * stages * static_cast<int>(sizeof(cuda::std::uint64_t));
  }

  struct Pointers {
    char* a;                     // kStages tiles of TileM x TileK
    char* b;                     // kStages tiles of TileN x TileK
    cuda::std::uint64_t* full;   // kStages barriers: the stage holds data
    cuda::std::uint64_t* empty;  // kStages barriers: the stage may be overwritten
  };
  template <int kStages>
  TILEFUSE_DEVICE static Pointers carve(char* operands, cuda::std::uint64_t* barriers) {
    return Pointers{operands, operands + kStages * kABytes, barriers, barriers + kStages};
  }
};

}  // namespace tilefuse::gemm::sm90
