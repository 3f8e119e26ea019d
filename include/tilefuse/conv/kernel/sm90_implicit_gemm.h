// The implicit-GEMM convolution on the sm_90a kernel (gemm/kernel/sm90_gemm.h): fprop's operand
// source and the kernel type. Only the producer's loading is conv-specific; the stage ring, the
// wgmma consumers and the per-warp epilogue are the GEMM's.
//
//   A = x gathered by (output pixel, filter tap): the whole producer warpgroup (128 threads) copies
//       each k-tile (TileM pixels x 64 of r*s*c) with 16-byte cp.async, zero-filled (src-size 0) for
//       padding and for rows / taps past the end, straight into the 128-byte-swizzled layout the
//       wgmma descriptors read: 16-byte chunk c of row r lands at chunk c ^ (r % 8) of the row, rows
//       128 bytes apart (exactly what TMA's CU_TENSOR_MAP_SWIZZLE_128B writes for a 64-element box
//       row into a 1024-byte-aligned stage). Each thread signals the stage's full barrier with
//       cp.async.mbarrier.arrive.noinc, which fires once all its earlier cp.asyncs have landed.
//   B = w (K x R*S*C, row-major = the GEMM's column-major K-major B, ld = R*S*C): one tiled TMA load
//       per k-tile, as in the GEMM, issued by producer thread 0 with arrive.expect_tx.
// So the full barrier expects 129 arrivals per phase: 128 cp.async arrivals and thread 0's
// expect_tx (plus B's bytes).
//
// Thread t of the producer owns chunk column t % 8 and rows t / 8 + 16 i (i < TileM / 16): its
// rows' pixel parts (n*H*W, p*stride - pad, q*stride - pad) live in registers for the tile, and one
// tap (r, s, c) is computed per k-tile (all its chunks share the column, hence the k). Eight
// consecutive threads read one pixel's 128 contiguous bytes (C >= 64), and their swizzled chunks
// of one row are distinct, so the shared-memory writes are conflict-free.
//
// Needs C and K multiples of 8 (16 for FP8: a 16-byte chunk of r*s*c is then 8 or 16 consecutive
// channels of one tap, or wholly outside) and 16-byte-aligned x and w; the device API checks this and
// sends everything else to the sm80 kernel (FP8, which the sm80 kernel lacks, is refused instead).
// FP8 elements (e4m3, e5m2) run the same sources with k-tiles of 128 channels (Sm90ConvConfigFor): a
// k-tile row is 128 bytes either way, and the kernel's wgmma is the FP8 one (K = 32 per instruction).
//
// A second source, FpropIm2colOperands, loads A with TMA's im2col mode instead: one producer
// thread issues, per k-tile, one cp.async.bulk.tensor.im2col of TileM pixels x TileK channels (x as a 4D
// NHWC tensor map: the pixel walk of the tile starts at the tile's first output pixel and the filter
// tap is the instruction's (s * dilation_w, r * dilation_h) offsets) and one tiled load of w, exactly
// like the GEMM's TmaOperands. It needs C a multiple of TileK (64, or 128 for FP8: a k-tile is then
// TileK channels of one tap) and the strides, padding and dilated filter extent within what cuTensorMapEncodeIm2col accepts; the
// device API (conv/device/conv2d.hpp) picks it when they hold and keeps the gather otherwise.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/conv/implicit_gemm.h>
#include <tilefuse/conv/kernel/ktile_coordinates.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>
#include <tilefuse/gemm/kernel/sm90_row_map.h>

namespace tilefuse::conv::sm90 {

// The tile configs of the conv kernel: the GEMM's, with the producer's register budget raised for the
// gather state (TileM / 16 pixels of 3 registers, addresses, the tap) and the consumers' lowered to
// match. setmaxnreg moves registers only within what the block got at launch: 384 threads x 168
// (the __launch_bounds__(384, 1) allocation), not the SM's 64K. A split that asks for more makes
// setmaxnreg.inc wait forever (the first run hung with 96 / 208 = 65536; docs/notes/conv_sm90.md).
// TileK is 64 for 16-bit elements and 128 for FP8 ones (a k-tile row is one 128-byte swizzle row either
// way; Sm90ConvConfigFor below).
template <int TileM, int TileN, int Stages, int ProducerRegisters, int ConsumerRegisters,
          gemm::Sm90Schedule Schedule = gemm::Sm90Schedule::kCooperative, int TileK = 64>
struct Sm90ConvTileConfig : gemm::Sm90TileConfig<TileM, TileN, TileK, Stages, gemm::kSm90GroupRows, 32, Schedule> {
  static constexpr int kProducerRegisters = ProducerRegisters;
  static constexpr int kConsumerRegisters = ConsumerRegisters;
  static constexpr int kLaunchRegisters = (65536 / (128 * 3)) / 8 * 8;  // 168 per thread
  static_assert(kProducerRegisters * 128 + kConsumerRegisters * 256 <= kLaunchRegisters * 128 * 3,
                "setmaxnreg redistributes the block's launch allocation (384 x 168 registers), no more");
};

// 128 x 256: wide outputs with enough tiles (4 stages of 48 KiB).
using Sm90ConvLargeConfig = Sm90ConvTileConfig<128, 256, 4, 56, 224>;
// 128 x 128: K = 128 outputs, or too few 128 x 256 tiles for the SMs (6 stages of 32 KiB).
using Sm90ConvMediumConfig = Sm90ConvTileConfig<128, 128, 6, 88, 208>;
// 128 x 64: K = 64 outputs (8 stages of 24 KiB).
using Sm90ConvNarrowConfig = Sm90ConvTileConfig<128, 64, 8, 88, 208>;

// The im2col source has one producer thread with no gather state: the GEMM's split (40 / 232, exactly
// the launch allocation) and the same stage counts.
using Sm90ConvIm2colLargeConfig = Sm90ConvTileConfig<128, 256, 4, 40, 232>;
using Sm90ConvIm2colMediumConfig = Sm90ConvTileConfig<128, 128, 6, 40, 232>;
using Sm90ConvIm2colNarrowConfig = Sm90ConvTileConfig<128, 64, 8, 40, 232>;
// 128 x 160 (im2col source, 16-bit fprop): output channels in whole tiles where 128 and 256 leave a
// part-empty last tile (UNet's N = 320: 2.5 tiles of 128, 1.25 of 256; docs/notes/conv_sm90.md, the
// producer's per-k-tile arithmetic).
// Its B is K-major only (dgrad's and wgrad's MN-major B loads 64-wide blocks), and 160 columns are not
// whole 64-column packed-epilogue chunks, so trees that want the packed epilogue (the TMA residual) keep
// the other tiles. 5 stages of 36 KiB.
using Sm90ConvIm2colWideConfig = Sm90ConvTileConfig<128, 160, 5, 40, 232>;
// Ping-pong (im2col source only): each consumer warpgroup owns whole 128-row tiles and the two take
// turns on the tensor cores, so one's epilogue runs under the other's mainloop: for short-K layers
// (1x1 convolutions, a few k-tiles per tile), whose epilogue is most of a tile's time.
using Sm90ConvIm2colPingPongNarrowConfig = Sm90ConvTileConfig<128, 64, 8, 40, 232, gemm::Sm90Schedule::kPingPong>;
using Sm90ConvIm2colPingPongMediumConfig = Sm90ConvTileConfig<128, 128, 6, 40, 232, gemm::Sm90Schedule::kPingPong>;
// 64-row ping-pong tiles for wgrad (im2col source): its output has K rows, and 128-row tiles compute
// ResNet-50's K = 64 twice over; with half the rows per tile, the 1x1 layers fill the GPU with fewer
// splits, i.e. longer k-loops per block (cuDNN's wgrad runs 64x64 tiles with 13 stages:
// docs/notes/conv_sm90.md, 64-row tiles for wgrad). 12 stages of 16 KiB and 8 of 24 KiB.
using Sm90ConvIm2colPingPongShortConfig = Sm90ConvTileConfig<64, 64, 12, 40, 232, gemm::Sm90Schedule::kPingPong>;
using Sm90ConvIm2colPingPongShortWideConfig = Sm90ConvTileConfig<64, 128, 8, 40, 232, gemm::Sm90Schedule::kPingPong>;
// 64 x 256 ping-pong for 16-bit fprop: where 128 x 256 tiles leave the last wave half full (ResNet-50's
// #11: 200 tiles on 132 SMs), half-height tiles even it out. 5 stages of 40 KiB.
using Sm90ConvIm2colPingPongShortLargeConfig = Sm90ConvTileConfig<64, 256, 5, 40, 232, gemm::Sm90Schedule::kPingPong>;

// A conv config for the element type: the same tile in bytes, so FP8 (e4m3, e5m2) k-tiles are 128
// channels (the stage sizes, and so the stage counts, stay those of the 16-bit config).
template <class Element, class Cfg>
using Sm90ConvConfigFor =
    cuda::std::conditional_t<sizeof(Element) == 2, Cfg,
                             Sm90ConvTileConfig<Cfg::kTileM, Cfg::kTileN, Cfg::kStages, Cfg::kProducerRegisters,
                                                Cfg::kConsumerRegisters, Cfg::kSchedule, 128 / sizeof(Element)>>;

// FP8 with k-tiles of 64 channels (64-byte rows, 64-byte swizzle) and twice the stages (the same bytes
// in flight): for the im2col source when C is a multiple of 64 but not of 128 (ResNet-50's C = 64 layers,
// UNet's C = 320), where a 128-channel k-tile would span two filter taps and the gather would run
// instead (the gather made those layers slower in e4m3 than in bf16: docs/notes/conv_sm90.md, FP8 fprop).
template <class Cfg>
using Sm90ConvHalfK = Sm90ConvTileConfig<Cfg::kTileM, Cfg::kTileN, 2 * Cfg::kStages, Cfg::kProducerRegisters,
                                         Cfg::kConsumerRegisters, Cfg::kSchedule, 64>;

// A cooperative config whose fused trees with one 16-bit residual take the packed epilogue with the
// residual (and its one column vector) loaded by TMA from the producer (sm90_gemm.h kTmaAux): what
// Conv2d runs for such trees (fused ResNet-50 layers up to 21% faster: docs/notes/conv_sm90.md, the bias
// beside the TMA residual). Other trees compile as under Base.
template <class Base>
struct Sm90ConvTmaAux : Base {
  static constexpr bool kPackedLoads = true;
  static constexpr bool kTmaAux = true;
};

// fprop's and dgrad's A: tile rows m0 .. m0 + TileM of the activation's implicit matrix, channels c ..
// of filter tap (r, s). A pointwise problem (`tiled`: its implicit matrix is the tensor) loads them by
// the tiled map at (c, m0); the others by one im2col copy from tile row 0's window origin.
TILEFUSE_DEVICE inline void load_activation(char* smem, arch::TmaDescriptor const* map, cuda::std::uint64_t* full,
                                            bool tiled, int m0, WindowOrigin const& origin, int c, int r, int s,
                                            ConvGeometry const& g) {
  if (tiled) {
    arch::tma_load_3d(smem, map, full, c, m0, 0);
  } else {
    arch::tma_load_im2col_4d(smem, map, full, c, origin.w, origin.h, origin.n,
                             static_cast<cuda::std::uint16_t>(s * g.dilation_w),
                             static_cast<cuda::std::uint16_t>(r * g.dilation_h));
  }
}

// The single producer thread of a TMA source issues every copy of the block, so every instruction it
// spends per k-tile delays the copies (working the divisions out one k-tile ahead did not help; fewer
// instructions did). The loaders therefore step their coordinates from k-tile to k-tile (KTileTap,
// PixelWalk: the kernel asks for a tile's k-tiles in order, k0 = 0, TileK, ...) instead of dividing them
// out of k0 (docs/notes/conv_sm90.md, the producer's per-k-tile arithmetic).

// fprop's operand source for gemm::sm90::GemmKernel (see sm90_gemm.h for the interface).
template <class Element, class Config>
struct FpropGatherOperands {
  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kTileK = Config::kTileK;
  static constexpr int kProducerThreads = 128;
  static constexpr int kFullArrivals = kProducerThreads + 1;  // cp.async arrivals + thread 0's expect_tx
  static constexpr bool kGenericProxyWrites = true;           // cp.async writes A through the generic proxy
  static constexpr bool kMulticast = false;
  static constexpr bool kAMnMajor = false;
  static constexpr bool kBMnMajor = false;
  static constexpr int kRowBytes = kTileK * static_cast<int>(sizeof(Element));
  static constexpr int kABytes = kTileM * kRowBytes;
  static constexpr int kBBytes = kTileN * kRowBytes;
  static constexpr int kChunksPerRow = kRowBytes / 16;                   // 8
  static constexpr int kChunkElements = 16 / static_cast<int>(sizeof(Element));  // 8 (16-bit) or 16 (FP8) channels
  static constexpr int kRowStep = kProducerThreads / kChunksPerRow;      // 16 rows between a thread's chunks
  static constexpr int kRowsPerThread = kTileM / kRowStep;               // 8 for TileM = 128
  static_assert(kRowBytes == 128 && kTileM % kRowStep == 0, "k-tile rows are one 128-byte swizzle row");

  struct Params {
    arch::TmaDescriptor tma_b;  // w as (r*s*c, k', 1), box (64, TileN, 1), 128-byte swizzle
    ConvGeometry geometry;
    Element const* x = nullptr;
    gemm::sm90::OutputRowMap row_map;  // off, or where each output pixel goes (sm90_row_map.h)
  };

  TILEFUSE_DEVICE static void prefetch(Params const& p) { arch::tma_prefetch_descriptor(&p.tma_b); }

  struct Loader {
    int thread;
    int n0;
    int a_offset;  // bytes from a stage's base to this thread's first chunk (row t / 8, swizzled column)
    int column;    // elements from k0 to this thread's chunk
    ActivationGather::Pixel pixel[kRowsPerThread];

    TILEFUSE_DEVICE Loader(Params const& p, GemmCoord const&, int thread_, int m0, int n0_, int /*batch*/)
        : thread(thread_), n0(n0_) {
      int const chunk = thread % kChunksPerRow;
      int const row0 = thread / kChunksPerRow;
      // Rows row0 + 16 i all have row % 8 == row0 % 8: one swizzled column for all of them.
      a_offset = row0 * kRowBytes + ((chunk ^ (row0 % 8)) * 16);
      column = chunk * kChunkElements;
      // ActivationGather::pixel in 32-bit arithmetic (the device API checks N*P*Q < 2^31 - TileM).
      ConvGeometry const& g = p.geometry;
      int const pq_count = g.P * g.Q;
      int const pixels = g.N * pq_count;
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        int const m = m0 + row0 + i * kRowStep;
        ActivationGather::Pixel px;  // far outside unless m is an output pixel
        if (m < pixels) {
          int const n = m / pq_count;
          int const pq = m - n * pq_count;
          int const pp = pq / g.Q;
          px.nhw = n * g.H * g.W;
          px.h0 = pp * g.stride_h - g.pad_h;
          px.w0 = (pq - pp * g.Q) * g.stride_w - g.pad_w;
        }
        pixel[i] = px;
      }
    }

    TILEFUSE_DEVICE void load(Params const& p, char* a, char* b, cuda::std::uint64_t* full, int k0) const {
      if (thread == 0) {
        arch::mbarrier_arrive_expect_tx(full, kBBytes);
        arch::tma_load_3d(b, &p.tma_b, full, k0, n0, 0);
      }
      ActivationGather const gather{p.geometry};
      ActivationGather::Tap const tap = gather.tap(index_t{k0} + column);
      char* const dst = a + a_offset;
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        index_t const offset = gather.offset(pixel[i], tap);
        // A chunk outside x (padding, rows or taps past the end) is zero-filled without a read.
        arch::cp_async_16(dst + i * kRowStep * kRowBytes, offset >= 0 ? p.x + offset : p.x, offset >= 0 ? 16 : 0);
      }
      arch::cp_async_mbarrier_arrive_noinc(full);
    }
  };

  // No copy may be in flight when the producer's threads exit.
  TILEFUSE_DEVICE static void finish() { arch::cp_async_wait_all(); }
};

template <class Element, class Epilogue, class Config>
using FpropKernel = gemm::sm90::GemmKernel<Element, Epilogue, Config, FpropGatherOperands<Element, Config>>;

// fprop's TMA im2col operand source: one producer thread, per k-tile one im2col copy of x
// (TileM pixels x TileK channels of one filter tap, 128-byte swizzle: the layout TMA's tiled loads give
// the GEMM) and one tiled copy of w, both signalling the stage's full barrier by transaction bytes.
//
// k-tile k0 of r*s*c (C a multiple of TileK, so the tile lies in one tap): tap = k0 / C, c0 = k0 % C,
// (r, s) = (tap / S, tap % S). Tile row i is output pixel m0 + i: the tensor map's pixel box is the set
// of filter-window origins (h, w) = (p * stride_h - pad_h, q * stride_w - pad_w), lower corner -pad,
// upper corner pad - (filter - 1) * dilation, walked with the convolution's strides, so the copy
// starting at m0's origin visits m0, m0 + 1, ... across rows and images, adds the tap's offsets and
// zero-fills what falls in the padding or past the last image (rows past N*P*Q are never stored).
template <class Element, class Config>
struct FpropIm2colOperands : gemm::sm90::OneThreadTmaSource {
  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kTileK = Config::kTileK;
  static constexpr bool kMulticast = false;
  static constexpr bool kAMnMajor = false;
  static constexpr bool kBMnMajor = false;
  static constexpr int kRowBytes = kTileK * static_cast<int>(sizeof(Element));
  static constexpr int kABytes = kTileM * kRowBytes;
  static constexpr int kBBytes = kTileN * kRowBytes;
  static_assert(kRowBytes == 128 || kRowBytes == 64, "a k-tile row is one swizzle row: TileK channels of one pixel");

  struct Params {
    arch::TmaDescriptor tma_a;  // x as im2col (C, W, H, N), TileK channels x TileM pixels, 128-byte swizzle
    arch::TmaDescriptor tma_b;  // w as (r*s*c, k', 1), box (64, TileN, 1), 128-byte swizzle
    ConvGeometry geometry;
    int a_tiled = 0;            // 1 (1x1, stride 1, no padding): tma_a is x as the tiled map (C, N*H*W, 1)
    gemm::sm90::OutputRowMap row_map;  // off, or where each output pixel goes (sm90_row_map.h)
  };

  struct Loader {
    int m0, n0;
    WindowOrigin origin;  // tile row 0's
    KTileTap tap;         // the next k-tile's (stepped)

    TILEFUSE_DEVICE Loader(Params const& p, GemmCoord const&, int /*thread*/, int m0_, int n0_, int /*batch*/)
        : m0(m0_), n0(n0_), origin(WindowOrigin::of(p.geometry, m0_)) {}

    TILEFUSE_DEVICE void load(Params const& p, char* a, char* b, cuda::std::uint64_t* full, int k0) {
      ConvGeometry const& g = p.geometry;
      arch::mbarrier_arrive_expect_tx(full, kABytes + kBBytes);
      load_activation(a, &p.tma_a, full, p.a_tiled != 0, m0, origin, tap.c0, tap.r, tap.s, g);
      arch::tma_load_3d(b, &p.tma_b, full, k0, n0, 0);
      tap.advance(kTileK, g.C, g.S);
    }
  };
};

template <class Element, class Epilogue, class Config>
using FpropIm2colKernel = gemm::sm90::GemmKernel<Element, Epilogue, Config, FpropIm2colOperands<Element, Config>>;

// dgrad's TMA im2col operand source (stride 1): dx = conv(dy, w flipped and transposed), an fprop of dy
// with pad' = (filter - 1) * dilation - pad, whose filter tap (r', s') is w's tap (R-1-r', S-1-s') and
// whose "filter" for input channel c and output-gradient channel k is w[k][r][s][c]. The geometry in
// Params is that fprop's (FpropIm2colOperands' map over dy: H, W, C = P, Q, K of the problem; P, Q = H, W),
// so A loads exactly as fprop's. B is w with channels contiguous, which is MN-major for this GEMM
// (N = c): per k-tile (tap, 64 values of k), TileN / 64 tiled loads of w as the 3D tensor map (C, R*S, K),
// box (64 c, 1 tap, 64 k), each 64 k-rows of 64 channels in 128-byte swizzle, 8 KiB apart: the layout
// arch::smem_descriptor_mn_major_sw128 describes (kBMnMajor). Channels past C are zero-filled by TMA.
// Needs K a multiple of 64 (a k-tile is 64 gradient channels of one tap) and C a multiple of 8 (w's rows
// of 16-byte multiples); the device API checks.
template <class Element, class Config>
struct DgradIm2colOperands : gemm::sm90::OneThreadTmaSource {
  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kTileK = Config::kTileK;
  static constexpr bool kMulticast = false;
  static constexpr bool kAMnMajor = false;
  static constexpr bool kBMnMajor = true;
  static constexpr int kRowBytes = kTileK * static_cast<int>(sizeof(Element));
  static constexpr int kABytes = kTileM * kRowBytes;
  static constexpr int kBBytes = kTileN * kRowBytes;
  static constexpr int kBBlockBytes = kTileK * 128;  // one 64-channel block of B: TileK rows of 128 bytes
  static_assert(sizeof(Element) == 2 && kRowBytes == 128 && kTileN % 64 == 0,
                "16-bit elements, one 128-byte swizzle row per k-tile row, whole 64-channel blocks of B");

  struct Params {
    arch::TmaDescriptor tma_a;  // dy as im2col (K, Q, P, N), 64 channels x TileM pixels, 128-byte swizzle
    arch::TmaDescriptor tma_b;  // w as (C, R*S, K), box (64, 1, 64), 128-byte swizzle
    ConvGeometry geometry;      // the equivalent fprop's (see above)
    int a_tiled = 0;            // 1 (1x1, stride 1, no padding): tma_a is dy as the tiled map (K, N*P*Q, 1)
  };

  struct Loader {
    int m0, n0;
    WindowOrigin origin;  // tile row 0's, in dy (the equivalent fprop's strides are 1)
    KTileTap tap;         // the next k-tile's (stepped; g.C is the problem's K)

    TILEFUSE_DEVICE Loader(Params const& p, GemmCoord const&, int /*thread*/, int m0_, int n0_, int /*batch*/)
        : m0(m0_), n0(n0_), origin(WindowOrigin::of(p.geometry, m0_)) {}

    TILEFUSE_DEVICE void load(Params const& p, char* a, char* b, cuda::std::uint64_t* full, int k0) {
      ConvGeometry const& g = p.geometry;
      int const w_tap = g.R * g.S - 1 - tap.tap;  // w's tap (R-1-r, S-1-s)
      arch::mbarrier_arrive_expect_tx(full, kABytes + kBBytes);
      load_activation(a, &p.tma_a, full, p.a_tiled != 0, m0, origin, tap.c0, tap.r, tap.s, g);
#pragma unroll
      for (int j = 0; j < kTileN / 64; ++j) {
        arch::tma_load_3d(b + j * kBBlockBytes, &p.tma_b, full, n0 + 64 * j, w_tap, tap.c0);
      }
      tap.advance(kTileK, g.C, g.S);
    }
  };
};

template <class Element, class Epilogue, class Config>
using DgradIm2colKernel = gemm::sm90::GemmKernel<Element, Epilogue, Config, DgradIm2colOperands<Element, Config>>;

// wgrad's operand source: dw (K x R*S*C) = dy^T (K x N*P*Q) * im2col(x) (N*P*Q x R*S*C), both operands
// MN-major (their contiguous dimension is the output's, channels, not the reduction's, pixels):
//   A: per k-tile of 64 output pixels, TileM / 64 tiled loads of dy as the 3D tensor map (K, N*P*Q, 1),
//      box (64 channels, 64 pixels, 1): each 64 pixel-rows of 64 gradient channels (kAMnMajor);
//   B: TileN / 64 im2col loads of x (the fprop's map, 64 pixels x 64 channels per copy): block j holds
//      columns n0 + 64 j .. + 63 of r*s*c, i.e. 64 channels of one tap (C a multiple of 64), for the
//      k-tile's 64 output pixels (kBMnMajor). Blocks past r*s*c load the last tap (their columns are
//      never stored). A 1x1 filter with stride 1 and no padding (x_tiled) has im2col(x) = x, so x
//      loads by a tiled map (C, N*H*W, 1), box (64, 64, 1), like dy, and the producer skips the pixel
//      arithmetic (ResNet-50's 1x1 wgrad layers 15-25% faster; docs/notes/conv_sm90.md).
// Parallel split-K as a batch: batch index b reduces pixels [b * k_per_split, (b + 1) * k_per_split) (the
// kernel's problem.k is k_per_split, a multiple of 64) into its own fp32 partial; pixels past N*P*Q are
// zeros in both operands. Any strides, padding and dilation the im2col tensor map accepts.
template <class Element, class Config>
struct WgradOperands : gemm::sm90::OneThreadTmaSource {
  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kTileK = Config::kTileK;
  static constexpr bool kMulticast = false;
  static constexpr bool kAMnMajor = true;
  static constexpr bool kBMnMajor = true;
  static constexpr int kRowBytes = kTileK * static_cast<int>(sizeof(Element));
  static constexpr int kABytes = kTileM * kRowBytes;
  static constexpr int kBBytes = kTileN * kRowBytes;
  static constexpr int kBlockBytes = kTileK * 128;  // one 64-wide block: TileK rows of 128 bytes
  static_assert(sizeof(Element) == 2 && kRowBytes == 128 && kTileM % 64 == 0 && kTileN % 64 == 0,
                "16-bit elements, 64 pixels per k-tile, whole 64-wide blocks of A and B");

  struct Params {
    arch::TmaDescriptor tma_a;  // dy as (K, N*P*Q, 1), box (64, 64, 1), 128-byte swizzle
    arch::TmaDescriptor tma_b;  // x as im2col (C, W, H, N), 64 channels x 64 pixels, 128-byte swizzle
    ConvGeometry geometry;
    int k_per_split = 0;        // output pixels per batch entry (split), a multiple of TileK
    int x_tiled = 0;            // 1: tma_b is x as the tiled map (C, N*H*W, 1), box (64, 64, 1)
  };

  struct Loader {
    static constexpr int kBlocksN = kTileN / 64;
    int m0, n0, first_pixel;
    // Per B block (fixed for the tile): its first channel and its tap's (s * dilation_w, r * dilation_h),
    // worked out once here. One producer thread issues every load, and its integer divisions between a
    // stage freeing and the next copies were this kernel's bottleneck (docs/notes/conv_sm90.md, the Hopper
    // wgrad's speed).
    int c0[kBlocksN];
    cuda::std::uint16_t offset_w[kBlocksN], offset_h[kBlocksN];
    PixelWalk walk;  // the next k-tile's first output pixel (im2col only: x_tiled loads by pixel index)

    TILEFUSE_DEVICE Loader(Params const& p, GemmCoord const&, int /*thread*/, int m0_, int n0_, int batch)
        : m0(m0_), n0(n0_), first_pixel(batch * p.k_per_split) {
      if (p.x_tiled) return;  // loads x by pixel index: no taps, no window origins
      ConvGeometry const& g = p.geometry;
      int const taps = g.R * g.S;
#pragma unroll
      for (int j = 0; j < kBlocksN; ++j) {
        int const column = n0 + 64 * j;
        int tap = column / g.C;
        c0[j] = column - tap * g.C;
        if (tap >= taps) tap = taps - 1, c0[j] = 0;
        int const r = tap / g.S;
        offset_w[j] = static_cast<cuda::std::uint16_t>((tap - r * g.S) * g.dilation_w);
        offset_h[j] = static_cast<cuda::std::uint16_t>(r * g.dilation_h);
      }
      walk = PixelWalk(g, first_pixel, kTileK);
    }

    TILEFUSE_DEVICE void load(Params const& p, char* a, char* b, cuda::std::uint64_t* full, int k0) {
      int const pixel = first_pixel + k0;
      arch::mbarrier_arrive_expect_tx(full, kABytes + kBBytes);
#pragma unroll
      for (int j = 0; j < kTileM / 64; ++j) arch::tma_load_3d(a + j * kBlockBytes, &p.tma_a, full, m0 + 64 * j, pixel, 0);
      if (p.x_tiled) {
#pragma unroll
        for (int j = 0; j < kBlocksN; ++j) arch::tma_load_3d(b + j * kBlockBytes, &p.tma_b, full, n0 + 64 * j, pixel, 0);
        return;
      }
      ConvGeometry const& g = p.geometry;
      WindowOrigin const o = walk.origin(g);
#pragma unroll
      for (int j = 0; j < kBlocksN; ++j) {
        arch::tma_load_im2col_4d(b + j * kBlockBytes, &p.tma_b, full, c0[j], o.w, o.h, o.n, offset_w[j], offset_h[j]);
      }
      walk.advance(g);
    }
  };
};

template <class Element, class Epilogue, class Config>
using WgradKernel = gemm::sm90::GemmKernel<Element, Epilogue, Config, WgradOperands<Element, Config>>;

}  // namespace tilefuse::conv::sm90
