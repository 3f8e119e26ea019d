// The conv2d peers from cuDNN (legacy convolution API, which cuDNN 9 still ships):
//   bare:  cudnnConvolutionForward / BackwardData / BackwardFilter, NHWC tensors and KRSC filters,
//          CUDNN_CROSS_CORRELATION, float compute (CUDNN_DATA_FLOAT convolution descriptor), tensor-op math;
//          the algorithm is the fastest cudnnFind*AlgorithmEx measured on this problem, with its workspace.
//   fused: cudnnConvolutionBiasActivationForward, y = relu(1 * conv(x, w) + 1 * z + bias) with z = the
//          residual (fprop only). That call takes only some algorithms (IMPLICIT_PRECOMP_GEMM is the one
//          documented for every activation) and some bias types, so prepare_fused() tries the measured
//          algorithms fastest first, then IMPLICIT_PRECOMP_GEMM, each with the bias in the data type and
//          then in float, and keeps the first combination cuDNN accepts; if none, it says what cuDNN said.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "conv_operands.hpp"
#include "conv_problems.hpp"
#include "cuda_check.hpp"

namespace tilefuse::bench {

class CudnnConv {
 public:
  explicit CudnnConv(cudaStream_t stream);
  ~CudnnConv();
  CudnnConv(CudnnConv const&) = delete;
  CudnnConv& operator=(CudnnConv const&) = delete;

  // Builds the descriptors, runs cudnnFind*AlgorithmEx on `sample` (it writes sample's output) with up to
  // `workspace_limit` bytes of workspace, and keeps the fastest algorithm that ran. "" or why it cannot.
  std::string prepare(ConvProblem const& problem, ConvOperands const& sample, std::size_t workspace_limit);
  // The bare convolution of the prepared mode on one operand set; throws BenchError on failure.
  void run(ConvOperands const& ops) const;
  // "IMPLICIT_PRECOMP_GEMM, tensor-op math, workspace 0 MiB (fastest of 6 that ran)".
  std::string describe() const;

  // After prepare() of an fprop problem with the fused epilogue: finds a combination the fused call takes
  // (it runs once on `sample`). "" or what cuDNN said for every combination tried.
  std::string prepare_fused(ConvOperands const& sample);
  void run_fused(ConvOperands const& ops) const;
  std::string describe_fused() const;

  static std::string version();

  // One algorithm as the search measured it.
  struct Choice {
    int algo = 0;
    cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;
    std::size_t workspace = 0;
    float find_ms = 0;  // cuDNN's own time from the search (one call: noisy)
    double median_ms = 0;  // our median of several calls (retime_choices), what the choice is made on
  };

 private:
  void release_descriptors();
  void make_conv_descriptor(cudnnConvolutionDescriptor_t* descriptor) const;
  std::vector<Choice> find_algorithms(ConvOperands const& sample, void* workspace, std::size_t workspace_bytes);
  void retime_choices(ConvOperands const& sample, void* workspace, std::vector<Choice>* choices);
  void run_choice(ConvOperands const& ops, Choice const& choice, void* workspace) const;
  std::string candidate_times() const;
  cudnnStatus_t call_fused(ConvOperands const& ops, Choice const& choice, bool float_bias, void* workspace) const;

  cudaStream_t stream_;
  cudnnHandle_t handle_ = nullptr;
  ConvProblem problem_{};
  cudnnTensorDescriptor_t activation_ = nullptr;  // x or dx: N, C, H, W in NHWC
  cudnnTensorDescriptor_t output_ = nullptr;      // y or dy (and z): N, K, P, Q in NHWC
  cudnnFilterDescriptor_t filter_ = nullptr;      // w or dw: K, C, R, S in KRSC (NHWC)
  cudnnConvolutionDescriptor_t conv_ = nullptr;        // the bare call's (math type of its algorithm)
  cudnnConvolutionDescriptor_t fused_conv_ = nullptr;  // the fused call's (math type of its algorithm)
  cudnnTensorDescriptor_t bias_ = nullptr;        // 1, K, 1, 1 in the data type or float
  cudnnActivationDescriptor_t relu_ = nullptr;
  std::vector<Choice> measured_;  // what the search ran, fastest first by our re-timing
  Choice chosen_;
  DeviceBuffer workspace_;
  bool prepared_ = false;
  Choice fused_;
  bool fused_float_bias_ = false;
  DeviceBuffer fused_workspace_;
  bool fused_prepared_ = false;
};

}  // namespace tilefuse::bench
