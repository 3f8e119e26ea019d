// What each part of a fused epilogue costs on the sm_90 GEMM: epilogue trees of growing size (+ bias,
// + GELU, + residual, ...) on the cooperative 128x256 kernel (the auto choice) and on the 64x256
// ping-pong one (whose epilogues run under the other warpgroup's mainloop). Each tree is timed right
// after the same kernel's plain epilogue and reported as a ratio to it: the H200's clocks drift by
// 10% and more as it heats (report v43), so only neighbouring measurements compare. Not a peer
// comparison (tilefuse-bench is); see docs/notes/gemm_sm90.md v43.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>

#include <tilefuse/gemm/device/gemm_sm90.hpp>

#include "timing.hpp"

namespace tilefuse::bench::sweep {

using Element = bfloat16_t;

struct Shape {
  index_t m, n, k;
};

// Operand sets, each large enough for every shape of the sweep, filled with random normals. Calls take
// them in rotation, as tilefuse-bench does: with one set, operands stay in L2 between calls (60 MiB on
// an H200), which favoured the 64x256 ping-pong tile (it reads B twice as often) by up to 13% over what
// the benchmark measures (report v45).
constexpr int kSets = 3;
struct Buffers {
  Element* a[kSets] = {};
  Element* b[kSets] = {};
  Element* c[kSets] = {};  // the residual
  Element* d[kSets] = {};
  Element* bias[kSets] = {};
};

void print_row(char const* tree, char const* kernel, Shape shape, double plain_ms, double ms);

// The median time of one GEMM with `Tree` as its epilogue, in ms (negative when it cannot run).
template <class Tree, class Config, bool kBias, bool kResidual>
double time_tree(Buffers const& buffers, Shape shape) {
  using Op = gemm::GemmSm90<Element, RowMajor, ColumnMajor, Tree, Config>;
  typename Op::Arguments sets[kSets];
  for (int i = 0; i < kSets; ++i) {
    auto& args = sets[i];
    args.problem = {shape.m, shape.n, shape.k, 1};
    args.a = buffers.a[i];
    args.b = buffers.b[i];
    args.epilogue.set("D", buffers.d[i]);
    if constexpr (kBias) args.epilogue.set("bias", static_cast<Element const*>(buffers.bias[i]));
    if constexpr (kResidual) args.epilogue.set("C", static_cast<Element const*>(buffers.c[i]));
    Status const status = Op::run(args, nullptr, nullptr);
    if (!status.ok()) {
      std::printf("%s\n", status.to_string().c_str());
      return -1.0;
    }
  }
  TimingOptions options;
  options.reps = 21;
  return time_rotating(
             [&](int set) {
               Status const s = Op::run(sets[set], nullptr, nullptr);
               if (!s.ok()) throw std::runtime_error(s.to_string());
             },
             kSets, options, nullptr)
      .median_ms;
}

// The trees: D = tree(acc), bf16 everywhere.
namespace trees {
using namespace tilefuse::epilogue;
using Bias = RowBroadcast<"bias", Element>;
using Residual = AuxLoad<"C", Element>;
using Plain = Store<"D", Element, Acc>;
using AddBias = Store<"D", Element, Add<Acc, Bias>>;
using BiasGelu = Store<"D", Element, GeluTanh<Add<Acc, Bias>>>;
using AddResidual = Store<"D", Element, Add<Acc, Residual>>;
using BiasResidual = Store<"D", Element, Add<Add<Acc, Bias>, Residual>>;
using BiasGeluResidual = Store<"D", Element, Add<GeluTanh<Add<Acc, Bias>>, Residual>>;
}  // namespace trees

// `Tree` on `shape` with Config, right after the plain epilogue with the same Config; prints both.
template <class Tree, class Config, bool kBias, bool kResidual>
void compare_with_plain(char const* tree, char const* kernel, Buffers const& buffers, Shape shape) {
  double const plain_ms = time_tree<trees::Plain, Config, false, false>(buffers, shape);
  double const ms = time_tree<Tree, Config, kBias, kResidual>(buffers, shape);
  print_row(tree, kernel, shape, plain_ms, ms);
}

// One tree on both kernels (each in its own file: they compile in parallel).
void sweep_bias(Buffers const& buffers, Shape shape);
void sweep_bias_gelu(Buffers const& buffers, Shape shape);
void sweep_residual(Buffers const& buffers, Shape shape);
void sweep_bias_residual(Buffers const& buffers, Shape shape);
void sweep_bias_gelu_residual(Buffers const& buffers, Shape shape);
// Cooperative 128x256 against ping-pong 64x256, plain and fully fused, in the order A B B A.
void sweep_schedules(Buffers const& buffers, Shape shape);

}  // namespace tilefuse::bench::sweep
