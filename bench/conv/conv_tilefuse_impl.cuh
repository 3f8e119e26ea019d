// TilefuseConvOp for one instantiated tilefuse::conv::Conv2d: builds its named arguments from the
// operand sets, and runs it. Included only by the tilefuse_conv_*.cu instantiation files.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/evt.h>

#include "conv_tilefuse.hpp"
#include "cuda_check.hpp"
#include "prepared_sets.hpp"

namespace tilefuse::bench {

// The two benchmarked epilogues: y = conv, and cuDNN's fused semantic y = relu(conv + bias[k] + residual)
// (alpha1 = alpha2 = 1).
template <class T>
using ConvPlainEpilogue = epilogue::Store<"D", T, epilogue::Acc>;
template <class T>
using ConvBiasReluResidualEpilogue = epilogue::Store<
    "D", T,
    epilogue::Relu<epilogue::Add<epilogue::Add<epilogue::Acc, epilogue::RowBroadcast<"bias", T>>,
                                 epilogue::AuxLoad<"residual", T>>>>;

template <class Element, ConvMode kMode, class Epilogue, ConvEpilogue kEpilogue>
class TilefuseConvOpImpl final : public TilefuseConvOp {
 public:
  using Op = conv::Conv2d<Element, kMode, Epilogue, gemm::Sm80AutoConfig>;  // the operation picks tile and splits

  explicit TilefuseConvOpImpl(std::string name) : name_(std::move(name)) {}

  std::string name() const override { return name_; }

  std::string prepare(ConvProblem const& p, std::vector<ConvOperands> const& sets) override {
    return prepared_.prepare(sets, [&](ConvOperands const& ops) {
      typename Op::Arguments a;
      a.problem = p.shape;
      a.x = static_cast<Element const*>(ops.x);
      a.w = static_cast<Element const*>(ops.w);
      a.dy = static_cast<Element const*>(ops.dy);
      a.epilogue.set("D", static_cast<Element*>(ops.out));  // packed over Op::output_matrix(problem)
      if constexpr (kEpilogue == ConvEpilogue::kBiasReluResidual) {
        a.epilogue.set("bias", static_cast<Element const*>(ops.bias));
        a.epilogue.set("residual", static_cast<Element const*>(ops.residual));
      }
      a.split_k = p.split_k;
      a.overrides = p.overrides;
      return a;
    });
  }

  std::size_t workspace_size() const override { return prepared_.workspace_size(); }
  std::string describe() const override { return prepared_.describe(); }

  void run(int set, void* workspace, cudaStream_t stream) const override {
    prepared_.run(set, workspace, stream, "tilefuse Conv2d::run");
  }

 private:
  std::string name_;
  PreparedSets<Op> prepared_;
};

template <ConvMode kMode, ConvEpilogue kEpilogue, template <class> class Epilogue>
std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_op(DType dtype) {
  std::string const name = std::string(name_of(dtype)) + " " + name_of(kMode) + " " + name_of(kEpilogue);
  if (dtype == DType::kBF16) {
    return std::make_unique<TilefuseConvOpImpl<bfloat16_t, kMode, Epilogue<bfloat16_t>, kEpilogue>>(name);
  }
  return std::make_unique<TilefuseConvOpImpl<half_t, kMode, Epilogue<half_t>, kEpilogue>>(name);
}

}  // namespace tilefuse::bench
