// TilefuseGemmOp for one instantiated tilefuse::gemm::Gemm: builds its named arguments from the
// operand sets, and runs it. Included only by the tilefuse_*.cu instantiation files.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/gemm.hpp>

#include "cuda_check.hpp"
#include "prepared_sets.hpp"
#include "tilefuse_op.hpp"

namespace tilefuse::bench {

// The two benchmarked epilogues. D = A * B, and D = gelu_tanh(A * B + bias[col]) + C.
template <class T>
using PlainEpilogue = epilogue::Store<"D", T, epilogue::Acc>;
template <class T>
using BiasGeluResidualEpilogue =
    epilogue::Store<"D", T,
                    epilogue::Add<epilogue::GeluTanh<epilogue::Add<epilogue::Acc, epilogue::RowBroadcast<"bias", T>>>,
                                  epilogue::AuxLoad<"C", T>>>;

// The kernels gemm::Gemm launches for these template arguments (gemm/device/gemm.hpp: sm80_gemm_kernel
// of sm80::GemmKernel with kAligned true or false, and split_k_epilogue_kernel when split_k > 1).
template <class Element, class LayoutA, class LayoutB, class Epilogue, class Config>
std::vector<KernelFacts> sm80_gemm_kernel_facts(std::string const& name) {
  using Aligned = gemm::sm80::GemmKernel<Element, LayoutA, LayoutB, Epilogue, Config, true>;
  using Narrow = gemm::sm80::GemmKernel<Element, LayoutA, LayoutB, Epilogue, Config, false>;
  std::vector<KernelFacts> facts;
  facts.push_back(facts_of(name + ", 16-byte path",
                           reinterpret_cast<void const*>(&gemm::sm80::sm80_gemm_kernel<Aligned>), Aligned::kSmemBytes));
  facts.push_back(facts_of(name + ", element-wise path",
                           reinterpret_cast<void const*>(&gemm::sm80::sm80_gemm_kernel<Narrow>), Narrow::kSmemBytes));
  if constexpr (std::is_same_v<LayoutA, RowMajor> && std::is_same_v<LayoutB, ColumnMajor>) {
    facts.push_back(facts_of(name + ", split-K reduction",
                             reinterpret_cast<void const*>(&gemm::split_k_epilogue_kernel<Epilogue>)));
  }
  return facts;
}

// GemmOp: the device operation (gemm::Gemm by default, gemm::GemmSm90 for the Hopper kernel); they share
// the Arguments struct and the can_implement / workspace_size / run / describe interface.
template <class Element, class LayoutA, class LayoutB, class Epilogue, class Config, EpilogueKind kEpilogue,
          class GemmOp = gemm::Gemm<Element, LayoutA, LayoutB, Epilogue, Config>>
class TilefuseGemmOpImpl final : public TilefuseGemmOp {
 public:
  using Gemm = GemmOp;
  static constexpr bool kSm80 = std::is_same_v<GemmOp, gemm::Gemm<Element, LayoutA, LayoutB, Epilogue, Config>>;

  explicit TilefuseGemmOpImpl(std::string name) : name_(std::move(name)) {}

  std::string name() const override { return name_; }

  std::string prepare(GemmProblem const& p, std::vector<GemmOperands> const& sets) override {
    return prepared_.prepare(sets, [&](GemmOperands const& ops) {
      typename Gemm::Arguments a;
      a.problem = GemmCoord{p.m, p.n, p.k, p.batch};
      a.a = static_cast<Element const*>(ops.a);
      a.lda = ops.strides.lda;
      a.batch_stride_a = ops.strides.batch_stride_a;
      a.b = static_cast<Element const*>(ops.b);
      a.ldb = ops.strides.ldb;
      a.batch_stride_b = ops.strides.batch_stride_b;
      a.epilogue.set("D", static_cast<Element*>(ops.d),
                     {.ld = ops.strides.ldd, .batch_stride = ops.strides.batch_stride_d});
      if constexpr (kEpilogue == EpilogueKind::kBiasGeluResidual) {
        a.epilogue.set("bias", static_cast<Element const*>(ops.bias), {.batch_stride = 0});  // shared by the batch
        a.epilogue.set("C", static_cast<Element const*>(ops.c),
                       {.ld = ops.strides.ldd, .batch_stride = ops.strides.batch_stride_d});
      }
      a.split_k = p.split_k;
      return a;
    });
  }

  std::size_t workspace_size() const override { return prepared_.workspace_size(); }
  std::string describe() const override { return prepared_.describe(); }

  void run(int set, void* workspace, cudaStream_t stream) const override {
    prepared_.run(set, workspace, stream, "tilefuse Gemm::run");
  }

  std::vector<KernelFacts> kernel_facts() const override {
    if constexpr (!kSm80) return {};  // NOTES: the Hopper kernel's facts come from cuobjdump in the GPU script
    else return sm80_gemm_kernel_facts<Element, LayoutA, LayoutB, Epilogue, Config>(
        status_message("tilefuse ", name_, " ", Config::kTileM, "x", Config::kTileN, "x", Config::kTileK));
  }

 private:
  std::string name_;
  PreparedSets<Gemm> prepared_;
};

// The benchmark runs the Gemm's default configuration for large problems (Sm80Tf32LargeConfig for the
// tf32 path: the same tile in bytes; Sm80LargeConfig's would not fit shared memory with 4-byte elements).
using BenchConfig = gemm::Sm80LargeConfig;

template <class Element, class Epilogue, EpilogueKind kEpilogue, class LayoutA, class LayoutB,
          class Config = BenchConfig>
std::unique_ptr<TilefuseGemmOp> make_tilefuse_op(char const* dtype_name) {
  OperandLayout const layout{std::is_same_v<LayoutA, RowMajor>, std::is_same_v<LayoutB, RowMajor>};
  return std::make_unique<TilefuseGemmOpImpl<Element, LayoutA, LayoutB, Epilogue, Config, kEpilogue>>(
      std::string(dtype_name) + " " + name_of(layout) + " " + name_of(kEpilogue));
}

}  // namespace tilefuse::bench
