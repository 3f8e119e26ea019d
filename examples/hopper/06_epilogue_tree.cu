// Step 6 of the Hopper ladder: the epilogue tree, through the library itself.
//
// Steps 1-5 are the mainloop of tilefuse's Hopper kernel (gemm/kernel/sm90_gemm.h), which adds a
// second consumer warpgroup (128-row tiles) and the epilogue: each consumer warp stages its 16
// accumulator rows through shared memory and visits an epilogue tree 8 consecutive columns at a time.
// The tree is a type: here D = gelu_tanh(A * B + bias[col]) + C, with named arguments bound by name
// on the host. gemm::Gemm (default config) picks the Hopper kernel on an sm_90 (describe() says
// which kernel ran and why); the host checks D against the same tree applied on the host
// (epilogue::run_host) to the exact float64 product.
#include "ladder_common.hpp"

#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/host_driver.hpp>
#include <tilefuse/gemm/device/gemm.hpp>

namespace {

namespace ep = tilefuse::epilogue;
using tilefuse::bfloat16_t;
// D = gelu_tanh(acc + bias[col]) + C
using Tree = ep::Store<"D", bfloat16_t,
                       ep::Add<ep::GeluTanh<ep::Add<ep::Acc, ep::RowBroadcast<"bias", bfloat16_t>>>,
                               ep::AuxLoad<"C", bfloat16_t>>>;
using Gemm = tilefuse::gemm::Gemm<bfloat16_t, tilefuse::RowMajor, tilefuse::ColumnMajor, Tree>;

constexpr int kM = 300, kN = 256, kK = 192;

}  // namespace

int main() {
  char const* step = "06_epilogue_tree";
  if (!ladder::hopper_or_explain(step)) return 0;
  auto const a = ladder::small_integers(std::size_t{kM} * kK, 8);  // row-major m x k
  auto const b = ladder::small_integers(std::size_t{kN} * kK, 9);  // column-major k x n (= n x k rows)
  auto const bias = ladder::small_integers(kN, 10);
  auto const c = ladder::small_integers(std::size_t{kM} * kN, 11);
  auto* d_a = ladder::to_device(a);
  auto* d_b = ladder::to_device(b);
  auto* d_bias = ladder::to_device(bias);
  auto* d_c = ladder::to_device(c);
  bfloat16_t* d_d = nullptr;
  LADDER_CUDA(cudaMalloc(&d_d, std::size_t{kM} * kN * 2));

  Gemm::Arguments args;
  args.problem = tilefuse::GemmCoord{kM, kN, kK, 1};
  args.a = d_a;
  args.b = d_b;
  args.epilogue.set("bias", static_cast<bfloat16_t const*>(d_bias))
      .set("C", static_cast<bfloat16_t const*>(d_c))
      .set("D", d_d);
  std::printf("%s: %s\n", step, Gemm::describe(args).c_str());
  tilefuse::Status const s = Gemm::run(args, nullptr, nullptr);
  if (!s.ok()) {
    std::printf("FAIL: run: %s\n", s.to_string().c_str());
    return 1;
  }
  auto const d = ladder::to_host(d_d, std::size_t{kM} * kN);

  // Host: the exact product, then the same tree (epilogue::run_host), in float64 / float.
  std::vector<double> acc(std::size_t{kM} * kN);
  for (int r = 0; r < kM; ++r)
    for (int col = 0; col < kN; ++col) {
      double x = 0;
      for (int i = 0; i < kK; ++i) x += ladder::to_double(a[r * kK + i]) * ladder::to_double(b[col * kK + i]);
      acc[r * kN + col] = x;
    }
  std::vector<bfloat16_t> expected(std::size_t{kM} * kN);
  ep::EpilogueArguments<Tree> host_args;
  host_args.set("bias", bias.data()).set("C", c.data()).set("D", expected.data());
  tilefuse::MatrixRef<double const, tilefuse::RowMajor> const acc_ref{acc.data(), kM, kN, kN, kM * kN};
  tilefuse::Status const h = ep::run_host<Tree>(host_args, acc_ref, ep::ProblemShape{kM, kN, 1});
  if (!h.ok()) {
    std::printf("FAIL: run_host: %s\n", h.to_string().c_str());
    return 1;
  }
  // The device's tanh is a hardware approximation: allow a bf16 ulp or two.
  int bad = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    double const got = ladder::to_double(d[i]), want = ladder::to_double(expected[i]);
    if (!(std::fabs(got - want) <= 0.01 * std::fabs(want) + 0.02)) {
      if (bad < 5) std::printf("  D[%zu, %zu] = %g, expected %g\n", i / kN, i % kN, got, want);
      ++bad;
    }
  }
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_bias);
  cudaFree(d_c);
  cudaFree(d_d);
  return ladder::report(step, bad);
}
