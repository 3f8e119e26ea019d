// tilefuse's Conv2d (conv/device/conv2d.hpp) behind a small run-time interface, so the conv2d driver is
// plain C++ and the template instantiations live in a few .cu files (tilefuse_conv_*.cu, one per mode
// group, compiled in parallel).
//
// Instantiated, all with gemm::Sm80LargeConfig, in bf16 and fp16:
//   fprop, dgrad and wgrad with epilogue none:  Store<"D", T, Acc>
//   fprop with bias_relu_residual:              Store<"D", T, Relu<Add<Add<Acc, RowBroadcast<"bias", T>>,
//                                                                          AuxLoad<"residual", T>>>>
// Configured with -DTILEFUSE_BENCH_CONV_TILEFUSE=OFF, none is built and every row says so.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "conv_operands.hpp"
#include "conv_problems.hpp"

namespace tilefuse::bench {

class TilefuseConvOp {
 public:
  virtual ~TilefuseConvOp() = default;

  // "bf16 fprop bias_relu_residual": what was instantiated.
  virtual std::string name() const = 0;
  // Builds the arguments of every operand set and asks can_implement; "" when it can, else its message.
  virtual std::string prepare(ConvProblem const& problem, std::vector<ConvOperands> const& sets) = 0;
  // After prepare: the workspace one call needs, and Conv2d::describe of the prepared problem.
  virtual std::size_t workspace_size() const = 0;
  virtual std::string describe() const = 0;
  // Runs on operand set `set`; throws BenchError with Conv2d::run's message on failure.
  virtual void run(int set, void* workspace, cudaStream_t stream) const = 0;
};

// nullptr when this combination is not instantiated (or tilefuse's conv is not built).
std::unique_ptr<TilefuseConvOp> make_tilefuse_conv(DType dtype, ConvMode mode, ConvEpilogue epilogue);
// Why make_tilefuse_conv gave nullptr, for the report.
std::string tilefuse_conv_not_built_reason(ConvMode mode, ConvEpilogue epilogue);

// One factory per instantiation file.
std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_fprop(DType dtype);
std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_fprop_fused(DType dtype);
std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_dgrad(DType dtype);
std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_wgrad(DType dtype);

}  // namespace tilefuse::bench
