// The host references split over threads (reference/parallel.hpp): on problems large enough to use the
// threads, every output equals the serial loop's bit for bit (each element summed by one thread in the same
// order), and the blocks cover every row once.
#include <tilefuse/reference/conv2d.hpp>
#include <tilefuse/reference/gemm.hpp>
#include <tilefuse/reference/parallel.hpp>
#include <tilefuse/reference/scaled_gemm.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace tilefuse {
namespace {

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(ReferenceParallel, BlocksCoverEveryRowOnce) {
  for (index_t rows : {0, 1, 7, 33, 1000}) {
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(rows));
    reference::for_row_blocks(rows, 1e7, [&](index_t begin, index_t end) {
      for (index_t r = begin; r < end; ++r) seen[static_cast<std::size_t>(r)]++;
    });
    for (auto const& s : seen) EXPECT_EQ(s.load(), 1) << rows;
  }
}

TEST(ReferenceParallel, GemmEqualsTheSerialLoop) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread: the serial path only";
  index_t const m = 200, n = 96, k = 300, batch = 2;  // 11.5 M multiply-adds: threaded
  std::vector<float> a = random_values(static_cast<std::size_t>(batch * m * k), 1);
  std::vector<float> b = random_values(static_cast<std::size_t>(batch * k * n), 2);
  std::vector<float> d(static_cast<std::size_t>(batch * m * n), -1.0f);
  ASSERT_TRUE(reference::gemm(GemmCoord{m, n, k, batch}, MatrixRef<float const, RowMajor>{a.data(), m, k, k, m * k},
                              MatrixRef<float const, RowMajor>{b.data(), k, n, n, k * n},
                              MatrixRef<float, RowMajor>{d.data(), m, n, n, m * n})
                  .ok());
  for (index_t l = 0; l < batch; ++l) {
    for (index_t i = 0; i < m; ++i) {
      for (index_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (index_t p = 0; p < k; ++p) sum += a[l * m * k + i * k + p] * b[l * k * n + p * n + j];
        ASSERT_EQ(d[l * m * n + i * n + j], sum) << l << " " << i << " " << j;
      }
    }
  }
}

TEST(ReferenceParallel, ScaledGemmAmaxFoldsTheBlocksLikeTheSerialLoop) {
  index_t const m = 300, n = 64, k = 256;  // 4.9 M multiply-adds: threaded
  std::vector<float> a = random_values(static_cast<std::size_t>(m * k), 3);
  std::vector<float> b = random_values(static_cast<std::size_t>(k * n), 4);
  std::vector<float> d(static_cast<std::size_t>(m * n));
  double amax = -1.0;
  float const one = 1.0f;
  reference::ScaleGrid const unit{&one, 1 << 30, 1 << 30, 0, 0};
  auto const run = [&]() {
    return reference::scaled_gemm<float>(MatrixRef<float const, RowMajor>{a.data(), m, k, k, 0}, unit,
                                         MatrixRef<float const, ColumnMajor>{b.data(), k, n, k, 0}, unit,
                                         static_cast<bfloat16_t const*>(nullptr), nullptr,
                                         MatrixRef<float, RowMajor>{d.data(), m, n, n, 0}, &amax);
  };
  ASSERT_TRUE(run().ok());
  double want = 0.0;
  for (float v : d) want = std::max(want, std::abs(static_cast<double>(v)));
  EXPECT_NEAR(amax, want, want * 1e-6);
  // A NaN in one block (a late row) wins over every block's maximum, as in the serial loop.
  a[static_cast<std::size_t>((m - 1) * k)] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(run().ok());
  EXPECT_TRUE(std::isnan(amax));
}

TEST(ReferenceParallel, ConvolutionsEqualTheSerialLoops) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread: the serial path only";
  Conv2dProblem p;  // strided and padded: every reference's index arithmetic in play; 4-13 M multiply-adds
  p.N = 2, p.H = 28, p.W = 27, p.C = 32, p.K = 48, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1, p.stride_h = 2;
  index_t const P = p.P(), Q = p.Q();
  Coord4D const xe{p.N, p.H, p.W, p.C}, we{p.K, p.R, p.S, p.C}, ye{p.N, P, Q, p.K};
  std::vector<float> x = random_values(static_cast<std::size_t>(p.N * p.H * p.W * p.C), 5);
  std::vector<float> w = random_values(static_cast<std::size_t>(p.K * p.R * p.S * p.C), 6);
  std::vector<float> dy = random_values(static_cast<std::size_t>(p.N * P * Q * p.K), 7);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
  auto const cref = [](std::vector<float> const& v, Coord4D e) { return Tensor4DRef<float const>::packed(v.data(), e); };
  ASSERT_TRUE(reference::conv2d_fprop(p, cref(x, xe), cref(w, we), Tensor4DRef<float>::packed(y.data(), ye)).ok());
  ASSERT_TRUE(reference::conv2d_dgrad(p, cref(dy, ye), cref(w, we), Tensor4DRef<float>::packed(dx.data(), xe)).ok());
  ASSERT_TRUE(reference::conv2d_wgrad(p, cref(x, xe), cref(dy, ye), Tensor4DRef<float>::packed(dw.data(), we)).ok());
  auto const X = [&](index_t n, index_t h, index_t wi, index_t c) { return x[((n * p.H + h) * p.W + wi) * p.C + c]; };
  auto const W = [&](index_t k, index_t r, index_t s, index_t c) { return w[((k * p.R + r) * p.S + s) * p.C + c]; };
  auto const DY = [&](index_t n, index_t oh, index_t ow, index_t k) { return dy[((n * P + oh) * Q + ow) * p.K + k]; };
  // The serial loops, summing in the references' orders: fprop over (r, s, c), wgrad over (n, oh, ow).
  for (index_t n = 0; n < p.N; ++n)
    for (index_t oh = 0; oh < P; ++oh)
      for (index_t ow = 0; ow < Q; ++ow)
        for (index_t k = 0; k < p.K; ++k) {
          float sum = 0.0f;
          for (index_t r = 0; r < p.R; ++r)
            for (index_t s = 0; s < p.S; ++s) {
              index_t const h = oh * p.stride_h - p.pad_h + r, wi = ow * p.stride_w - p.pad_w + s;
              if (h < 0 || h >= p.H || wi < 0 || wi >= p.W) continue;
              for (index_t c = 0; c < p.C; ++c) sum += X(n, h, wi, c) * W(k, r, s, c);
            }
          ASSERT_EQ(y[((n * P + oh) * Q + ow) * p.K + k], sum);
        }
  for (index_t k = 0; k < p.K; ++k)
    for (index_t r = 0; r < p.R; ++r)
      for (index_t s = 0; s < p.S; ++s)
        for (index_t c = 0; c < p.C; ++c) {
          float sum = 0.0f;
          for (index_t n = 0; n < p.N; ++n)
            for (index_t oh = 0; oh < P; ++oh)
              for (index_t ow = 0; ow < Q; ++ow) {
                index_t const h = oh * p.stride_h - p.pad_h + r, wi = ow * p.stride_w - p.pad_w + s;
                if (h < 0 || h >= p.H || wi < 0 || wi >= p.W) continue;
                sum += X(n, h, wi, c) * DY(n, oh, ow, k);
              }
          ASSERT_EQ(dw[((k * p.R + r) * p.S + s) * p.C + c], sum);
        }
  // dgrad: against fprop's adjoint, <dy, fprop(x)> = <dgrad(dy), x>, in double.
  double left = 0.0, right = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) left += static_cast<double>(dy[i]) * y[i];
  for (std::size_t i = 0; i < x.size(); ++i) right += static_cast<double>(dx[i]) * x[i];
  EXPECT_NEAR(left, right, 1e-3 * std::abs(left) + 1e-2);
}

}  // namespace
}  // namespace tilefuse
