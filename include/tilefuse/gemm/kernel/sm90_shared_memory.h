// The Hopper kernel's shared memory, summed from its parts: each part owns its storage (its regions' sizes and
// a Pointers struct carved from them: the operand ring, sm90_ring_state.h; the residual ring,
// sm90_residual_ring.h; the epilogue's staging and loads, sm90_epilogue_staging.h; the block scales,
// sm90_block_scales.h), and this plan places the regions, one after another, and picks the ring's depth: what
// is left beside the rest (Config::kStages at most). A part of gemm::sm90::GemmKernel (sm90_gemm.h): the
// kernel's constants kStages, kSmemBytes, ... are this plan's, its SharedStorage the parts' Pointers together.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/tree_traits.h>
#include <tilefuse/gemm/kernel/sm90_block_scales.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>
#include <tilefuse/gemm/kernel/sm90_residual_ring.h>
#include <tilefuse/gemm/kernel/sm90_ring_state.h>

namespace tilefuse::gemm::sm90 {

template <class K>
struct SharedMemoryPlan {
  using KernelConfig = typename K::KernelConfig;
  using Operands = typename K::OperandSource;
  using Epilogue = typename K::EpilogueTree;
  using Residual = typename K::ResidualRing;  // its slots, columns and barriers
  using ScaleSlots = typename K::Scales;      // the block scales' slot per stage
  static constexpr auto kChunks = K::kChunks;
  static constexpr auto kColumnBytesPerWarp = K::kColumnBytesPerWarp;
  static constexpr auto kConsumerWarps = K::kConsumerWarps;
  static constexpr auto kLoadBytesPerChunk = K::kLoadBytesPerChunk;
  static constexpr auto kPackedEpilogue = K::kPackedEpilogue;
  static constexpr auto kPackedLoads = K::kPackedLoads;
  static constexpr auto kPingPong = K::kPingPong;
  static constexpr auto kRowBlocks = K::kRowBlocks;
  static constexpr auto kRowBytes = K::kRowBytes;
  static constexpr auto kStagedColumn = K::kStagedColumn;
  static constexpr auto kStagingPad = K::kStagingPad;
  static constexpr auto kTileM = K::kTileM;
  static constexpr auto kTileN = K::kTileN;
  static constexpr auto kTmaAux = K::kTmaAux;
  static constexpr auto kTmaStore = K::kTmaStore;

  // ---- shared memory: [A stages][B stages][residual slots][their columns][pad][epilogue staging per warp]
  //      [staged loads per warp][ring barriers][residual barriers][block scales per stage] ----
  static constexpr int kABytes = kTileM * kRowBytes;  // one stage of A
  static constexpr int kBBytes = kTileN * kRowBytes;  // one stage of B
  using Ring = OperandRingStorage<kABytes, kBBytes>;
  // Staging rows are unpadded and their eight 16-byte groups swizzled (sm90_epilogue_staging.h), so
  // that both the float2 writes of the accumulator layout and the float4 reads of the visits are free
  // of bank conflicts.
  // NOTES: rows padded by 8 floats (the earlier layout) left the float4 reads two-way conflicted
  // (ncu: 12.3 wavefronts per read, 4 ideal, on a 1x1 convolution whose epilogue is most of its time;
  // docs/notes/gemm_sm90.md, a conflict-free staging layout).
  static_assert(KernelConfig::kEpilogueColumns == kStagingColumns, "the staging swizzle is laid out for 32-column chunks");
  static constexpr int kStagingFloatsPerSlice = kStagingSliceFloats;
  // Packed loads: kAuxSlices slices per warp, each one 64-column chunk's staged input (then its results).
  // 2 keep the 128x256 ring at 4 stages (chunks 2 and 3 load while 0 and 1 are visited); 4 hold a
  // whole 128x256 tile's residual, all issued before the mainloop, at the cost of a stage
  // (KernelConfig::kPackedLoadSlices, default 2).
  TILEFUSE_HOST_DEVICE static constexpr int packed_load_slices() {
    if constexpr (requires { KernelConfig::kPackedLoadSlices; }) {
      return KernelConfig::kPackedLoadSlices;
    } else {
      return 2;
    }
  }
  static constexpr int kAuxSlices = !kPackedLoads || kTmaAux ? 1
                                    : packed_load_slices() < kTileN / kPackedStagingColumns
                                        ? packed_load_slices()
                                        : kTileN / kPackedStagingColumns;
  static_assert(kAuxSlices >= 1 && kAuxSlices <= 4, "one to four staged chunks per warp");
  static constexpr int kStagingBytesPerWarp = EpilogueStagingStorage<kConsumerWarps, kAuxSlices, 0>::kBytesPerWarp;
  // Swizzled TMA destinations need 1024-byte alignment; the dynamic shared memory base is aligned by
  // hand, so ask for 1024 bytes of slack.
  static constexpr int kSmemAlignment = 1024;
  // The ring takes KernelConfig::kStages stages, or as many as fit beside the staged loads (227 KiB per block
  // on sm_90): a fused tree trades ring depth for epilogue loads in flight, 3 chunks of them (2 ahead)
  // or 2, but never below 3 stages; where even 2 chunks do not fit (or the schedule is ping-pong), its
  // visits load in line.
  static constexpr int kSmemLimit = 227 * 1024;
  // NOTES: 4 chunks (3 ahead) over a 2-stage ring made the fused ResNet-50 convs 6% slower, none
  // faster (even the one-k-tile 1x1 layers): more bytes in flight is not what they lack
  // (docs/notes/gemm_sm90.md, load chunks).
  static constexpr int kMinStagedRing = 3;
  static constexpr int kMaxLoadChunks = 3;
  TILEFUSE_HOST_DEVICE static constexpr int stages_beside(int load_chunks) {
    int const other = kConsumerWarps * (kStagingBytesPerWarp + load_chunks * kLoadBytesPerChunk + kColumnBytesPerWarp) +
                      Residual::kSlotRegionBytes + Residual::kColumnRegionBytes + kStagingPad +
                      Ring::barrier_bytes(KernelConfig::kStages) + Residual::kBarrierBytes + kSmemAlignment;
    int const fit = (kSmemLimit - other) / (Ring::kBytesPerStage + ScaleSlots::bytes(1));
    return KernelConfig::kStages < fit ? KernelConfig::kStages : fit;
  }
  TILEFUSE_HOST_DEVICE static constexpr int choose_load_chunks() {
    int chunks = epilogue::reads_memory<Epilogue> && !kPingPong && !kPackedEpilogue ? (kChunks < kMaxLoadChunks ? kChunks : kMaxLoadChunks) : 0;
    for (; chunks >= 2; --chunks) {
      if (stages_beside(chunks) >= kMinStagedRing || stages_beside(chunks) == KernelConfig::kStages) return chunks;
    }
    return 0;
  }
  static constexpr int kLoadChunks = choose_load_chunks();
  static constexpr bool kStagedLoads = kLoadChunks > 0;
  // (Only 128-row ping-pong has two row blocks per warp, and ping-pong does not stage.)
  static_assert(!kStagedLoads || kRowBlocks == 1, "staged loads are issued for one row block per tile");
  // Per consumer warp: the staged loads' slots, or the staged column vector (never both).
  static constexpr int kLoadBytesPerWarp = kLoadChunks * kLoadBytesPerChunk + kColumnBytesPerWarp;
  static constexpr int kStages = stages_beside(kLoadChunks);
  static_assert(kStages >= 2, "the ring needs at least two stages");
  using Staging = EpilogueStagingStorage<kConsumerWarps, kAuxSlices, kLoadBytesPerWarp>;
  static constexpr int kOffsetA = 0;
  static constexpr int kOffsetAux = kOffsetA + Ring::operand_bytes(kStages);  // 1024-aligned: whole KiB per stage
  static constexpr int kOffsetAuxColumns = kOffsetAux + Residual::kSlotRegionBytes;
  static constexpr int kOffsetStaging = kOffsetAuxColumns + Residual::kColumnRegionBytes + kStagingPad;
  static constexpr int kOffsetLoads = kOffsetStaging + Staging::kStagingBytes;
  static constexpr int kOffsetBarriers = kOffsetLoads + Staging::kLoadBytes;
  static constexpr int kOffsetAuxBarriers = kOffsetBarriers + Ring::barrier_bytes(kStages);
  static constexpr int kOffsetScales = kOffsetAuxBarriers + Residual::kBarrierBytes;
  static_assert(kOffsetScales % 16 == 0, "a scale slot takes 16-byte cp.async copies");
  static constexpr int kSmemBytes = kOffsetScales + ScaleSlots::bytes(kStages) + kSmemAlignment;
  static_assert(kSmemBytes <= kSmemLimit, "shared memory exceeds the block's 227 KiB");
  static_assert(kOffsetLoads % 16 == 0, "cp.async writes 16-byte aligned slots");
  static_assert(Operands::kABytes == kABytes && Operands::kBBytes == kBBytes, "the source fills whole stages");
  static_assert(kOffsetBarriers % 8 == 0, "barriers are 8-byte aligned");
  static_assert(!kTmaStore || (kOffsetStaging % 1024 == 0 && kStagingBytesPerWarp % 1024 == 0),
                "TMA stores read 128-byte-swizzled slices: each starts on a 1024-byte boundary");

  // The kernel's shared storage: every part's pointers (s.a, s.full, s.aux, s.staging, s.scales, ...).
  struct SharedStorage : Ring::Pointers, Residual::Pointers, Staging::Pointers, ScaleSlots::Pointers {};

  TILEFUSE_DEVICE static SharedStorage carve(char* smem_raw) {
    auto const raw = reinterpret_cast<cuda::std::uintptr_t>(smem_raw);
    char* const smem = smem_raw + ((kSmemAlignment - raw % kSmemAlignment) % kSmemAlignment);
    auto* const barriers = reinterpret_cast<cuda::std::uint64_t*>(smem + kOffsetBarriers);
    auto* const aux_barriers = reinterpret_cast<cuda::std::uint64_t*>(smem + kOffsetAuxBarriers);
    return SharedStorage{Ring::template carve<kStages>(smem + kOffsetA, barriers),
                         Residual::carve(smem + kOffsetAux, smem + kOffsetAuxColumns, aux_barriers),
                         Staging::carve(smem + kOffsetStaging, smem + kOffsetLoads),
                         ScaleSlots::carve(smem + kOffsetScales)};
  }
};

}  // namespace tilefuse::gemm::sm90
