// Tests of the host reference convolutions: hand-computed fprop, dgrad and wgrad (padding, stride,
// dilation, groups), exact adjoint identities over a sweep of problems, and a cross-check of all three
// against reference::gemm on explicitly unrolled (im2col) operands.
#include <tilefuse/reference/conv2d.hpp>
#include <tilefuse/reference/gemm.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tilefuse {
namespace {

// A packed 4-D tensor in a std::vector.
template <class T>
struct HostTensor {
  Coord4D extent;
  std::vector<T> data;

  explicit HostTensor(Coord4D e) : extent(e), data(static_cast<size_t>(e.d0 * e.d1 * e.d2 * e.d3), T{}) {}
  HostTensor(Coord4D e, std::vector<double> const& values) : HostTensor(e) {
    EXPECT_EQ(values.size(), data.size()) << "test bug: wrong number of values";
    for (size_t i = 0; i < data.size() && i < values.size(); ++i) data[i] = convert<T>(values[i]);
  }
  Tensor4DRef<T> ref() { return Tensor4DRef<T>::packed(data.data(), extent); }
  Tensor4DRef<T const> cref() const { return Tensor4DRef<T const>::packed(data.data(), extent); }
};

// <a, b> = sum over every element of a(i) * b(i), in double. With integer data of the sizes used here
// every product and partial sum is an exactly representable integer, so the result is exact.
template <class A, class B>
double inner_product(Tensor4DRef<A const> a, Tensor4DRef<B const> b) {
  EXPECT_TRUE(a.extent == b.extent) << "inner product of tensors with different extents";
  double sum = 0;
  for (index_t i0 = 0; i0 < a.extent.d0; ++i0) {
    for (index_t i1 = 0; i1 < a.extent.d1; ++i1) {
      for (index_t i2 = 0; i2 < a.extent.d2; ++i2) {
        for (index_t i3 = 0; i3 < a.extent.d3; ++i3) {
          sum += to_double(a.at(i0, i1, i2, i3)) * to_double(b.at(i0, i1, i2, i3));
        }
      }
    }
  }
  return sum;
}

template <class T>
void fill_integers(HostTensor<T>& t, std::mt19937& rng, int lo = -3, int hi = 3) {
  std::uniform_int_distribution<int> dist(lo, hi);
  for (T& v : t.data) v = convert<T>(static_cast<double>(dist(rng)));
}

template <class T>
std::vector<double> values_of(HostTensor<T> const& t) {
  std::vector<double> out;
  for (T const& v : t.data) out.push_back(to_double(v));
  return out;
}

Conv2dProblem make_problem(index_t n, index_t h, index_t w, index_t c, index_t k, index_t r, index_t s) {
  Conv2dProblem p;
  p.N = n;
  p.H = h;
  p.W = w;
  p.C = c;
  p.K = k;
  p.R = r;
  p.S = s;
  return p;
}

// ---- hand-computed cases ----

// x = [1 2 3; 4 5 6; 7 8 9] (1x3x3x1), w = [1 2; 3 4] (1x2x2x1), no padding, stride 1.
TEST(ReferenceConv2d, HandFprop3x3With2x2Filter) {
  Conv2dProblem const p = make_problem(1, 3, 3, 1, 1, 2, 2);
  HostTensor<float> x({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor<float> w({1, 2, 2, 1}, {1, 2, 3, 4});
  HostTensor<double> y({1, 2, 2, 1});
  Status const st = reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref());
  ASSERT_TRUE(st.ok()) << st.message();
  // y(0,0) = 1*1 + 2*2 + 3*4 + 4*5 = 37, and so on one step right / down.
  EXPECT_EQ(values_of(y), (std::vector<double>{37, 47, 67, 77}));

  HostTensor<float> yf({1, 2, 2, 1});
  ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), yf.ref()).ok());
  EXPECT_EQ(values_of(yf), (std::vector<double>{37, 47, 67, 77}));
}

TEST(ReferenceConv2d, HandFpropChannels) {
  // One pixel, C = 2, K = 2: y = [3*1 + 4*2, 5*1 + 6*2] = [11, 17].
  Conv2dProblem const p = make_problem(1, 1, 1, 2, 2, 1, 1);
  HostTensor<half_t> x({1, 1, 1, 2}, {1, 2});
  HostTensor<bfloat16_t> w({2, 1, 1, 2}, {3, 4, 5, 6});
  HostTensor<float> y({1, 1, 1, 2});
  ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref()).ok());
  EXPECT_EQ(values_of(y), (std::vector<double>{11, 17}));
}

TEST(ReferenceConv2d, HandDgrad3x3With2x2Filter) {
  // dx is the "full" convolution of dy = [1 2; 3 4] with w = [1 2; 3 4]:
  // dx(h, w) = sum over p + r == h, q + s == w of dy(p, q) * w(r, s).
  Conv2dProblem const p = make_problem(1, 3, 3, 1, 1, 2, 2);
  HostTensor<float> dy({1, 2, 2, 1}, {1, 2, 3, 4});
  HostTensor<float> w({1, 2, 2, 1}, {1, 2, 3, 4});
  HostTensor<double> dx({1, 3, 3, 1});
  Status const st = reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx.ref());
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(values_of(dx), (std::vector<double>{1, 4, 4, 6, 20, 16, 9, 24, 16}));
}

TEST(ReferenceConv2d, HandWgrad3x3With2x2Filter) {
  // dw(r, s) = sum over p, q of x(p + r, q + s) * dy(p, q), with dy = [1 -1; 2 0]:
  // dw(0,0) = 1 - 2 + 2*4 = 7, dw(0,1) = 2 - 3 + 2*5 = 9, dw(1,0) = 4 - 5 + 2*7 = 13, dw(1,1) = 15.
  Conv2dProblem const p = make_problem(1, 3, 3, 1, 1, 2, 2);
  HostTensor<float> x({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor<float> dy({1, 2, 2, 1}, {1, -1, 2, 0});
  HostTensor<double> dw({1, 2, 2, 1});
  Status const st = reference::conv2d_wgrad(p, x.cref(), dy.cref(), dw.ref());
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(values_of(dw), (std::vector<double>{7, 9, 13, 15}));
}

TEST(ReferenceConv2d, HandFpropPaddingStrideDilation) {
  // x(h, w) = 5h + w + 1 on a 5x5 input; w = [1 10; 100 1000] so each tap is identifiable.
  // pad 1, stride 2, dilation 2: output (p, q) reads rows {2p - 1, 2p + 1} and columns {2q - 1, 2q + 1};
  // P = Q = (5 + 2 - 2 - 1) / 2 + 1 = 3. Taps outside [0, 5) read the zero padding.
  Conv2dProblem p = make_problem(1, 5, 5, 1, 1, 2, 2);
  p.pad_h = p.pad_w = 1;
  p.stride_h = p.stride_w = 2;
  p.dilation_h = p.dilation_w = 2;
  ASSERT_EQ(p.P(), 3);
  ASSERT_EQ(p.Q(), 3);
  std::vector<double> xv;
  for (int i = 1; i <= 25; ++i) xv.push_back(i);
  HostTensor<double> x({1, 5, 5, 1}, xv);
  HostTensor<double> w({1, 2, 2, 1}, {1, 10, 100, 1000});
  HostTensor<double> y({1, 3, 3, 1});
  Status const st = reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref());
  ASSERT_TRUE(st.ok()) << st.message();
  // (0,0): only tap (1,1) on x(1,1) = 7. (1,1): taps on x(1,1), x(1,3), x(3,1), x(3,3) = 7, 9, 17, 19.
  EXPECT_EQ(values_of(y), (std::vector<double>{7000, 9700, 900,     //
                                               17070, 20797, 1909,  //
                                               170, 207, 19}));
}

TEST(ReferenceConv2d, HandStridedPaddedRowAllModes) {
  // One row: W = 4, S = 2, stride_w = 2, pad_w = 1, w = [1 10]. Output q reads columns {2q - 1, 2q};
  // Q = (4 + 2 - 1 - 1) / 2 + 1 = 3. x = [1 2 3 4], dy = [1 2 3].
  Conv2dProblem p = make_problem(1, 1, 4, 1, 1, 1, 2);
  p.pad_w = 1;
  p.stride_w = 2;
  ASSERT_EQ(p.Q(), 3);
  HostTensor<float> x({1, 1, 4, 1}, {1, 2, 3, 4});
  HostTensor<float> w({1, 1, 2, 1}, {1, 10});
  HostTensor<float> dy({1, 1, 3, 1}, {1, 2, 3});

  HostTensor<double> y({1, 1, 3, 1});
  ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref()).ok());
  // y = [10*x0, x1 + 10*x2, x3 + 10*pad] = [10, 32, 4].
  EXPECT_EQ(values_of(y), (std::vector<double>{10, 32, 4}));

  HostTensor<double> dx({1, 1, 4, 1});
  ASSERT_TRUE(reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx.ref()).ok());
  // Column 0 is tap 1 of q = 0; column 1 tap 0 of q = 1; column 2 tap 1 of q = 1; column 3 tap 0 of q = 2.
  EXPECT_EQ(values_of(dx), (std::vector<double>{10, 2, 20, 3}));

  HostTensor<double> dw({1, 1, 2, 1});
  ASSERT_TRUE(reference::conv2d_wgrad(p, x.cref(), dy.cref(), dw.ref()).ok());
  // dw(0) = x1*dy1 + x3*dy2 = 4 + 12; dw(1) = x0*dy0 + x2*dy1 = 1 + 6 (x4 is padding).
  EXPECT_EQ(values_of(dw), (std::vector<double>{16, 7}));
}

TEST(ReferenceConv2d, HandDilatedDgrad) {
  // W = 5, S = 2, dilation_w = 3: output q reads columns {q, q + 3}; Q = 2. Column 2 is read by no tap.
  Conv2dProblem p = make_problem(1, 1, 5, 1, 1, 1, 2);
  p.dilation_w = 3;
  ASSERT_EQ(p.Q(), 2);
  HostTensor<float> dy({1, 1, 2, 1}, {1, 2});
  HostTensor<float> w({1, 1, 2, 1}, {1, 10});
  HostTensor<double> dx({1, 1, 5, 1});
  ASSERT_TRUE(reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx.ref()).ok());
  EXPECT_EQ(values_of(dx), (std::vector<double>{1, 2, 0, 10, 20}));
}

TEST(ReferenceConv2d, HandGroupsAllModes) {
  // C = 4, K = 2, groups = 2: filter 0 sees channels {0, 1}, filter 1 sees channels {2, 3}.
  Conv2dProblem p = make_problem(1, 1, 1, 4, 2, 1, 1);
  p.groups = 2;
  HostTensor<float> x({1, 1, 1, 4}, {1, 2, 3, 4});
  HostTensor<float> w({2, 1, 1, 2}, {1, 1, 10, 100});
  HostTensor<float> dy({1, 1, 1, 2}, {1, 2});

  HostTensor<double> y({1, 1, 1, 2});
  ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref()).ok());
  EXPECT_EQ(values_of(y), (std::vector<double>{1 + 2, 3 * 10 + 4 * 100}));

  HostTensor<double> dx({1, 1, 1, 4});
  ASSERT_TRUE(reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx.ref()).ok());
  EXPECT_EQ(values_of(dx), (std::vector<double>{1, 1, 20, 200}));

  HostTensor<double> dw({2, 1, 1, 2});
  ASSERT_TRUE(reference::conv2d_wgrad(p, x.cref(), dy.cref(), dw.ref()).ok());
  EXPECT_EQ(values_of(dw), (std::vector<double>{1, 2, 3 * 2, 4 * 2}));
}

TEST(ReferenceConv2d, StridedViewsMatchPacked) {
  // The same data through views with padded strides must give the same results.
  Conv2dProblem p = make_problem(2, 4, 5, 3, 2, 3, 2);
  p.pad_h = 1;
  p.stride_w = 2;
  std::mt19937 rng(7);
  HostTensor<float> x(p.activation_extent());
  HostTensor<float> w(p.filter_extent());
  fill_integers(x, rng);
  fill_integers(w, rng);
  HostTensor<double> y(p.output_extent());
  ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref()).ok());

  // x with each pixel's channels padded to 5, each row to 6 pixels and each image to 7 rows.
  Coord4D const e = p.activation_extent();
  Tensor4DRef<float const> xs{nullptr, e, 7 * 6 * 5, 6 * 5, 5};
  std::vector<float> xs_storage(static_cast<size_t>(e.d0 * xs.stride0), -99.0f);
  xs.data = xs_storage.data();
  for (index_t n = 0; n < e.d0; ++n)
    for (index_t h = 0; h < e.d1; ++h)
      for (index_t wi = 0; wi < e.d2; ++wi)
        for (index_t c = 0; c < e.d3; ++c) xs_storage[static_cast<size_t>(xs.offset({n, h, wi, c}))] = x.cref().at(n, h, wi, c);
  Coord4D const oe = p.output_extent();
  std::vector<double> ys_storage(static_cast<size_t>(oe.d0 * oe.d1 * oe.d2 * (oe.d3 + 1)), -1.0);
  Tensor4DRef<double> ys{ys_storage.data(), oe, oe.d1 * oe.d2 * (oe.d3 + 1), oe.d2 * (oe.d3 + 1), oe.d3 + 1};
  ASSERT_TRUE(reference::conv2d_fprop(p, xs, w.cref(), ys).ok());
  for (index_t n = 0; n < oe.d0; ++n)
    for (index_t h = 0; h < oe.d1; ++h)
      for (index_t q = 0; q < oe.d2; ++q)
        for (index_t k = 0; k < oe.d3; ++k) ASSERT_EQ(ys.at(n, h, q, k), y.ref().at(n, h, q, k));
}

TEST(ReferenceConv2d, RejectsBadOperands) {
  Conv2dProblem const p = make_problem(1, 3, 3, 2, 2, 2, 2);
  HostTensor<float> x(p.activation_extent());
  HostTensor<float> w(p.filter_extent());
  HostTensor<float> dy(p.output_extent());
  HostTensor<double> y(p.output_extent());
  HostTensor<double> dx(p.activation_extent());
  HostTensor<double> dw(p.filter_extent());
  auto expect_rejected = [](Status const& st, std::string const& needle) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  HostTensor<float> wrong_x({1, 3, 4, 2});
  expect_rejected(reference::conv2d_fprop(p, wrong_x.cref(), w.cref(), y.ref()), "x.extent = (1, 3, 4, 2)");
  expect_rejected(reference::conv2d_fprop(p, x.cref(), x.cref(), y.ref()), "w.extent");
  expect_rejected(reference::conv2d_fprop(p, x.cref(), w.cref(), dx.ref()), "y_acc.extent");
  expect_rejected(reference::conv2d_dgrad(p, x.cref(), w.cref(), dx.ref()), "dy.extent");
  expect_rejected(reference::conv2d_dgrad(p, dy.cref(), w.cref(), y.ref()), "dx_acc.extent");
  expect_rejected(reference::conv2d_wgrad(p, x.cref(), dy.cref(), y.ref()), "dw_acc.extent");
  // An invalid problem is reported with check()'s message.
  Conv2dProblem bad = p;
  bad.stride_h = 0;
  expect_rejected(reference::conv2d_fprop(bad, x.cref(), w.cref(), y.ref()), "stride_h = 0");
  // An output whose strides alias its own elements.
  auto y_alias = y.ref();
  y_alias.stride1 = 1;  // smaller than the Q * K elements of one output row
  expect_rejected(reference::conv2d_fprop(p, x.cref(), w.cref(), y_alias), "y_acc.stride1 = 1");
}

// ---- sweep: adjoint identities ----

struct ChannelConfig {
  index_t C, K, groups;
};

// Problems sampled from N in {1, 2}, H, W in [1, 7], R, S in [1, 3], pad in [0, 2], stride in [1, 3],
// dilation in [1, 2], each field drawn independently so that asymmetric problems are common.
std::vector<Conv2dProblem> sampled_problems(std::uint32_t seed, int per_channel_config) {
  ChannelConfig const channel_configs[] = {
      {1, 1, 1}, {1, 3, 1}, {3, 1, 1}, {3, 8, 1}, {8, 3, 1}, {8, 8, 1}, {3, 3, 1}, {1, 8, 1},
      {4, 4, 2},  // the grouped case of the brief
      {3, 3, 3},  // depthwise
      {8, 8, 4}, {8, 4, 2}, {4, 8, 4},
  };
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return static_cast<index_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  std::vector<Conv2dProblem> out;
  for (ChannelConfig const& cc : channel_configs) {
    for (int i = 0; i < per_channel_config; ++i) {
      Conv2dProblem p = make_problem(pick(1, 2), pick(1, 7), pick(1, 7), cc.C, cc.K, pick(1, 3), pick(1, 3));
      p.groups = cc.groups;
      p.pad_h = pick(0, 2);
      p.pad_w = pick(0, 2);
      p.stride_h = pick(1, 3);
      p.stride_w = pick(1, 3);
      p.dilation_h = pick(1, 2);
      p.dilation_w = pick(1, 2);
      out.push_back(p);
    }
  }
  return out;
}

std::string describe(Conv2dProblem const& p) {
  return status_message("N=", p.N, " H=", p.H, " W=", p.W, " C=", p.C, " K=", p.K, " R=", p.R, " S=", p.S,
                        " pad=(", p.pad_h, ",", p.pad_w, ") stride=(", p.stride_h, ",", p.stride_w,
                        ") dilation=(", p.dilation_h, ",", p.dilation_w, ") groups=", p.groups);
}

TEST(ReferenceConv2d, AdjointIdentitiesHoldExactly) {
  // <fprop(x, w), dy> == <x, dgrad(dy, w)> == <w, wgrad(x, dy)>: all three are the same sum over
  // (n, p, q, k, r, s, c) of x * w * dy, so with integer data they agree exactly.
  int checked = 0;
  int skipped = 0;
  std::mt19937 rng(2024);
  for (Conv2dProblem const& p : sampled_problems(11, 400)) {
    if (!check(p).ok()) {  // the filter does not fit: no output to test
      ++skipped;
      continue;
    }
    SCOPED_TRACE(describe(p));
    HostTensor<float> x(p.activation_extent());
    HostTensor<float> w(p.filter_extent());
    HostTensor<float> dy(p.output_extent());
    fill_integers(x, rng);
    fill_integers(w, rng);
    fill_integers(dy, rng);
    HostTensor<double> y(p.output_extent());
    HostTensor<double> dx(p.activation_extent());
    HostTensor<double> dw(p.filter_extent());
    ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), y.ref()).ok());
    ASSERT_TRUE(reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx.ref()).ok());
    ASSERT_TRUE(reference::conv2d_wgrad(p, x.cref(), dy.cref(), dw.ref()).ok());

    double const via_fprop = inner_product(y.cref(), dy.cref());
    double const via_dgrad = inner_product(x.cref(), dx.cref());
    double const via_wgrad = inner_product(w.cref(), dw.cref());
    ASSERT_EQ(via_fprop, via_dgrad);
    ASSERT_EQ(via_fprop, via_wgrad);
    ++checked;
  }
  // The sweep must actually test something; most sampled problems have an output.
  EXPECT_GT(checked, 3000);
  EXPECT_GT(skipped, 0) << "the sweep should include filters that do not fit";
}

TEST(ReferenceConv2d, StrideOneDgradIsFpropOverTheFlippedFilter) {
  // dgrad_as_fprop (what the Hopper kernel's dgrad computes): with both strides 1, dgrad(dy, w) equals the
  // fprop of dy over the returned problem with w'[c][r'][s'][k] = w[k][R-1-r'][S-1-s'][c]: output (n, h, w)
  // reads dy at (h - pad'_h + r' * dilation_h, w - pad'_w + s' * dilation_w), as the kernel's im2col copy
  // does. Written out here because pad' < 0 (padding beyond the filter's reach) is no valid problem for
  // check() or reference::conv2d_fprop. Exact on integers, over the sweep's stride-1, ungrouped problems.
  int checked = 0;
  int over_padded = 0;
  std::mt19937 rng(2025);
  for (Conv2dProblem p : sampled_problems(13, 400)) {
    p.stride_h = p.stride_w = 1;
    p.groups = 1;
    if (!check(p).ok()) continue;
    SCOPED_TRACE(describe(p));
    Conv2dProblem const f = dgrad_as_fprop(p);
    ASSERT_EQ(f.P(), p.H);
    ASSERT_EQ(f.Q(), p.W);
    ASSERT_EQ(f.C, p.K);
    ASSERT_EQ(f.K, p.C);
    over_padded += f.pad_h < 0 || f.pad_w < 0;
    HostTensor<float> w(p.filter_extent());
    HostTensor<float> dy(p.output_extent());
    fill_integers(w, rng);
    fill_integers(dy, rng);
    HostTensor<double> dx(p.activation_extent());
    ASSERT_TRUE(reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx.ref()).ok());
    for (index_t n = 0; n < p.N; ++n)
      for (index_t h = 0; h < p.H; ++h)
        for (index_t x = 0; x < p.W; ++x)
          for (index_t c = 0; c < p.C; ++c) {
            double sum = 0;
            for (index_t r = 0; r < f.R; ++r)
              for (index_t s = 0; s < f.S; ++s) {
                index_t const hy = h - f.pad_h + r * f.dilation_h;
                index_t const xy = x - f.pad_w + s * f.dilation_w;
                if (hy < 0 || hy >= f.H || xy < 0 || xy >= f.W) continue;
                for (index_t k = 0; k < f.C; ++k) sum += dy.cref().at(n, hy, xy, k) * w.cref().at(k, p.R - 1 - r, p.S - 1 - s, c);
              }
            ASSERT_EQ(sum, dx.cref().at(n, h, x, c)) << "dx(" << n << ", " << h << ", " << x << ", " << c << ")";
          }
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(over_padded, 0) << "the sweep should include padding beyond the filter's reach (pad' < 0)";
}

// ---- cross-check with reference::gemm through explicit im2col ----

// Input pixel read by output (n, p, q) through tap (r, s), or false when the tap is in the padding.
bool tap_source(Conv2dProblem const& p, index_t oh, index_t ow, index_t r, index_t s, index_t& h, index_t& w) {
  h = oh * p.stride_h - p.pad_h + r * p.dilation_h;
  w = ow * p.stride_w - p.pad_w + s * p.dilation_w;
  return h >= 0 && h < p.H && w >= 0 && w < p.W;
}

// The unrolled activation of every group, packed one group after another: row m = (n, p, q),
// column kk = (r, s, c) with c inside the group, value x(n, h, w, g * C/groups + c) or 0.
std::vector<double> im2col(Conv2dProblem const& p, HostTensor<float> const& x) {
  GemmCoord const g = p.gemm_extent(ConvMode::kFprop);
  index_t const cg = p.channels_per_group();
  std::vector<double> cols(static_cast<size_t>(g.batch * g.m * g.k), 0.0);
  for (index_t grp = 0; grp < g.batch; ++grp) {
    for (index_t n = 0; n < p.N; ++n)
      for (index_t oh = 0; oh < p.P(); ++oh)
        for (index_t ow = 0; ow < p.Q(); ++ow)
          for (index_t r = 0; r < p.R; ++r)
            for (index_t s = 0; s < p.S; ++s)
              for (index_t c = 0; c < cg; ++c) {
                index_t h, w;
                if (!tap_source(p, oh, ow, r, s, h, w)) continue;
                index_t const m = (n * p.P() + oh) * p.Q() + ow;
                index_t const kk = (r * p.S + s) * cg + c;
                cols[static_cast<size_t>(grp * g.m * g.k + m * g.k + kk)] = x.cref().at(n, h, w, grp * cg + c);
              }
  }
  return cols;
}

TEST(ReferenceConv2d, MatchesGemmOnUnrolledOperands) {
  // fprop:  y = im2col(x) * W^T per group; the filters of a group, read as a column-major
  //         (R*S*C/groups) x (K/groups) matrix, are exactly the KRSC storage.
  // wgrad:  dw = dy^T * im2col(x) per group.
  // dgrad:  dx = col2im(dy * W): the unrolled gradient scattered back onto the pixels it came from.
  int checked = 0;
  std::mt19937 rng(99);
  for (Conv2dProblem const& p : sampled_problems(5, 40)) {
    if (!check(p).ok()) continue;
    SCOPED_TRACE(describe(p));
    HostTensor<float> x(p.activation_extent());
    HostTensor<float> w(p.filter_extent());
    HostTensor<float> dy(p.output_extent());
    fill_integers(x, rng);
    fill_integers(w, rng);
    fill_integers(dy, rng);
    index_t const cg = p.channels_per_group();
    index_t const kg = p.filters_per_group();
    index_t const rsc = p.R * p.S * cg;
    std::vector<double> const cols = im2col(p, x);

    // fprop
    GemmCoord const gf = p.gemm_extent(ConvMode::kFprop);
    ASSERT_EQ(gf.batch, p.groups);
    ASSERT_EQ(gf.n, kg);
    ASSERT_EQ(gf.k, rsc);
    HostTensor<double> y_conv(p.output_extent());
    HostTensor<double> y_gemm(p.output_extent());
    ASSERT_TRUE(reference::conv2d_fprop(p, x.cref(), w.cref(), y_conv.ref()).ok());
    MatrixRef<double const, RowMajor> const a_cols{cols.data(), gf.m, gf.k, gf.k, gf.m * gf.k};
    MatrixRef<float const, ColumnMajor> const b_filters{w.data.data(), gf.k, gf.n, gf.k, kg * rsc};
    MatrixRef<double, RowMajor> const d_y{y_gemm.data.data(), gf.m, gf.n, p.K, kg};  // groups interleave in K
    Status st = reference::gemm(gf, a_cols, b_filters, d_y);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(y_conv.data, y_gemm.data);

    // wgrad
    GemmCoord const gw = p.gemm_extent(ConvMode::kWgrad);
    ASSERT_EQ(gw.m, kg);
    ASSERT_EQ(gw.n, rsc);
    ASSERT_EQ(gw.k, gf.m);
    HostTensor<double> dw_conv(p.filter_extent());
    HostTensor<double> dw_gemm(p.filter_extent());
    ASSERT_TRUE(reference::conv2d_wgrad(p, x.cref(), dy.cref(), dw_conv.ref()).ok());
    MatrixRef<float const, ColumnMajor> const a_dyt{dy.data.data(), gw.m, gw.k, p.K, kg};
    MatrixRef<double const, RowMajor> const b_cols{cols.data(), gw.k, gw.n, gw.n, gw.k * gw.n};
    MatrixRef<double, RowMajor> const d_dw{dw_gemm.data.data(), gw.m, gw.n, gw.n, kg * rsc};
    st = reference::gemm(gw, a_dyt, b_cols, d_dw);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(dw_conv.data, dw_gemm.data);

    // dgrad: G = dy * W per group (NPQ x R*S*C/groups), then scatter G onto dx.
    GemmCoord const gd = p.gemm_extent(ConvMode::kDgrad);
    ASSERT_EQ(gd.m, p.N * p.H * p.W);
    ASSERT_EQ(gd.n, cg);
    ASSERT_EQ(gd.k, p.R * p.S * kg);
    std::vector<double> unrolled(static_cast<size_t>(p.groups * gf.m * rsc));
    MatrixRef<float const, RowMajor> const a_dy{dy.data.data(), gf.m, kg, p.K, kg};
    MatrixRef<float const, RowMajor> const b_w{w.data.data(), kg, rsc, rsc, kg * rsc};
    MatrixRef<double, RowMajor> const d_unrolled{unrolled.data(), gf.m, rsc, rsc, gf.m * rsc};
    st = reference::gemm(GemmCoord{gf.m, rsc, kg, p.groups}, a_dy, b_w, d_unrolled);
    ASSERT_TRUE(st.ok()) << st.message();
    HostTensor<double> dx_conv(p.activation_extent());
    HostTensor<double> dx_gemm(p.activation_extent());
    ASSERT_TRUE(reference::conv2d_dgrad(p, dy.cref(), w.cref(), dx_conv.ref()).ok());
    for (index_t grp = 0; grp < p.groups; ++grp)
      for (index_t n = 0; n < p.N; ++n)
        for (index_t oh = 0; oh < p.P(); ++oh)
          for (index_t ow = 0; ow < p.Q(); ++ow)
            for (index_t r = 0; r < p.R; ++r)
              for (index_t s = 0; s < p.S; ++s)
                for (index_t c = 0; c < cg; ++c) {
                  index_t h, wi;
                  if (!tap_source(p, oh, ow, r, s, h, wi)) continue;
                  index_t const m = (n * p.P() + oh) * p.Q() + ow;
                  dx_gemm.ref().at(n, h, wi, grp * cg + c) += d_unrolled.at(m, (r * p.S + s) * cg + c, grp);
                }
    ASSERT_EQ(dx_conv.data, dx_gemm.data);
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace tilefuse
