// The README's epilogue, D = relu(alpha * acc + bias[col]) + C stored as bf16, evaluated by the host
// driver and checked against the formula: what a consumer of tilefuse's CMake package can build.
#include <cmath>
#include <cstdio>
#include <vector>

#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/host_driver.hpp>

#include "readme_epilogue.hpp"

int main() {
  using namespace tilefuse;
  using namespace tilefuse::epilogue;
  using Epilogue = consumer::ReadmeEpilogue;
  ProblemShape const shape{3, 20, 1};
  std::vector<float> acc(shape.rows * shape.cols);
  std::vector<bfloat16_t> bias(shape.cols), c(acc.size()), d(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    acc[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    c[i] = convert<bfloat16_t>(static_cast<float>(i % 5));
  }
  for (index_t j = 0; j < shape.cols; ++j) bias[j] = convert<bfloat16_t>(static_cast<float>(j % 3) - 1.0f);
  EpilogueArguments<Epilogue> args;
  args.set("alpha", 2.0f).set("bias", bias.data()).set("C", c.data()).set("D", d.data());
  Status const s = run_host(args, MatrixRef<float const, RowMajor>::packed(acc.data(), shape.rows, shape.cols), shape);
  if (!s.ok()) {
    std::printf("host_epilogue: %s\n", s.to_string().c_str());
    return 1;
  }
  int wrong = 0;
  for (index_t r = 0; r < shape.rows; ++r) {
    for (index_t j = 0; j < shape.cols; ++j) {
      std::size_t const i = static_cast<std::size_t>(r * shape.cols + j);
      float const want = std::fmax(2.0f * acc[i] + to_float(bias[j]), 0.0f) + to_float(c[i]);  // exact in bf16
      wrong += to_float(d[i]) != want;
    }
  }
  std::printf("host_epilogue: %d of %zu elements wrong\n", wrong, d.size());
  return wrong == 0 ? 0 : 1;
}
