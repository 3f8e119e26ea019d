// The conv output-coordinate nodes recover (n, p, q, k) from the output matrix's (row, col) for every
// element of a small fprop output, through the host driver (the same node code the kernels run).
#include <vector>

#include <gtest/gtest.h>

#include <tilefuse/conv/epilogue_coordinates.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/host_driver.hpp>

namespace tilefuse::conv {
namespace {

using namespace tilefuse::epilogue;

TEST(ConvEpilogueCoordinates, RecoverNPQAndChannel) {
  constexpr index_t N = 3, P = 5, Q = 7, K = 6;
  // One output per coordinate: D = n * 1000 + p * 100 + q * 10 + channel (exact in float).
  using Tree = Store<"D", float,
                     Add<Add<Mul<OutputN, Constant<1000.0f>>, Mul<OutputP, Constant<100.0f>>>,
                         Add<Mul<OutputQ, Constant<10.0f>>, OutputChannel>>>;
  std::vector<float> acc(N * P * Q * K, 0.0f);
  std::vector<float> d(acc.size(), -1.0f);
  EpilogueArguments<Tree> args;
  args.set("D", d.data()).set("conv_P", float(P)).set("conv_Q", float(Q)).set("conv_PQ", float(P * Q));
  ProblemShape const shape{N * P * Q, K, 1};
  auto const acc_ref = MatrixRef<float const, RowMajor>::packed(acc.data(), shape.rows, shape.cols);
  Status const s = run_host<Tree>(args, acc_ref, shape);
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (index_t n = 0; n < N; ++n)
    for (index_t p = 0; p < P; ++p)
      for (index_t q = 0; q < Q; ++q)
        for (index_t k = 0; k < K; ++k) {
          index_t const row = (n * P + p) * Q + q;
          EXPECT_EQ(d[row * K + k], float(n * 1000 + p * 100 + q * 10 + k)) << n << " " << p << " " << q << " " << k;
        }
}

}  // namespace
}  // namespace tilefuse::conv
