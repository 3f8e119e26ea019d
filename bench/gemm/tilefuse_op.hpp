// The tilefuse GEMM behind a small run-time interface, so the benchmark driver is plain C++ and the
// template instantiations live in a few .cu files (one per dtype / epilogue group, compiled in parallel).
//
// Instantiated: bf16 with epilogue none in all four layouts, fp16 none in tn, bf16 bias_gelu_residual in tn,
// tf32 (fp32 in memory, Sm80Tf32LargeConfig) none in tn.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "kernel_facts.hpp"
#include "operands.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

class TilefuseGemmOp {
 public:
  virtual ~TilefuseGemmOp() = default;

  // "bf16 tn none": what was instantiated.
  virtual std::string name() const = 0;
  // Builds the arguments of every operand set and asks can_implement; "" when it can, else its message.
  virtual std::string prepare(GemmProblem const& problem, std::vector<GemmOperands> const& sets) = 0;
  // After prepare: the workspace one call needs, and Gemm::describe of the prepared problem.
  virtual std::size_t workspace_size() const = 0;
  virtual std::string describe() const = 0;
  // Runs on operand set `set`; throws BenchError with Gemm::run's message on failure.
  virtual void run(int set, void* workspace, cudaStream_t stream) const = 0;
  // Registers and local memory of the kernels this Gemm can launch (16-byte and element-wise paths;
  // the split-K reduction with the tn layout, as it does not depend on the layout).
  virtual std::vector<KernelFacts> kernel_facts() const = 0;
};

// nullptr when this combination is not instantiated. kernel: "sm80" (gemm::Gemm with Sm80LargeConfig,
// Sm80Tf32LargeConfig for tf32; mma.sync), "sm90" (gemm::GemmSm90 with Sm90AutoConfig, TMA + WGMMA;
// bf16/fp16 tn only),
// "sm90-large" / "sm90-medium" / "sm90-narrow" / "sm90-short" (GemmSm90 with one tile; bf16 tn none only), or
// "auto" (gemm::Gemm with GemmAutoConfig: Hopper where it can, sm80 otherwise).
std::unique_ptr<TilefuseGemmOp> make_tilefuse_gemm(DType dtype, OperandLayout layout, EpilogueKind epilogue,
                                                   std::string const& kernel = "sm80");
// Every instantiated combination, for the SASS facts table.
std::vector<std::unique_ptr<TilefuseGemmOp>> all_tilefuse_gemms();

// One factory per instantiation file; each returns nullptr for a layout it does not hold.
std::unique_ptr<TilefuseGemmOp> make_tilefuse_bf16_plain(OperandLayout layout);
std::unique_ptr<TilefuseGemmOp> make_tilefuse_fp16_plain(OperandLayout layout);
std::unique_ptr<TilefuseGemmOp> make_tilefuse_bf16_fused(OperandLayout layout);
std::unique_ptr<TilefuseGemmOp> make_tilefuse_tf32_plain(OperandLayout layout);
std::unique_ptr<TilefuseGemmOp> make_tilefuse_sm90(DType dtype, OperandLayout layout, EpilogueKind epilogue,
                                                   std::string const& kernel = "sm90");
std::unique_ptr<TilefuseGemmOp> make_tilefuse_auto(DType dtype, OperandLayout layout, EpilogueKind epilogue);

}  // namespace tilefuse::bench
