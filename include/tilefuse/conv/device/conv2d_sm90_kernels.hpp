// Which Hopper conv kernel runs a Conv2d plan: the kinds of problem the Hopper kernel takes (16-bit or FP8
// fprop, 16-bit dgrad and wgrad), each planned tile and operand source mapped to its config and kernel type
// (a residual by TMA where the tree and the tile allow it), and whether this binary and device can run it.
// conv::Conv2d (conv2d.hpp) dispatches through it. Host code; include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <type_traits>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/conv/device/conv2d_sm90_launch.hpp>
#include <tilefuse/conv/kernel/sm90_implicit_gemm.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>

namespace tilefuse::conv {

namespace detail {
// The launch tables (conv2d_sm90_launch.hpp, conv2d_plan.hpp), which spell the kernel for the Python JIT,
// agree with the configs ConvSm90Kernels::dispatch_sm90 instantiates: tile shape and schedule of each tile
// and source.
template <class Cfg>
constexpr bool config_is(ConvSm90Tile tile, bool im2col) {
  return tile_shape_of(tile)[0] == Cfg::kTileM && tile_shape_of(tile)[1] == Cfg::kTileN &&
         conv_sm90_cooperative(tile, im2col) == (Cfg::kSchedule == gemm::Sm90Schedule::kCooperative);
}
static_assert(config_is<sm90::Sm90ConvLargeConfig>(ConvSm90Tile::kLarge, false) &&
              config_is<sm90::Sm90ConvMediumConfig>(ConvSm90Tile::kPingPongMedium, false) &&
              config_is<sm90::Sm90ConvNarrowConfig>(ConvSm90Tile::kPingPongNarrow, false) &&
              config_is<sm90::Sm90ConvIm2colLargeConfig>(ConvSm90Tile::kLarge, true) &&
              config_is<sm90::Sm90ConvIm2colMediumConfig>(ConvSm90Tile::kMedium, true) &&
              config_is<sm90::Sm90ConvIm2colNarrowConfig>(ConvSm90Tile::kNarrow, true) &&
              config_is<sm90::Sm90ConvIm2colPingPongNarrowConfig>(ConvSm90Tile::kPingPongNarrow, true) &&
              config_is<sm90::Sm90ConvIm2colPingPongMediumConfig>(ConvSm90Tile::kPingPongMedium, true) &&
              config_is<sm90::Sm90ConvIm2colWideConfig>(ConvSm90Tile::kWide, true) &&
              config_is<sm90::Sm90ConvIm2colPingPongShortConfig>(ConvSm90Tile::kShort, true) &&
              config_is<sm90::Sm90ConvIm2colPingPongShortWideConfig>(ConvSm90Tile::kShortWide, true) &&
              config_is<sm90::Sm90ConvIm2colPingPongShortLargeConfig>(ConvSm90Tile::kShortLarge, true),
              "conv2d_plan.hpp's tile shapes or conv2d_sm90_launch.hpp's schedules differ from the configs");
}  // namespace detail

// kAutoConfig: the Conv2d uses the default config without an input transform (an explicit Sm80 config or
// mainloop fusion keeps it on the sm80 path).
template <class Element, ConvMode kMode, class Epilogue, bool kAutoConfig>
struct ConvSm90Kernels {
  static constexpr bool kFp8 = std::is_same_v<Element, float_e4m3_t> || std::is_same_v<Element, float_e5m2_t>;
  static constexpr bool k16Bit = std::is_same_v<Element, bfloat16_t> || std::is_same_v<Element, half_t>;
  // dgrad (16-bit, stride 1: an fprop of dy over the flipped, transposed filter, sm90::DgradIm2colOperands).
  static constexpr bool kDgradSm90 = kMode == ConvMode::kDgrad && k16Bit;
  // wgrad (16-bit): dy^T x im2col(x), both operands MN-major, split-K as a batch (sm90::WgradOperands).
  static constexpr bool kWgradSm90 = kMode == ConvMode::kWgrad && k16Bit;
  static constexpr bool kTmaOnlySm90 = kDgradSm90 || kWgradSm90;  // no gathering source
  static constexpr bool kHopperCapable =
      kAutoConfig && ((kMode == ConvMode::kFprop && (k16Bit || kFp8)) || kTmaOnlySm90);
  using Sm90Tile = ConvSm90Tile;

  // Calls f.template operator()<Cfg, kIm2col>() for the Hopper kernel of the tile and the source (the
  // config for Element: FP8 k-tiles are 128 channels, or 64 with half_k).
  template <class Cfg>
  using ConfigFor = sm90::Sm90ConvConfigFor<Element, Cfg>;
  template <class Cfg>
  using HalfKConfigFor = sm90::Sm90ConvHalfK<ConfigFor<Cfg>>;
  template <class F>
  static auto dispatch_sm90(Sm90Tile tile, bool im2col, bool half_k, F&& f) {
    if constexpr (kFp8) {
      if (im2col && half_k) return dispatch_im2col<HalfKConfigFor>(tile, f);
    } else {
      (void)half_k;
    }
    if constexpr (kTmaOnlySm90) {
      (void)im2col;  // dgrad and wgrad have the im2col source only (plan_hopper)
      return dispatch_im2col<ConfigFor>(tile, f);
    } else {
      if (im2col) return dispatch_im2col<ConfigFor>(tile, f);
      switch (tile) {
        case Sm90Tile::kNarrow:
        case Sm90Tile::kPingPongNarrow: return f.template operator()<ConfigFor<sm90::Sm90ConvNarrowConfig>, false>();
        case Sm90Tile::kMedium:
        case Sm90Tile::kPingPongMedium: return f.template operator()<ConfigFor<sm90::Sm90ConvMediumConfig>, false>();
        default: return f.template operator()<ConfigFor<sm90::Sm90ConvLargeConfig>, false>();
      }
    }
  }
  // The im2col source's tiles, each config mapped by Of (ConfigFor, or HalfKConfigFor).
  template <template <class> class Of, class F>
  static auto dispatch_im2col(Sm90Tile tile, F& f) {
    switch (tile) {
      case Sm90Tile::kNarrow: return f.template operator()<Of<sm90::Sm90ConvIm2colNarrowConfig>, true>();
      case Sm90Tile::kMedium: return f.template operator()<Of<sm90::Sm90ConvIm2colMediumConfig>, true>();
      case Sm90Tile::kPingPongNarrow: return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongNarrowConfig>, true>();
      case Sm90Tile::kPingPongMedium: return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongMediumConfig>, true>();
      case Sm90Tile::kWide:
        if constexpr (kWideTile) return f.template operator()<Of<sm90::Sm90ConvIm2colWideConfig>, true>();
        [[fallthrough]];  // never planned where it does not exist (plan_hopper)
      case Sm90Tile::kShort:
        if constexpr (kWgradSm90) return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongShortConfig>, true>();
        [[fallthrough]];  // wgrad only (choose_wgrad_tile, forced_sm90_tile)
      case Sm90Tile::kShortWide:
        if constexpr (kWgradSm90) return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongShortWideConfig>, true>();
        [[fallthrough]];
      case Sm90Tile::kShortLarge:
        if constexpr (kShortFpropTile) return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongShortLargeConfig>, true>();
        [[fallthrough]];  // 16-bit fprop only (choose_sm90_tile, plan_hopper)
      default: return f.template operator()<Of<sm90::Sm90ConvIm2colLargeConfig>, true>();
    }
  }

  template <class Cfg, bool kIm2col>
  using Sm90KernelOf = std::conditional_t<
      kWgradSm90, sm90::WgradKernel<Element, Epilogue, Cfg>,
      std::conditional_t<kDgradSm90, sm90::DgradIm2colKernel<Element, Epilogue, Cfg>,
      std::conditional_t<kIm2col, sm90::FpropIm2colKernel<Element, Epilogue, Cfg>, sm90::FpropKernel<Element, Epilogue, Cfg>>>>;
  // Trees with one 16-bit residual (conv + bias + residual + ReLU) load it by TMA on the cooperative
  // tiles and fprop's 64x256 ping-pong tile (Sm90ConvTmaAux; the residual must be 16-byte aligned,
  // plan_hopper checks); others, and the 128-row ping-pong tiles, as configured.
  static constexpr bool residual_by_tma() {
    if constexpr (kHopperCapable) {
      return Sm90KernelOf<sm90::Sm90ConvTmaAux<ConfigFor<sm90::Sm90ConvIm2colLargeConfig>>, true>::kTmaAux;
    } else {
      return false;
    }
  }
  static constexpr bool kResidualByTma = residual_by_tma();
  // Where the 128x160 tile exists (Sm90ConvIm2colWideConfig): 16-bit fprop, no TMA residual.
  static constexpr bool kWideTile = kHopperCapable && !kFp8 && !kTmaOnlySm90 && !kResidualByTma;
  // Where the 64x256 tile exists (Sm90ConvIm2colPingPongShortLargeConfig): 16-bit fprop (a residual
  // comes by TMA there too, its sub-tiles read by the warpgroup that owns the tile).
  static constexpr bool kShortFpropTile = kHopperCapable && !kFp8 && !kTmaOnlySm90;
  template <class Cfg>
  using Sm90ConfigFor =
      std::conditional_t<kResidualByTma && conv_sm90_residual_config(kMode, Cfg::kSchedule == gemm::Sm90Schedule::kCooperative,
                                                                     Cfg::kTileM),
                         sm90::Sm90ConvTmaAux<Cfg>, Cfg>;
  template <class Cfg, bool kIm2col>
  using Sm90Kernel = Sm90KernelOf<Sm90ConfigFor<Cfg>, kIm2col>;

  template <class Cfg, bool kIm2col>
  static void const* sm90_kernel_address() {
    return reinterpret_cast<void const*>(&gemm::sm90::sm90_gemm_kernel<Sm90Kernel<Cfg, kIm2col>>);
  }

  // The current device is an sm_90, the binary holds the kernel's sm_90a code, and its shared memory
  // fits. Cached per thread and device (attribute queries only).
  template <class Cfg, bool kIm2col>
  static Status sm90_ready() {
    thread_local int cached_device = -1;
    thread_local Status cached;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return not_supported("no CUDA device is available");
    }
    if (device == cached_device) return cached;
    auto const check = [device]() -> Status {
      int major = 0, minor = 0, smem_optin = 0;
      if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
          cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
          cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return not_supported("the device's attributes could not be read");
      }
      if (major != 9 || minor != 0) {
        return not_supported("device ", device, " is sm_", major, minor, ", and the Hopper kernel runs on sm_90 only");
      }
      cudaFuncAttributes attributes{};
      if (cudaFuncGetAttributes(&attributes, sm90_kernel_address<Cfg, kIm2col>()) != cudaSuccess) {
        (void)cudaGetLastError();
        return not_supported("this binary has no code of the Hopper kernel for device ", device,
                             " (build with 90a in TILEFUSE_CUDA_ARCHS)");
      }
      if (attributes.binaryVersion != 90) {
        return not_supported("the Hopper kernel's code is for sm_", attributes.binaryVersion,
                             ", not sm_90a (build with 90a in TILEFUSE_CUDA_ARCHS)");
      }
      if (Sm90Kernel<Cfg, kIm2col>::kSmemBytes > smem_optin) {
        return not_supported("the Hopper kernel needs ", Sm90Kernel<Cfg, kIm2col>::kSmemBytes,
                             " bytes of shared memory, and device ", device, " allows ", smem_optin);
      }
      return {};
    };
    Status const s = check();
    cached_device = device;
    cached = s;
    return s;
  }
};

}  // namespace tilefuse::conv
