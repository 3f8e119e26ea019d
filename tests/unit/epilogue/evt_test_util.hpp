// Helpers for the epilogue tests: random accumulators, running a tree whose root stores "D" (float)
// with several vector widths, and exact comparison against a plain lambda.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <tilefuse/epilogue/host_driver.hpp>

namespace tilefuse::epilogue::testing {

// Values chosen so every op is exercised on both signs and away from overflow.
inline std::vector<float> random_values(std::size_t count, unsigned seed, float lo = -4.0f, float hi = 4.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline constexpr float kPoison = 1234567.0f;

// Same value or both NaN.
inline bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(float)) == 0;
}

// The expected value of element (row, col, batch) given its accumulator value.
using Expected = std::function<float(float acc, index_t row, index_t col, index_t batch)>;

// Runs Tree (root Store<"D", float, ...>) over a random accumulator with vector widths 1, 3, 8 and 16,
// D poisoned before each run, and checks every element against `expected` exactly.
template <class Tree, class Setup>
void expect_tree_matches(ProblemShape shape, Setup setup, Expected expected, unsigned seed = 1) {
  std::size_t const count = static_cast<std::size_t>(shape.rows * shape.cols * shape.batch);
  std::vector<float> acc = random_values(count, seed);
  auto acc_ref = MatrixRef<float const, RowMajor>::packed(acc.data(), shape.rows, shape.cols);
  auto run_width = [&]<int V>() {
    std::vector<float> d(count, kPoison);
    EpilogueArguments<Tree> args;
    setup(args);
    args.set("D", d.data());
    Status s = run_host<Tree, V>(args, acc_ref, shape);
    ASSERT_TRUE(s.ok()) << s.to_string();
    int mismatches = 0;
    for (index_t b = 0; b < shape.batch; ++b)
      for (index_t r = 0; r < shape.rows; ++r)
        for (index_t c = 0; c < shape.cols; ++c) {
          std::size_t const i = static_cast<std::size_t>((b * shape.rows + r) * shape.cols + c);
          float const want = expected(acc[i], r, c, b);
          if (!same_float(d[i], want) && mismatches++ < 5) {
            ADD_FAILURE() << "V=" << V << " at (row " << r << ", col " << c << ", batch " << b << "): got " << d[i]
                          << ", want " << want << " (acc " << acc[i] << ")";
          }
        }
    EXPECT_EQ(mismatches, 0) << "vector width " << V;
  };
  run_width.template operator()<1>();
  run_width.template operator()<3>();
  run_width.template operator()<8>();
  run_width.template operator()<16>();  // the Hopper kernel visits 16 columns at a time
}

}  // namespace tilefuse::epilogue::testing
