// The Hopper kernel's shared memory, summed from its parts: the ring's A and B stages, the TMA residual ring's
// slots and column values, each consumer warp's epilogue staging and load slots, the barriers and the block
// scales; and the ring's depth, which is what is left beside the rest (Config::kStages at most). A part of
// gemm::sm90::GemmKernel (sm90_gemm.h): the kernel's constants kStages, kSmemBytes, ... are this plan's.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/tree_traits.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>

namespace tilefuse::gemm::sm90 {

template <class K>
struct SharedMemoryPlan {
  using KernelConfig = typename K::KernelConfig;
  using Operands = typename K::OperandSource;
  using Epilogue = typename K::EpilogueTree;
  static constexpr auto kAuxColumnBytes = K::kAuxColumnBytes;
  static constexpr auto kAuxSlotBytes = K::kAuxSlotBytes;
  static constexpr auto kAuxStages = K::kAuxStages;
  static constexpr auto kBlockScaled = K::kBlockScaled;
  static constexpr auto kChunks = K::kChunks;
  static constexpr auto kColumnBytesPerWarp = K::kColumnBytesPerWarp;
  static constexpr auto kConsumerWarps = K::kConsumerWarps;
  static constexpr auto kLoadBytesPerChunk = K::kLoadBytesPerChunk;
  static constexpr auto kPackedEpilogue = K::kPackedEpilogue;
  static constexpr auto kPackedLoads = K::kPackedLoads;
  static constexpr auto kPingPong = K::kPingPong;
  static constexpr auto kRowBlocks = K::kRowBlocks;
  static constexpr auto kRowBytes = K::kRowBytes;
  static constexpr auto kScaleFloatsPerStage = K::kScaleFloatsPerStage;
  static constexpr auto kStagedColumn = K::kStagedColumn;
  static constexpr auto kStagingPad = K::kStagingPad;
  static constexpr auto kTileM = K::kTileM;
  static constexpr auto kTileN = K::kTileN;
  static constexpr auto kTmaAux = K::kTmaAux;
  static constexpr auto kTmaColumn = K::kTmaColumn;
  static constexpr auto kTmaStore = K::kTmaStore;

  // ---- shared memory: [A stages][B stages][epilogue staging per warp][staged loads per warp][barriers] ----
  static constexpr int kABytes = kTileM * kRowBytes;  // one stage of A
  static constexpr int kBBytes = kTileN * kRowBytes;  // one stage of B
  static constexpr int kStageBytes = kABytes + kBBytes;
  // Staging rows are unpadded and their eight 16-byte groups swizzled (sm90_epilogue_staging.h), so
  // that both the float2 writes of the accumulator layout and the float4 reads of the visits are free
  // of bank conflicts.
  // NOTES: rows padded by 8 floats (the earlier layout) left the float4 reads two-way conflicted
  // (ncu: 12.3 wavefronts per read, 4 ideal, on a 1x1 convolution whose epilogue is most of its time;
  // docs/notes/gemm_sm90.md, a conflict-free staging layout).
  static_assert(KernelConfig::kEpilogueColumns == kStagingColumns, "the staging swizzle is laid out for 32-column chunks");
  static constexpr int kStagingLd = kStagingColumns;
  static constexpr int kStagingFloatsPerSlice = 16 * kStagingLd;
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
  static constexpr int kStagingBytesPerWarp = kAuxSlices * kStagingFloatsPerSlice * static_cast<int>(sizeof(float));
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
                      kAuxStages * (kAuxSlotBytes + kAuxColumnBytes) + kStagingPad +
                      2 * (KernelConfig::kStages + kAuxStages) * static_cast<int>(sizeof(cuda::std::uint64_t)) + kSmemAlignment;
    int const fit = (kSmemLimit - other) / (kStageBytes + kScaleFloatsPerStage * static_cast<int>(sizeof(float)));
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
  static constexpr int kOffsetA = 0;
  static constexpr int kOffsetB = kOffsetA + kStages * kABytes;
  static constexpr int kOffsetAux = kOffsetB + kStages * kBBytes;  // 1024-aligned: whole 128-byte rows x TileM
  static constexpr int kOffsetAuxColumns = kOffsetAux + kAuxStages * kAuxSlotBytes;
  static constexpr int kOffsetStaging = kOffsetAuxColumns + kAuxStages * kAuxColumnBytes + kStagingPad;
  static constexpr int kOffsetLoads = kOffsetStaging + kConsumerWarps * kStagingBytesPerWarp;
  static constexpr int kOffsetBarriers = kOffsetLoads + kConsumerWarps * kLoadBytesPerWarp;
  static constexpr int kBarrierBytes = 2 * (kStages + kAuxStages) * static_cast<int>(sizeof(cuda::std::uint64_t));
  static constexpr int kOffsetScales = kOffsetBarriers + kBarrierBytes;
  static_assert(kOffsetScales % 16 == 0, "a scale slot takes 16-byte cp.async copies");
  static constexpr int kSmemBytes =
      kOffsetScales + kStages * kScaleFloatsPerStage * static_cast<int>(sizeof(float)) + kSmemAlignment;
  static_assert(kSmemBytes <= kSmemLimit, "shared memory exceeds the block's 227 KiB");
  static_assert(kOffsetLoads % 16 == 0, "cp.async writes 16-byte aligned slots");
  static_assert(kABytes % kSmemAlignment == 0 && kBBytes % kSmemAlignment == 0, "stages stay 1024-byte aligned");
  static_assert(Operands::kABytes == kABytes && Operands::kBBytes == kBBytes, "the source fills whole stages");
  static_assert(kOffsetBarriers % 8 == 0, "barriers are 8-byte aligned");
  static_assert(!kTmaStore || (kOffsetStaging % 1024 == 0 && kStagingBytesPerWarp % 1024 == 0),
                "TMA stores read 128-byte-swizzled slices: each starts on a 1024-byte boundary");

  struct SharedStorage {
    char* a;                     // kStages tiles of TileM x 64
    char* b;                     // kStages tiles of TileN x 64
    float* staging;              // per consumer warp one slice of 16 x kStagingLd floats (kAuxSlices: kPackedLoads)
    char* loads;                 // kConsumerWarps slices of kLoadBytesPerWarp (kStagedLoads, kStagedColumn)
    cuda::std::uint64_t* full;   // kStages barriers: the stage holds data
    cuda::std::uint64_t* empty;  // kStages barriers: the stage may be overwritten
    char* aux;                       // kTmaAux: kAuxStages slots of TileM x 64 16-bit values
    char* aux_columns;               // kTmaColumn: per slot the chunk's 64 column-vector values
    cuda::std::uint64_t* aux_full;   // kAuxStages barriers: the slot holds its sub-tile
    cuda::std::uint64_t* aux_empty;  // kAuxStages barriers: every consumer warp is done with it
    float* scales;                   // kBlockScaled: per stage TileM scales of A, then B's
  };

  TILEFUSE_DEVICE static SharedStorage carve(char* smem_raw) {
    auto const raw = reinterpret_cast<cuda::std::uintptr_t>(smem_raw);
    char* const smem = smem_raw + ((kSmemAlignment - raw % kSmemAlignment) % kSmemAlignment);
    SharedStorage s;
    s.a = smem + kOffsetA;
    s.b = smem + kOffsetB;
    s.staging = reinterpret_cast<float*>(smem + kOffsetStaging);
    s.loads = smem + kOffsetLoads;
    s.full = reinterpret_cast<cuda::std::uint64_t*>(smem + kOffsetBarriers);
    s.empty = s.full + kStages;
    s.aux = smem + kOffsetAux;
    s.aux_columns = smem + kOffsetAuxColumns;
    s.aux_full = s.empty + kStages;
    s.aux_empty = s.aux_full + kAuxStages;
    s.scales = reinterpret_cast<float*>(smem + kOffsetScales);
    return s;
  }
};

}  // namespace tilefuse::gemm::sm90
