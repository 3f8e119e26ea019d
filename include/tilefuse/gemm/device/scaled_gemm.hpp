// gemm::ScaledGemm: the FP8 scaled GEMM of torch._scaled_mm on the Hopper kernel (GemmSm90).
//   D = convert<ElementOut>(scale_result * ((A * scale_a) (B * scale_b) + bias))
// A: m x k row-major, B: k x n column-major (both K-major, as FP8 wgmma needs), FP8 (e4m3 or e5m2;
// ElementB, the last template argument, when B's type differs: e4m3 x e5m2 or e5m2 x e4m3, as torch
// accepts), fp32 accumulation; D: m x n row-major.
//
// The scales of the per-tensor and row-wise modes are constant along K, so they factor out of the sum
// and are applied by the epilogue tree on the fp32 accumulator:
//   per-tensor   acc * scale_a * scale_b              (two device scalars, as torch passes them)
//   row-wise     acc * scale_a[row] * scale_b[col]    (m and n fp32 values)
// Accumulation: kPromoted (torch's default, use_fast_accum = false) adds every k-tile's tensor-core
// sum (128 of K) into fp32 registers, on a 128 x 128 tile (Sm90Fp8PromotedConfig); kFast lets the
// tensor cores accumulate the whole K (their FP8 accumulation keeps fewer bits than fp32), on the
// cooperative tile the wave model picks (Sm90AutoConfig: 128 x 256 for large problems), except for
// row-wise scales with short K (at most kRowWisePingPongMaxKTiles k-tiles), which run the 128 x 128
// ping-pong kernel (Sm90Fp8PingPongConfig): its epilogue, which loads the two scale vectors, runs under
// the other warpgroup's mainloop (16384x8192x1024: 0.2658-0.2728 ms against 0.2845-0.2946 for the
// cooperative tile). Per-tensor keeps the cooperative tile everywhere (docs/notes/gemm_fp8.md).
// Block-wise scales (A 1 x 128 along K, B 128 x 128; torch's layouts: scale_a M x ceil(K/128) M-major,
// scale_b ceil(K/128) x ceil(N/128) K-block-major) change along K, so the mainloop applies them: every
// k-tile is promoted as acc += partial * scale_a[row, kb] * scale_b[kb, nb] (Sm90Fp8BlockScaledConfig,
// 128 x 128 tiles); the epilogue then adds the bias and converts.
//
// The problem is validated by check_scaled_gemm (scaled_gemm_problem.hpp: torch's rules, each refusal
// a sentence), then by GemmSm90 (device, alignment for TMA).
// Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include <tilefuse/core/data_type.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/reduction_init.h>
#include <tilefuse/epilogue/sinks.h>
#include <tilefuse/gemm/device/gemm_plan.hpp>
#include <tilefuse/gemm/device/gemm_sm90.hpp>
#include <tilefuse/gemm/device/gemm_sm90_auto.hpp>
#include <tilefuse/gemm/scaled_gemm_problem.hpp>
#include <tilefuse/runtime/pointer_check.hpp>

namespace tilefuse::gemm {

enum class Fp8Accumulation { kPromoted, kFast };

namespace detail {

// The epilogue tree of one scaled GEMM: scales, then bias, then (kAmax) the per-row max |y| of that
// value, then scale_result (fp8 outputs). Block-wise scales are applied by the mainloop (Sm90BlockScaled),
// so its tree starts from them.
template <class ElementOut, ScalingMode Mode, bool kHasBias, class BiasElement, bool kAmax = false>
struct ScaledGemmTree {
  using ScaleA = std::conditional_t<Mode == ScalingMode::kPerTensor, epilogue::Scalar<"scale_a">,
                                    epilogue::ColBroadcast<"scale_a", float>>;
  using ScaleB = std::conditional_t<Mode == ScalingMode::kPerTensor, epilogue::Scalar<"scale_b">,
                                    epilogue::RowBroadcast<"scale_b", float>>;
  using Scaled = std::conditional_t<Mode == ScalingMode::kBlockWise, epilogue::Acc,
                                    epilogue::Mul<epilogue::Mul<epilogue::Acc, ScaleA>, ScaleB>>;
  using Biased = std::conditional_t<kHasBias, epilogue::Add<Scaled, epilogue::RowBroadcast<"bias", BiasElement>>, Scaled>;
  // NOTES: per row, not per column: a row reduction combines each visited vector before its one atomic
  // (8-16 values), a column reduction every element. Per column, amax made the 8192^3 GEMM 1.8x slower
  // (docs/notes/gemm_fp8.md, the amax output).
  using Reduced = std::conditional_t<kAmax, epilogue::RowReduce<"amax", epilogue::reduce::AbsMax, Biased>, Biased>;
  static constexpr bool kFp8Out = sizeof(ElementOut) == 1;
  using Result = std::conditional_t<kFp8Out, epilogue::Mul<Reduced, epilogue::Scalar<"scale_result">>, Reduced>;
  using Tree = epilogue::Store<"D", ElementOut, Result>;
};

// How a GemmSm90 config accumulates FP8 products (the auto config picks fast-accumulation tiles).
template <class Config>
struct AccumulationOf {
  static constexpr bool kPromotes = Config::kPromoteEveryKTile;
  static constexpr int kInterval = Config::kPromoteInterval;  // k-tiles between promotions
  static constexpr bool kBlockScaled = Config::kBlockScaled;   // block-wise scales in the mainloop
};
template <>
struct AccumulationOf<Sm90AutoConfig> {
  static constexpr bool kPromotes = false;
  static constexpr int kInterval = 1;
  static constexpr bool kBlockScaled = false;
};

}  // namespace detail

// BiasElement: torch's rule is the output type for bf16 / fp16 outputs (bf16 or fp16 for fp8 ones;
// none for fp32). ConfigOverride: a GemmSm90 config in place of the accumulation's default (e.g.
// Sm90Fp8PingPongConfig for fast accumulation; a promoted one must be Sm90Promoted<...>).
// kAmax: the call also writes amax = max |y| over D, y the value before scale_result and the
// conversion (an FP8 recipe's next scale; NaN propagates): the epilogue reduces each row
// (RowReduce<"amax", AbsMax>) into a stream-ordered temporary of m floats, which one more block reduces.
template <class ElementAB, class ElementOut, ScalingMode Mode, bool kHasBias = false,
          Fp8Accumulation Accumulation = Fp8Accumulation::kPromoted,
          class BiasElement = std::conditional_t<sizeof(ElementOut) == 2, ElementOut, bfloat16_t>,
          class ConfigOverride = void, class ElementB = ElementAB, bool kAmax = false>
class ScaledGemm {
  static_assert(std::is_same_v<ElementAB, float_e4m3_t> || std::is_same_v<ElementAB, float_e5m2_t>,
                "ScaledGemm takes float_e4m3_t or float_e5m2_t operands");
  static_assert(std::is_same_v<ElementB, float_e4m3_t> || std::is_same_v<ElementB, float_e5m2_t>,
                "ScaledGemm takes float_e4m3_t or float_e5m2_t operands");
  static_assert(!(kHasBias && std::is_same_v<ElementOut, float>),
                "ScaledGemm: torch._scaled_mm takes no bias with a float32 output; add it afterwards");

 public:
  using Tree = typename detail::ScaledGemmTree<ElementOut, Mode, kHasBias, BiasElement, kAmax>::Tree;
  static_assert(Mode != ScalingMode::kBlockWise || Accumulation == Fp8Accumulation::kPromoted,
                "ScaledGemm: block-wise scales are applied at each k-tile's promotion; use Fp8Accumulation::kPromoted");
  using DefaultConfig = std::conditional_t<
      Mode == ScalingMode::kBlockWise, Sm90Fp8BlockScaledConfig,
      std::conditional_t<Accumulation == Fp8Accumulation::kPromoted, Sm90Fp8PromotedConfig, Sm90AutoConfig>>;
  using Config = std::conditional_t<std::is_void_v<ConfigOverride>, DefaultConfig, ConfigOverride>;
  static_assert(detail::AccumulationOf<Config>::kBlockScaled == (Mode == ScalingMode::kBlockWise),
                "ScaledGemm: block-wise scales need a Sm90BlockScaled config, and only they do");
  static_assert(detail::AccumulationOf<Config>::kPromotes == (Accumulation == Fp8Accumulation::kPromoted),
                "ScaledGemm: promoted accumulation needs an Sm90Promoted<...> config, fast accumulation one without");
  using Operation = GemmSm90<ElementAB, RowMajor, ColumnMajor, Tree, Config, ElementB>;
  // Row-wise fast accumulation on the default config: short K runs ping-pong (picks_ping_pong).
  static constexpr bool kMayPingPong =
      Mode == ScalingMode::kRowWise && Accumulation == Fp8Accumulation::kFast && std::is_void_v<ConfigOverride>;
  using PingPongOperation = GemmSm90<ElementAB, RowMajor, ColumnMajor, Tree, Sm90Fp8PingPongConfig, ElementB>;
  static constexpr bool kFp8Out = sizeof(ElementOut) == 1;

  struct Arguments {
    index_t m = 0, n = 0, k = 0;
    ElementAB const* a = nullptr;  // m x k, row-major
    index_t lda = epilogue::kPacked;
    ElementB const* b = nullptr;  // k x n, column-major (torch: mat2 = W.t() of a row-major n x k W)
    index_t ldb = epilogue::kPacked;
    float const* scale_a = nullptr;  // device: 1 value (per-tensor), m (row-wise), m x ceil(k/128) (block-wise)
    float const* scale_b = nullptr;  // device: 1 value (per-tensor), n (row-wise), ceil(k/128) x ceil(n/128)
    BiasElement const* bias = nullptr;   // device: n values, when kHasBias
    float const* scale_result = nullptr;  // device: 1 value; fp8 outputs only, optional (1 when null)
    ElementOut* d = nullptr;  // m x n, row-major
    index_t ldd = epilogue::kPacked;
    float* amax = nullptr;  // device, one value (kAmax only): max |y| over D, before scale_result
  };

  static Status can_implement(Arguments const& args) {
    typename Operation::Arguments op_args;
    TILEFUSE_RETURN_IF_ERROR(to_operation(args, &op_args));
    if (picks_ping_pong(args)) return PingPongOperation::can_implement(op_args);
    return Operation::can_implement(op_args);
  }

  static Status run(Arguments const& args, cudaStream_t stream) {
    typename Operation::Arguments op_args;
    TILEFUSE_RETURN_IF_ERROR(to_operation(args, &op_args));
    if constexpr (kAmax) {
      return run_with_amax(args, op_args, stream);
    } else {
      return run_operation(args, op_args, stream);
    }
  }

  static Status run_operation(Arguments const& args, typename Operation::Arguments const& op_args,
                              cudaStream_t stream) {
    if (picks_ping_pong(args)) return PingPongOperation::run(op_args, nullptr, stream);
    return Operation::run(op_args, nullptr, stream);
  }

  // The per-row maxima go to a stream-ordered temporary (GemmSm90 starts them at 0), then one block of
  // reduce_vector_kernel writes their maximum into args.amax.
  static Status run_with_amax(Arguments const& args, typename Operation::Arguments op_args, cudaStream_t stream) {
    float* rows = nullptr;
    if (cudaError_t const e = cudaMallocAsync(reinterpret_cast<void**>(&rows), sizeof(float) * args.m, stream);
        e != cudaSuccess) {
      return {StatusCode::kCudaError, status_message("scaled_gemm: allocating the amax rows (", args.m,
                                                     " floats) failed: ", cudaGetErrorString(e))};
    }
    op_args.epilogue.set("amax", rows);
    Status status = run_operation(args, op_args, stream);
    if (status.ok()) {
      float const* in = rows;
      index_t length = args.m;
      float* out = args.amax;
      void* kernel_args[] = {&in, &length, &out};
      LaunchConfig config;
      config.grid = dim3(1);
      config.block = dim3(1024);
      config.stream = stream;
      status = host_adapter().launch(
          config, reinterpret_cast<void const*>(&epilogue::reduce_vector_kernel<epilogue::reduce::AbsMax>), kernel_args);
    }
    cudaError_t const freed = cudaFreeAsync(rows, stream);
    if (status.ok() && freed != cudaSuccess) {
      return {StatusCode::kCudaError,
              status_message("scaled_gemm: freeing the amax rows failed: ", cudaGetErrorString(freed))};
    }
    return status;
  }

  // Whether the default config's row-wise fast accumulation runs the ping-pong kernel: K of at most
  // kRowWisePingPongMaxKTiles k-tiles of 128 (gemm_plan.hpp, which the Python package asks too).
  static bool picks_ping_pong(Arguments const& args) {
    return kMayPingPong && scaled_gemm_picks_ping_pong(Fp8Scaling::kRowWise, true, args.k);
  }

  static std::string describe(Arguments const& args) {
    typename Operation::Arguments op_args;
    Status const s = to_operation(args, &op_args);
    if (!s.ok()) return "cannot run: " + s.message();
    return std::string("FP8 scaled GEMM, ") + name_of(Mode) + " scales, " +
           (Accumulation == Fp8Accumulation::kPromoted
                ? "fp32 promotion every " + std::to_string(128 * detail::AccumulationOf<Config>::kInterval) + " of K"
                : std::string("fast accumulation")) +
           ": " +
           (picks_ping_pong(args) ? PingPongOperation::describe(op_args) + " (picked for row-wise scales with short K)"
                                  : Operation::describe(op_args));
  }

 private:
  // torch's rules on the problem (check_scaled_gemm), the scale pointers, then GemmSm90's arguments.
  static Status to_operation(Arguments const& args, typename Operation::Arguments* out) {
    ScaledGemmProblem p;
    index_t const lda = args.lda == epilogue::kPacked ? args.k : args.lda;
    index_t const ldb = args.ldb == epilogue::kPacked ? args.k : args.ldb;
    p.a = TensorDesc{data_type_of<ElementAB>, args.m, args.k, lda, 1};
    p.b = TensorDesc{data_type_of<ElementB>, args.k, args.n, 1, ldb};
    p.scaling = Mode;
    ScaleShape const sa = scale_a_shape(Mode, args.m, args.k);
    ScaleShape const sb = scale_b_shape(Mode, args.k, args.n);
    ScaleStrides const sa_strides = scale_a_strides(Mode, args.m);
    ScaleStrides const sb_strides = scale_b_strides(Mode, args.k);
    p.scale_a = TensorDesc{DataType::kF32, sa.rows, sa.cols, sa_strides.row_stride, sa_strides.col_stride};
    p.scale_b = TensorDesc{DataType::kF32, sb.rows, sb.cols, sb_strides.row_stride, sb_strides.col_stride};
    p.out_dtype = data_type_of<ElementOut>;
    if constexpr (kHasBias) p.bias = TensorDesc{data_type_of<BiasElement>, 1, args.n, args.n, 1};
    if (args.scale_result != nullptr) p.scale_result = TensorDesc{DataType::kF32, 1, 1, 1, 1};
    p.use_fast_accum = Accumulation == Fp8Accumulation::kFast;
    TILEFUSE_RETURN_IF_ERROR(check_scaled_gemm(p));

    TILEFUSE_RETURN_IF_ERROR(check_device_pointer("scaled_gemm", "scale_a", args.scale_a));
    TILEFUSE_RETURN_IF_ERROR(check_device_pointer("scaled_gemm", "scale_b", args.scale_b));
    if constexpr (kHasBias) TILEFUSE_RETURN_IF_ERROR(check_device_pointer("scaled_gemm", "bias", args.bias));
    if (args.scale_result != nullptr) {
      TILEFUSE_RETURN_IF_ERROR(check_device_pointer("scaled_gemm", "scale_result", args.scale_result));
    }
    if (!kFp8Out && args.scale_result != nullptr) {
      return invalid_argument("scaled_gemm: scale_result is given but the output is not fp8; drop it");
    }
    if constexpr (kAmax) {
      if (args.amax == nullptr) {
        return invalid_argument("scaled_gemm: the operation writes amax (kAmax) but args.amax is null; pass one float "
                                "of device memory");
      }
      TILEFUSE_RETURN_IF_ERROR(check_device_pointer("scaled_gemm", "amax", args.amax));
      if (reinterpret_cast<std::uintptr_t>(args.amax) % alignof(float) != 0) {
        return misaligned("scaled_gemm: amax is not 4-byte aligned; pass a float of device memory");
      }
    } else if (args.amax != nullptr) {
      return invalid_argument("scaled_gemm: args.amax is set but the operation does not compute it; use "
                              "ScaledGemm<..., kAmax = true>");
    }

    out->problem = {args.m, args.n, args.k, 1};
    out->a = args.a;
    out->lda = args.lda;
    out->b = args.b;
    out->ldb = args.ldb;
    out->epilogue.set("D", args.d, {.ld = args.ldd});
    if constexpr (Mode == ScalingMode::kBlockWise) {
      // torch's layouts (check_scaled_gemm checked the shapes): scale_a M x ceil(K/128) M-major,
      // scale_b ceil(K/128) x ceil(N/128) K-block-major.
      index_t const k_blocks = (args.k + kScaleBlock - 1) / kScaleBlock;
      out->block_scale_a = args.scale_a;
      out->block_scale_a_strides[0] = 1;
      out->block_scale_a_strides[1] = args.m;
      out->block_scale_b = args.scale_b;
      out->block_scale_b_strides[0] = 1;
      out->block_scale_b_strides[1] = k_blocks;
    } else {
      out->epilogue.set("scale_a", args.scale_a).set("scale_b", args.scale_b);
    }
    if constexpr (kHasBias) out->epilogue.set("bias", args.bias);
    // (run() rebinds it to the per-row temporary; can_implement checks the tree with this pointer)
    if constexpr (kAmax) out->epilogue.set("amax", args.amax);
    if constexpr (kFp8Out) {
      if (args.scale_result != nullptr) {
        out->epilogue.set("scale_result", args.scale_result);
      } else {
        out->epilogue.set("scale_result", 1.0f);
      }
    }
    return {};
  }
};

}  // namespace tilefuse::gemm
