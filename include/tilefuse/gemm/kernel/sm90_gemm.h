// The sm_90a GEMM kernel: TMA loads, WGMMA, warp specialization, a persistent grid.
//
//   D[l] = epilogue(A[l] * B[l]), A: m x k K-major (row-major), B: k x n K-major (column-major),
//   bf16 or fp16 operands (wgmma k16, 64 elements per k-tile), or FP8 ones (e4m3 / e5m2, A and B may
//   differ; wgmma k32, 128 elements per k-tile: a k-tile row is 128 bytes either way), fp32
//   accumulation, any m, n, k, batch.
//
// One threadblock per SM, three warpgroups with named roles, read top to bottom in run():
//   producer (warpgroup 0, one thread)   walks the block's tiles and their k-tiles, waits until a stage of
//                                        the shared-memory ring is empty, and issues two TMA loads into it
//                                        (A: TileM x 64, B: TileN x 64, 128-byte swizzle), which signal the
//                                        stage's full barrier when their bytes have landed (block-wise FP8
//                                        scales: warp 0's 32 lanes also copy the k-tile's scales, below);
//   consumers (warpgroups 1, 2)          cooperative: each own 64 rows of the tile; ping-pong: each own
//                                        whole tiles, alternately (below). Wait until a stage is full,
//                                        issue 4 wgmma.m64nTileNk16 per 64 rows on it (descriptors into the
//                                        swizzled tiles), keep one k-tile of wgmmas in flight, and release
//                                        the stage when its wgmmas are done;
//   epilogue (the consumers, per warp)   each warp stages its 16 accumulator rows through its own slice of
//                                        shared memory, EpilogueColumns columns at a time, and visits the
//                                        epilogue tree 8 consecutive columns per thread (epilogue::Fragment<8>,
//                                        exactly what the sm80 kernel and the host driver do). Only
//                                        __syncwarp is needed: no warp waits for another.
// While the consumers run the epilogue of one tile, the producer is already loading the next tile's
// k-tiles into the stages they released, so loads overlap the epilogue.
//
// Ping-pong (Config::kSchedule): the block's tiles go to the two consumer warpgroups in turn, each epilogue
// under the other's mainloop; why the turn keeps the ring's parity waits sound, and why edges cost nothing in
// the mainloop (TMA zero-fills): docs/notes/gemm_sm90.md, "The kernel's schedules and edges".
//
// The producer's loading is an operand source (sm90_tma_operands.h: the interface, and the GEMM's TMA
// source; conv/kernel/sm90_implicit_gemm.h: the convolution's). Every stage of the ring has a full and an
// empty barrier (sm90_ring_state.h); producer and consumers walk the same (tile, k-tile) -> (stage, phase).

#pragma once

#include <cuda/std/array>
#include <cuda/std/cstdint>
#include <cuda/std/cstring>
#include <cuda/std/type_traits>

#include <tilefuse/arch/cluster.h>
#include <tilefuse/arch/grid_dependency.h>
#include <tilefuse/arch/global_reduce.h>
#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/named_barrier.h>
#include <tilefuse/arch/stmatrix.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/arch/wgmma.h>
#include <tilefuse/arch/wgmma_fp8.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/tree_traits.h>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_block_scales.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_path.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>
#include <tilefuse/gemm/kernel/sm90_persistent_scheduler.h>
#include <tilefuse/gemm/kernel/sm90_residual_ring.h>
#include <tilefuse/gemm/kernel/sm90_shared_memory.h>
#include <tilefuse/gemm/kernel/sm90_ring_state.h>
#include <tilefuse/gemm/kernel/sm90_row_gate.h>
#include <tilefuse/gemm/kernel/sm90_row_map.h>
#include <tilefuse/gemm/kernel/sm90_split_reduction.h>
#include <tilefuse/gemm/kernel/sm90_tile_epilogue.h>
#include <tilefuse/gemm/kernel/sm90_tma_operands.h>
#include <tilefuse/gemm/kernel/sm90_wgmma_mainloop.h>
#include <tilefuse/gemm/kernel/sm90_staged_aux.h>
#include <tilefuse/gemm/kernel/tile_scheduler.h>

namespace tilefuse::gemm::sm90 {

// Element_ is A's type and, unless ElementB_ says otherwise, B's.
template <class Element_, class Epilogue, class Config, class Operands = TmaOperands<Element_, Config>,
          class ElementB_ = Element_>
struct GemmKernel {
  // Here, not on the parameter: naming a kernel type (the conv dispatch names every mode's) instantiates nothing.
  static_assert(Sm90OperandSource<Operands>, "Operands must meet Sm90OperandSource (sm90_tma_operands.h)");
  using Element = Element_;
  using ElementB = ElementB_;
  using OperandSource = Operands;  // the parts' names for these (a template parameter cannot be a member)
  using EpilogueTree = Epilogue;
  using KernelConfig = Config;
  static constexpr bool kFp8 = arch::detail::kIsFp8<Element>;
  static_assert((sizeof(Element) == 2 && cuda::std::is_same_v<Element, ElementB>) ||
                    (kFp8 && arch::detail::kIsFp8<ElementB>),
                "the sm90 kernel reads bf16 or fp16 operands (A and B alike) or FP8 ones (e4m3 / e5m2)");
  // K of one wgmma: 32 bytes of a 128-byte swizzled row, so the descriptor steps are the same.
  static constexpr int kMmaK = 32 / static_cast<int>(sizeof(Element));
  static constexpr bool kPromote = Config::kPromoteEveryKTile;
  // k-tiles per promotion (1: every 128 of K; block-wise scales need 1).
  static constexpr int kPromoteInterval = kPromote ? Config::kPromoteInterval : 1;
  static_assert(kPromoteInterval >= 1 && kPromoteInterval < Config::kStages, "a promotion interval holds its stages");
  static_assert(!kPromote || kFp8, "promotion is for FP8 operands");

  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kTileK = Config::kTileK;
  static constexpr int kConsumerWarpgroups = Config::kConsumerWarpgroups;
  static constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
  static constexpr int kThreads = Config::kThreads;
  static constexpr bool kPingPong = Config::kSchedule == Sm90Schedule::kPingPong;
  // Rows of a tile one consumer warpgroup computes, in blocks of 64 (one wgmma.m64 each).
  static constexpr int kWarpgroupRows = kPingPong ? kTileM : kTileM / kConsumerWarpgroups;
  static constexpr int kRowBlocks = kWarpgroupRows / 64;
  static constexpr int kAccumulators = kTileN / 2;  // fp32 per consumer thread and row block
  // Promotion every k-tile with two partial sets (64 + 64 + 64 registers per thread for a 64 x 128
  // warpgroup tile): mainloop_promoted issues k-tile t + 1 before promoting k-tile t.
  static constexpr bool kOverlapPromotion =
      kPromote && kPromoteInterval == 1 && kRowBlocks == 1 && overlaps_promotion<Config>();
  // Two accumulator chains per warpgroup (Config::kTwoChains), summed at the end of each tile's mainloop.
  static constexpr bool kTwoChains = two_chains<Config>();
  static_assert(!kTwoChains || (!kPromote && !kFp8), "two accumulator chains are for 16-bit, unpromoted mainloops");
  // Block-wise scales travel with their k-tile in the stage's scale slot (sm90_block_scales.h: their Params,
  // per-lane sources and copies, and the slots' storage).
  static constexpr bool kBlockScaled = Config::kBlockScaled;
  using Scales = BlockScalesPart<kTileM, kBlockScaled>;
  static constexpr int kScaleFloatsPerStage = Scales::kFloatsPerStage;
  static constexpr int kScaleCopyThreads = Scales::kCopyThreads;
  static constexpr int kProducerThreads =
      Operands::kProducerThreads > kScaleCopyThreads ? Operands::kProducerThreads : kScaleCopyThreads;
  static_assert(!kBlockScaled || Operands::kProducerThreads <= 32, "the scale copies share warp 0 with the loads");
  static_assert(!kBlockScaled || kTileM == 4 * 32, "each producer lane copies 4 rows' scales");
  // Cluster of kClusterM CTAs on adjacent tile rows sharing B (Sm90Multicast): the scheduler hands out
  // pairs of tiles, and a stage is free only when the consumers of every CTA of the cluster released it
  // (the peer's producer writes B into it).
  static constexpr int kClusterM = Config::kClusterM;
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of one or two CTAs along M");
  static_assert(kClusterM == 1 || Operands::kMulticast, "multicast needs the TMA operand source");
  // Warps that read (and release) each stage: one warpgroup under ping-pong, all consumers otherwise.
  static constexpr int kReleasingWarps = kPingPong ? 4 : kConsumerWarps;
  static_assert(!kPingPong || kConsumerWarpgroups == 2, "ping-pong alternates between two consumer warpgroups");
  // setmaxnreg only moves registers within the block's launch allocation: 64K / threads per thread, rounded
  // down to a multiple of 8 (168 for 384 threads), not the whole 64K (asking for more hangs). Checked here
  // rather than in Sm90TileConfig so that a config deriving from it with other targets is checked too.
  static_assert(Config::kProducerRegisters * 128 + Config::kConsumerRegisters * 128 * Config::kConsumerWarpgroups <=
                    (65536 / Config::kThreads) / 8 * 8 * Config::kThreads,
                "the warpgroups' setmaxnreg targets exceed the block's launch register allocation");
  static_assert(kWarpgroupRows % 64 == 0, "a consumer warpgroup computes whole wgmma.m64 blocks");
  // 128: one 128-byte swizzle row. 64 (FP8 k-tiles of 64 channels, the conv's Sm90ConvHalfK): one
  // 64-byte swizzle row, which the operand source's TMA maps must write with CU_TENSOR_MAP_SWIZZLE_64B.
  static constexpr int kRowBytes = kTileK * static_cast<int>(sizeof(Element));
  static_assert(kRowBytes == 128 || (kRowBytes == 64 && kFp8), "a k-tile row is one 128-byte (FP8: or 64-byte) swizzle row");
  static constexpr bool kBMnMajor = Operands::kBMnMajor;
  static_assert(!kBMnMajor || (!kFp8 && kRowBytes == 128 && kTileN % 64 == 0),
                "an MN-major B is 16-bit, in 64-column blocks of 128-byte rows");
  static constexpr bool kAMnMajor = Operands::kAMnMajor;
  static_assert(!kAMnMajor || (!kFp8 && kRowBytes == 128 && !kPromote),
                "an MN-major A is 16-bit, in 64-row blocks of 128-byte rows");

  // ---- the epilogue's path: which epilogue runs, and with what (sm90_epilogue_path.h decides) ----
  using Path = EpiloguePath<Epilogue, Config>;
  static constexpr int kEpilogueColumns = Path::kEpilogueColumns;
  static constexpr int kChunks = Path::kChunks;
  static constexpr int kVisitWidth = Path::kVisitWidth;
  static constexpr int kVisitsPerChunkRow = Path::kVisitsPerChunkRow;
  static constexpr int kVisitsPerLane = Path::kVisitsPerLane;
  using Loaded = typename Path::Loaded;
  using PackedTraits = typename Path::PackedTraits;
  static constexpr bool kPackedLoads = Path::kPackedLoads;
  static constexpr bool kPackedVectors = Path::kPackedVectors;
  static constexpr bool kPackedPerElement = Path::kPackedPerElement;
  static constexpr bool kPackedEpilogue = Path::kPackedEpilogue;
  static constexpr bool kStagedColumn = Path::kStagedColumn;
  static constexpr int kColumnBytesPerWarp = Path::kColumnBytesPerWarp;
  static constexpr int kColumnElementBytes = Path::kColumnElementBytes;
  using RowValues = typename Path::RowValues;
  static constexpr bool kTmaAux = Path::kTmaAux;
  static constexpr int kAuxStages = Path::kAuxStages;
  static constexpr bool kTmaStore = Path::kTmaStore;
  static constexpr bool kTmaColumn = Path::kTmaColumn;
  // Ping-pong: one ring per consumer warpgroup (half the slots each), holding its own tiles' sub-tiles.
  // (One shared ring would have a warpgroup skip the other's fills of a slot, and an mbarrier's parity
  // cannot tell the fill it waits for from one two phases earlier.)
  static constexpr int kAuxRings = kPingPong ? Config::kConsumerWarpgroups : 1;
  static constexpr int kAuxRingSlots = kTmaAux ? kAuxStages / kAuxRings : 0;
  static_assert(!kTmaAux || (kAuxRingSlots >= 1 && kAuxRingSlots * kAuxRings == kAuxStages),
                "the TMA residual's slots split evenly between the rings");
  // The ring's slots, their Params and its producer's and consumers' steps (sm90_residual_ring.h).
  using ResidualRing = ResidualRingPart<kTileM, kTileN, kAuxRings, kAuxRingSlots, kTmaAux, kTmaColumn>;
  // The consumer warps that read (and release) each sub-tile: all of them, or the owning warpgroup's.
  static constexpr int kAuxReaders = kPingPong ? 4 : 4 * Config::kConsumerWarpgroups;
  // Ping-pong: warps 1 and 2 of the producer warpgroup each issue one ring's sub-tiles (aux_producer), so
  // that a sub-tile waiting for a slot never holds back the next tile's k-tiles nor the other ring.
  // Cooperative: the producer issues them after each tile's k-tiles (why: sm90_residual_ring.h).
  static constexpr bool kAuxWarp = kTmaAux && kProducerThreads <= 32 && kPingPong;
  static constexpr int kAuxSlotBytes = ResidualRing::kSlotBytes;
  // Split-K reduced in the kernel (Config::kReduceSplits; sm90_split_reduction.h).
  static constexpr bool kReduceSplits = reduces_splits<Config>();
  static_assert(!kReduceSplits || (!kTmaAux && !kPromote && kClusterM == 1),
                "in-kernel split-K: no TMA residual ring, FP8 promotion or cluster");
  using SplitReduction = SplitReductionPart<kTileM, kTileN, kReduceSplits>;
  // ---- A's rows arriving during the run (Sm90RowGate): the producer waits for a tile's pieces ----
  static constexpr bool kRowGate = gates_rows<Config>();
  static_assert(!kRowGate || (Config::kClusterM == 1 && !kReduceSplits && !Config::kBlockScaled),
                "the row gate takes unclustered, unsplit tiles without block scales (one thread loads a block's "
                "rows of A, and only it waits for them)");
  using RowGate = RowGatePart<kTileM, kRowGate>;
  static_assert(!kRowGate || requires(typename Operands::Loader loader) { loader.redirect_a(nullptr, 0); },
                "the row gate's own rows load through a second tensor map: an operand source with redirect_a");
  TILEFUSE_HOST_DEVICE static constexpr index_t split_ticket_count(index_t tiles_m, index_t tiles_n) {
    return SplitReduction::ticket_count(tiles_m, tiles_n);
  }
  static constexpr int kAuxColumnBytes = ResidualRing::kColumnBytes;
  // TMA stores read whole 1024-byte swizzle atoms: the staging starts on a 1024-byte boundary (everything
  // before it is whole KiB but the TMA residual's column slots).
  static constexpr int kStagingPad = kTmaStore ? (1024 - ResidualRing::kColumnRegionBytes % 1024) % 1024 : 0;
  // kTmaAux: the Params of the tree's staged AuxLoad (the residual), for the device API's tensor map.
  TILEFUSE_HOST_DEVICE static auto const* staged_aux(typename Epilogue::Params const& e) {
    return staged_aux_params<typename PackedTraits::InputNode>(cuda::std::get<0>(e.children));
  }
  // kTmaColumn: the Params of the tree's one column vector.
  TILEFUSE_HOST_DEVICE static auto const* staged_column(typename Epilogue::Params const& e) {
    return staged_column_params<typename PackedTraits::InputNode>(cuda::std::get<0>(e.children));
  }
  // Slots are an odd number of 16-byte words apart, so that the 16-byte accesses of 8 lanes (one
  // shared-memory wavefront) fall on 8 different bank groups: conflict-free cp.async writes and reads.
  static constexpr int kLoadSlotWords = (static_cast<int>(sizeof(Loaded)) + 15) / 16;
  static constexpr int kLoadSlotBytes = 16 * (kLoadSlotWords % 2 == 1 ? kLoadSlotWords : kLoadSlotWords + 1);
  static constexpr int kLoadBytesPerChunk = kVisitsPerLane * 32 * kLoadSlotBytes;  // per warp

  // ---- shared memory, summed from the parts, and the ring's depth (sm90_shared_memory.h) ----
  using Memory = SharedMemoryPlan<GemmKernel>;
  static constexpr auto kABytes = Memory::kABytes;
  static constexpr auto kAuxSlices = Memory::kAuxSlices;
  static constexpr auto kBBytes = Memory::kBBytes;
  static constexpr auto kLoadBytesPerWarp = Memory::kLoadBytesPerWarp;
  static constexpr auto kLoadChunks = Memory::kLoadChunks;
  static constexpr auto kSmemAlignment = Memory::kSmemAlignment;
  static constexpr auto kSmemBytes = Memory::kSmemBytes;
  static constexpr auto kStagedLoads = Memory::kStagedLoads;
  static constexpr auto kStages = Memory::kStages;
  static constexpr auto kStagingBytesPerWarp = Memory::kStagingBytesPerWarp;
  static constexpr auto kStagingFloatsPerSlice = Memory::kStagingFloatsPerSlice;
  using SharedStorage = typename Memory::SharedStorage;

  static_assert(Operands::kProducerThreads >= 1 && Operands::kProducerThreads <= 128,
                "the producer is (part of) warpgroup 0");

  using BlockScales = typename Scales::Params;

  // The operand source's parameters (the GEMM's: tensor maps and batch masks) are the base.
  // (problem starts on a 16-byte boundary, so the epilogue's parameters keep their vector loads)
  struct NoDMap {};
  struct DMap {
    arch::TmaDescriptor tma_d;  // kTmaStore: D as (n, m, batch), box 64 x 16, 128-byte swizzle
    int d_by_tma = 0;           // 1 where the device API encoded tma_d (D aligned for TMA); 0: lanes store
  };
  struct Params : Operands::Params, ResidualRing::Params,
                  cuda::std::conditional_t<kTmaStore, DMap, NoDMap>,
                  SplitReduction::Params, RowGate::Params {
    alignas(16) GemmCoord problem;
    typename Epilogue::Params epilogue;
    int tiles_m = 0;
    int tiles_n = 0;
    int tiles = 0;  // tiles_m * tiles_n * batch; with a cluster, ceil(tiles_m / ClusterM) * tiles_n * batch
    int beside_previous = 0;  // 1: shares no data with the grids still running before it (a dgrad's later phases): run()
    BlockScales block_scales;  // Config::kBlockScaled only
  };

  // Whether D leaves by TMA stores (kTmaStore and the device API's check; describe() says so).
  TILEFUSE_HOST_DEVICE static bool d_by_tma(Params const& p) {
    if constexpr (kTmaStore) {
      return p.d_by_tma != 0;
    } else {
      (void)p;
      return false;
    }
  }

  // Where D's row `row` starts: row * ld, or the operand source's OutputRowMap (sm90_row_map.h: the conv
  // fprop sources carry one; -1 for a row that is not stored). The packed epilogue's lane stores ask.
  static constexpr bool kRowMap = requires(Params const& p) { p.row_map; } && kPackedEpilogue;
  TILEFUSE_HOST_DEVICE static index_t d_row_offset(Params const& p, index_t row) {
    if constexpr (kRowMap) {
      return mapped_row_offset(p.row_map, row, p.epilogue.ld);
    } else {
      return row * p.epilogue.ld;
    }
  }

  // ---- the tile scheduler (sm90_persistent_scheduler.h) ----
  using Scheduler = PersistentTileScheduler<kClusterM, Config::kGroupRows>;
  TILEFUSE_DEVICE static Tile tile_of(Params const& p, int index) {
    Tile tile = Scheduler::tile_of(p.tiles_m, p.tiles_n, index);
    if constexpr (kRowGate) tile.m = RowGate::rotated(p, tile.m);
    return tile;
  }
  TILEFUSE_DEVICE static int first_tile_index() { return Scheduler::first_tile_index(); }
  TILEFUSE_DEVICE static int tile_stride() { return Scheduler::tile_stride(); }

  TILEFUSE_DEVICE static int k_tiles(Params const& p) {
    return static_cast<int>((p.problem.k + kTileK - 1) / kTileK);
  }

  using PipelineState = RingState<kStages>;

  // ---- the kernel, top to bottom ----
  TILEFUSE_DEVICE static void run(Params const& p, char* smem_raw) {
#if TILEFUSE_ARCH_SM90A
    SharedStorage const s = Memory::carve(smem_raw);
    int const thread = static_cast<int>(threadIdx.x);
    int const warpgroup = thread / 128;
    if (thread == 0) {
      for (int i = 0; i < kStages; ++i) {
        arch::mbarrier_init(&s.full[i], Operands::kFullArrivals + kScaleCopyThreads);
        arch::mbarrier_init(&s.empty[i], kReleasingWarps * kClusterM);
      }
      for (int i = 0; i < kAuxStages; ++i) {
        arch::mbarrier_init(&s.aux_full[i], 1);
        arch::mbarrier_init(&s.aux_empty[i], kAuxReaders);
      }
      arch::fence_barrier_init();
      Operands::prefetch(p);
    }
    // The peers' barriers must be initialised before anyone multicasts into them or arrives on them.
    if constexpr (kClusterM > 1) {
      arch::cluster_sync();
    } else {
      __syncthreads();
    }
    // Launched early beside the previous kernel (LaunchConfig::after_previous_early), the set-up above touched
    // only this block's shared memory and the parameters: wait for that kernel's writes before any global
    // access. The next kernel may then start its own set-up on SMs this grid leaves idle or frees; it waits
    // for this grid the same way (a no-op without the launch attribute).
    // beside_previous (the caller's promise: no grid still running writes what this one touches or reads what it
    // writes): no wait here, the two run side by side; it waits before exiting, so its completion implies theirs.
    if (!p.beside_previous) arch::grid_dependency_wait();
    arch::allow_dependents_early();

    if (warpgroup == 0) {
      arch::setmaxnreg_dec<Config::kProducerRegisters>();
      if (thread < kProducerThreads) {
        producer(p, s, thread);
      } else if constexpr (kAuxWarp) {
        if (thread % 32 == 0 && thread / 32 <= kAuxRings) aux_producer(p, s, thread / 32 - 1);
      }
    } else {
      arch::setmaxnreg_inc<Config::kConsumerRegisters>();
      consumer(p, s, warpgroup - 1);
    }
    // No CTA leaves while its peer may still write into its shared memory or arrive on its barriers.
    if constexpr (kClusterM > 1) arch::cluster_sync();
    if (p.beside_previous) arch::grid_dependency_wait();
#else
    // Built for another arch (the library's sm_80 builds instantiate this kernel too): never launched,
    // GemmSm90::can_implement refuses devices and builds without sm_90a code. Fail loudly regardless.
    (void)p, (void)smem_raw;
    __trap();
#endif
  }

  // ---- the TMA residual ring's state and a consumer's skipped sub-tile (the packed epilogue calls it) ----
  using AuxState = typename ResidualRing::State;
  static constexpr int kAuxChunks = ResidualRing::kChunks;
  TILEFUSE_DEVICE static void skip_aux_chunk(SharedStorage const& s, int lane, AuxState& aux) {
    ResidualRing::skip_chunk(s, lane, aux);
  }

 private:
  // ---- producer: Operands::kProducerThreads threads (the GEMM: one) issue every load of the block; ----
  // ---- with block-wise scales, warp 0's lanes copy each k-tile's scales                            ----
  TILEFUSE_DEVICE static void producer(Params const& p, SharedStorage const& s, int thread) {
    int const k_count = k_tiles(p);
    PipelineState state;
    [[maybe_unused]] AuxState aux[kAuxRings];
    [[maybe_unused]] int local_tile = 0;  // the block's tiles so far: ping-pong's ring is local_tile % 2
    for (int t = first_tile_index(); t < p.tiles; t += tile_stride()) {
      Tile const tile = tile_of(p, t);
      typename Operands::Loader loader(p, p.problem, thread, tile.m * kTileM, tile.n * kTileN, tile.batch);
      [[maybe_unused]] typename Scales::Sources scales = Scales::sources(p.block_scales, p.problem, tile, thread);
      if constexpr (kRowGate) {
        if (RowGate::own(p, tile.m)) {  // the own rows, where they lie: in place before the launch
          loader.redirect_a(&p.tma_own, (tile.m - p.own_tile_begin) * kTileM);
        } else if (thread < Operands::kProducerThreads) {
          RowGate::wait(p, tile.m);  // the tile's rows of A are in place
        }
      }
      for (int kt = 0; kt < k_count; ++kt) {
        // Wait until every consumer warp released this stage (the first pass waits on the phase
        // "before" the fresh barrier's first, which counts as complete).
        arch::mbarrier_wait(&s.empty[state.stage], state.phase ^ 1u);
        if (thread < Operands::kProducerThreads) {
          loader.load(p, s.a + state.stage * kABytes, s.b + state.stage * kBBytes, &s.full[state.stage], kt * kTileK);
        }
        if constexpr (kBlockScaled) {
          Scales::copy(p.block_scales, s.scales + state.stage * kScaleFloatsPerStage, &s.full[state.stage], scales,
                       thread);
        }
        state.advance();
      }
      if constexpr (kTmaAux && !kAuxWarp) {
        int const ring = local_tile++ % kAuxRings;
        if (thread == 0) issue_aux_tile(p, aux_ring(s, ring), tile, aux[ring]);
      }
    }
    Operands::finish();
    if constexpr (kBlockScaled) arch::cp_async_wait_all();  // the scale copies, before the lanes exit
  }

  // ---- kTmaAux: the residual's sub-tiles, in the order (tile, 64-column chunk) for producer and consumers ----
  // The storage as ring `ring` sees it: its slots, their column values and barriers first.
  TILEFUSE_DEVICE static SharedStorage aux_ring(SharedStorage s, int ring) { return ResidualRing::view(s, ring); }

  // kAuxWarp: ring `ring`'s tiles' sub-tiles (ping-pong: the tiles of consumer warpgroup `ring`), as
  // slots free up, beside the producer's k-tiles.
  TILEFUSE_DEVICE static void aux_producer(Params const& p, SharedStorage const& s, int ring) {
    SharedStorage const slots = aux_ring(s, ring);
    AuxState aux;
    for (int t = first_tile_index() + ring * tile_stride(); t < p.tiles; t += kAuxRings * tile_stride()) {
      issue_aux_tile(p, slots, tile_of(p, t), aux);
    }
  }

  TILEFUSE_DEVICE static void issue_aux_tile(Params const& p, SharedStorage const& s, Tile const& tile, AuxState& aux) {
    ResidualRing::template issue_tile<GemmKernel>(p, s, tile, aux);
  }

  // ---- consumers: the mainloop of each tile, then its epilogue ----
  TILEFUSE_DEVICE static void consumer(Params const& p, SharedStorage const& s, int consumer_warpgroup) {
    int const thread = static_cast<int>(threadIdx.x) % 128;
    int const warp_in_group = thread / 32;
    int const lane = thread % 32;
    int const warp = consumer_warpgroup * 4 + warp_in_group;  // 0 .. kConsumerWarps - 1
    float* const staging = s.staging + warp * (kStagingBytesPerWarp / static_cast<int>(sizeof(float)));
    char* const loads = s.loads + warp * kLoadBytesPerWarp;
    int const k_count = k_tiles(p);
    int const grid = tile_stride();
    int const first_tile = first_tile_index();

    float acc[kRowBlocks][kAccumulators];
#pragma unroll
    for (int b = 0; b < kRowBlocks; ++b) {
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) acc[b][i] = 0.0f;
    }

    // Cooperative: every consumer takes every tile of the block. Ping-pong: warpgroup w takes the
    // block's tiles w, w + 2, ...; the other warpgroup's k-tiles come first in the ring for w = 1.
    int const tile_step = kPingPong ? kConsumerWarpgroups * grid : grid;
    int t = kPingPong ? first_tile + consumer_warpgroup * grid : first_tile;
    PipelineState state;
    [[maybe_unused]] AuxState aux;
    // The TMA residual's ring this warpgroup reads (ping-pong: its own).
    SharedStorage const sa = kTmaAux ? aux_ring(s, kPingPong ? consumer_warpgroup : 0) : s;
    if constexpr (kPingPong) state.advance_by(consumer_warpgroup * k_count);
    // This warp's rows of a tile in row block b: 16 starting at warp_row0(b).
    auto const warp_row0 = [&](int b) {
      return (kPingPong ? b * 64 : consumer_warpgroup * kWarpgroupRows) + warp_in_group * 16;
    };
    // NOTES: the epilogue inputs are not prefetched into L2 ahead of the epilogue (prefetch.global.L2
    // of the next tile's residual and bias, as earlier kernels did): on long-K tiles the lines were
    // evicted before use and the residual crossed DRAM twice, and without it the fused ResNet-50 convs
    // ran faster (docs/notes/gemm_sm90.md, the epilogue prefetch removed).
    for (; t < p.tiles; t += tile_step) {
      Tile const tile = tile_of(p, t);
      // What the epilogue sees: with in-kernel split-K every split's tile is batch 0's.
      Tile const out = kReduceSplits ? Tile{tile.m, tile.n, 0} : tile;
      if constexpr (kPingPong) {
        if (t != first_tile) wait_for_turn(consumer_warpgroup);
      }
      // Packed loads: the tile's first residual chunks go out before its mainloop (a whole mainloop
      // of lead time; the warp's slices are free, its previous epilogue done).
      if constexpr (kPackedLoads) WarpEpilogue::first_loads(p, staging, loads, lane, out, warp_row0(0));
      // Per-element vectors: the tile's per-row values and its column vector go out now, a mainloop ahead.
      RowValues rows[kRowBlocks];
#pragma unroll
      for (int b = 0; b < kRowBlocks; ++b) rows[b] = Packed::load_row_values(p, lane, out, warp_row0(b));
      if constexpr (kStagedColumn) Packed::issue_column_copy(p, loads, lane, out);
      Mainloop::issue(s, consumer_warpgroup, warp_in_group, lane, k_count, state, acc);
      if constexpr (kPingPong) {
        // The other warpgroup's next tile (if the block has one) may start its mainloop.
        if (t + grid < p.tiles) pass_turn(consumer_warpgroup);
      }
      // The first chunks' epilogue loads go out while the last k-tile's wgmmas run.
      if constexpr (!kPackedLoads) WarpEpilogue::first_loads(p, staging, loads, lane, out, warp_row0(0));
      Mainloop::drain(s, lane, k_count, state, acc);
      if constexpr (kPingPong) state.advance_by((kConsumerWarpgroups - 1) * k_count);
#pragma unroll
      for (int b = 0; b < kRowBlocks; ++b) {
        if constexpr (kReduceSplits) {
          // This warp's 16 rows into the sums; on the tile's last split, acc then holds every split's sum.
          if (!SplitReduction::add(p, acc[b], lane, tile, warp_row0(b))) {
            arch::cp_async_wait<0>();  // loads issued for an epilogue another split's warp runs
            continue;
          }
        }
        WarpEpilogue::run(p, sa, acc[b], staging, loads, lane, out, warp_row0(b), aux, rows[b]);
      }
    }
    if (d_by_tma(p) && lane == 0) arch::bulk_wait_group<0>();  // this warp's last TMA stores are done
  }

  // Ping-pong turns: named barrier 1 + w means "warpgroup w may start its next mainloop"; the other
  // warpgroup arrives on it (without waiting) once it has issued its own.
  static constexpr int kTurnBarrierThreads = 2 * 128;
  TILEFUSE_DEVICE static void wait_for_turn(int consumer_warpgroup) {
    arch::named_barrier_sync(1 + consumer_warpgroup, kTurnBarrierThreads);
  }
  TILEFUSE_DEVICE static void pass_turn(int consumer_warpgroup) {
    arch::named_barrier_arrive(1 + (consumer_warpgroup + 1) % kConsumerWarpgroups, kTurnBarrierThreads);
  }

  // ---- the mainloop (sm90_wgmma_mainloop.h) ----
  using Mainloop = WgmmaMainloop<GemmKernel>;

  // ---- epilogue: this warp's 16 rows of the tile, packed or fp32-staged (sm90_tile_epilogue.h) ----
  using WarpEpilogue = TileEpilogue<GemmKernel>;
  using Packed = typename WarpEpilogue::Packed;
};

// One persistent threadblock per SM (the device API launches min(#SMs, tiles) blocks).
template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, 1)
    sm90_gemm_kernel(__grid_constant__ typename Kernel::Params const params) {
  extern __shared__ __align__(1024) char smem[];
  Kernel::run(params, smem);
}

}  // namespace tilefuse::gemm::sm90
