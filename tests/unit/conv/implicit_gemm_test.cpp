// Exhaustive host test of the implicit-GEMM mapping (conv/implicit_gemm.h): for every small problem
// and every mode, the GEMM built through the mapping must reproduce the reference convolution
// exactly, and the mapping must keep the promises the kernels rely on (offsets inside the tensor, -1
// past the end of the GEMM, contiguous channel runs, 16-byte chunks when C and K are multiples of 8).
//
// What runs (per mode; each mode is its own test so ctest can run them side by side):
//   EveryGeometry:     every pair (rows axis, columns axis) of the 423 axes (H or W <= 7, R or S <= 4,
//                      pad <= 2, stride <= 3, dilation <= 2, filter fits) = 178,929 problems, with
//                      N, C and K cycling through small values (N <= 2, C, K <= 3).
//   EveryChannelCount: every (N <= 2, C <= 9, K <= 9) = 162 channel shapes x 40 random geometries
//                      = 6,480 problems.
//   SixteenByteChunks: C = K = 8 with every axis on the rows paired with a random one on the columns
//                      and the other way round, N = 1 and 2 alternating = 846 problems.
// 186,255 problems per mode, 558,765 in all: about 2 s of CPU in a release build and 6 s under
// ASan + UBSan (CI runs both) on the 2-core build machine.
#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/implicit_gemm.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/reference/conv2d.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tilefuse::conv {
namespace {

// ---- the problems ----

// One spatial axis of a problem: input extent, filter extent, padding, stride, dilation.
struct Axis {
  index_t input, filter, pad, stride, dilation;
};

// Every axis of the sweep on which the filter fits into the padded input (423 of them).
std::vector<Axis> const& every_axis() {
  static std::vector<Axis> const axes = [] {
    std::vector<Axis> out;
    for (index_t input = 1; input <= 7; ++input)
      for (index_t filter = 1; filter <= 4; ++filter)
        for (index_t pad = 0; pad <= 2; ++pad)
          for (index_t stride = 1; stride <= 3; ++stride)
            for (index_t dilation = 1; dilation <= 2; ++dilation)
              if (dilation * (filter - 1) + 1 <= input + 2 * pad) out.push_back({input, filter, pad, stride, dilation});
    return out;
  }();
  return axes;
}

Conv2dProblem make_problem(Axis const& rows, Axis const& cols, index_t n, index_t c, index_t k, ConvMode mode) {
  Conv2dProblem p;
  p.N = n;
  p.H = rows.input, p.R = rows.filter, p.pad_h = rows.pad, p.stride_h = rows.stride, p.dilation_h = rows.dilation;
  p.W = cols.input, p.S = cols.filter, p.pad_w = cols.pad, p.stride_w = cols.stride, p.dilation_w = cols.dilation;
  p.C = c;
  p.K = k;
  p.mode = mode;
  return p;
}

char const* mode_name(ConvMode m) {
  return m == ConvMode::kFprop ? "fprop" : m == ConvMode::kDgrad ? "dgrad" : "wgrad";
}

std::string describe(Conv2dProblem const& p) {
  std::ostringstream s;
  s << mode_name(p.mode) << " N=" << p.N << " H=" << p.H << " W=" << p.W << " C=" << p.C << " K=" << p.K
    << " R=" << p.R << " S=" << p.S << " pad=(" << p.pad_h << "," << p.pad_w << ") stride=(" << p.stride_h << ","
    << p.stride_w << ") dilation=(" << p.dilation_h << "," << p.dilation_w << ") -> P=" << p.P() << " Q=" << p.Q();
  return s.str();
}

// ---- failures: report the first few in detail, count the rest ----

class Failures {
 public:
  // Records a failure; returns false, so that a check can `return failures.add(...)`.
  bool add(Conv2dProblem const& p, std::string const& what) {
    if (++count_ <= kDetailed) ADD_FAILURE() << describe(p) << ": " << what;
    return false;
  }
  int count() const { return count_; }
  bool full() const { return count_ >= kDetailed; }

 private:
  static constexpr int kDetailed = 12;
  int count_ = 0;
};

// ---- one operand, gathered through the mapping and checked ----

// What the test knows about an operand independently of the mapping: its GEMM extents, the number of
// elements of the tensor it reads, and the length of the channel runs along its contiguous dimension
// (k when kKContiguous, mn otherwise): C for a run of input channels, K for a run of filters.
struct OperandShape {
  char const* name;  // "A = x" ...
  index_t mn = 0, k = 0, tensor_elements = 0, run = 0;
};

// Offsets of operand (kMode, kIsA) for every (mn, k), with parts computed once per mn and once per k
// as a kernel does, into offsets[mn * shape.k + k]; checks them against the tensor's bounds, the edges
// of the GEMM and the contiguity claims, and with `compare_whole` against implicit_gemm_offset too (the
// geometry sweep leaves that to the smaller sweeps: it doubles the cost of the mapping). Returns false
// on a failure.
template <ConvMode kMode, bool kIsA>
bool gather_offsets(Conv2dProblem const& p, OperandShape const& shape, bool compare_whole,
                    std::vector<index_t>& offsets, Failures& failures) {
  using Operand = ImplicitGemmOperand<kMode, kIsA>;
  ConvGeometry const g = ConvGeometry::of(p);
  Operand const op(g);
  auto where = [&](index_t mn, index_t k) {
    std::ostringstream s;
    s << shape.name << " at (mn " << mn << ", k " << k << ") of " << shape.mn << " x " << shape.k << ": ";
    return s.str();
  };

  std::vector<typename Operand::KPart> k_parts;
  k_parts.reserve(static_cast<std::size_t>(shape.k));
  for (index_t k = 0; k < shape.k; ++k) k_parts.push_back(op.k_part(k));
  offsets.resize(static_cast<std::size_t>(shape.mn * shape.k));
  for (index_t mn = 0; mn < shape.mn; ++mn) {
    auto const mn_part = op.mn_part(mn);
    for (index_t k = 0; k < shape.k; ++k) {
      index_t const off = op.offset(mn_part, k_parts[static_cast<std::size_t>(k)]);
      if (compare_whole) {
        index_t const whole = implicit_gemm_offset<kMode, kIsA>(g, mn, k);
        if (off != whole) {
          return failures.add(p, where(mn, k) + "offset(mn_part, k_part) = " + std::to_string(off) +
                                     " but implicit_gemm_offset = " + std::to_string(whole));
        }
      }
      if (off < -1 || off >= shape.tensor_elements) {
        return failures.add(p, where(mn, k) + "offset " + std::to_string(off) + " is outside the tensor of " +
                                   std::to_string(shape.tensor_elements) + " elements");
      }
      offsets[static_cast<std::size_t>(mn * shape.k + k)] = off;
    }
  }

  // Past the end of the GEMM (a tile's residue) every element is a zero.
  for (index_t past : {index_t{0}, index_t{1}, index_t{8}}) {
    for (index_t mn = 0; mn < shape.mn + 9; ++mn) {
      index_t const k = shape.k + past;
      if (implicit_gemm_offset<kMode, kIsA>(g, mn, k) != -1) {
        return failures.add(p, where(mn, k) + "k past the end gives offset " +
                                   std::to_string(implicit_gemm_offset<kMode, kIsA>(g, mn, k)) + ", not -1");
      }
    }
    for (index_t k = 0; k < shape.k; ++k) {
      index_t const mn = shape.mn + past;
      if (implicit_gemm_offset<kMode, kIsA>(g, mn, k) != -1) {
        return failures.add(p, where(mn, k) + "mn past the end gives offset " +
                                   std::to_string(implicit_gemm_offset<kMode, kIsA>(g, mn, k)) + ", not -1");
      }
    }
  }

  // Contiguity along the contiguous dimension: every aligned run of `run` elements is all zeros or
  // consecutive offsets; with C and K multiples of 8, every aligned chunk of 8 is all zeros or 8
  // consecutive offsets starting at a multiple of 8 (one 16-byte load).
  index_t const along = Operand::kKContiguous ? shape.k : shape.mn;
  index_t const across = Operand::kKContiguous ? shape.mn : shape.k;
  auto at = [&](index_t i, index_t a) {  // i along, a across
    return Operand::kKContiguous ? offsets[static_cast<std::size_t>(a * shape.k + i)]
                                 : offsets[static_cast<std::size_t>(i * shape.k + a)];
  };
  auto place = [&](index_t i, index_t a) { return Operand::kKContiguous ? where(a, i) : where(i, a); };
  bool const chunks = p.C % 8 == 0 && p.K % 8 == 0;
  for (index_t a = 0; a < across; ++a) {
    for (index_t i = 0; i < along; ++i) {
      index_t const off = at(i, a);
      index_t const run_start = i - i % shape.run;
      index_t const first = at(run_start, a);
      if (first == -1 ? off != -1 : off != first + (i - run_start)) {
        return failures.add(p, place(i, a) + "offset " + std::to_string(off) + " breaks the run of " +
                                   std::to_string(shape.run) + " starting at offset " + std::to_string(first) +
                                   (Operand::kKContiguous ? " along k" : " along mn"));
      }
      if (chunks && i % 8 == 0) {
        if (along % 8 != 0) return failures.add(p, std::string(shape.name) + ": contiguous extent not a multiple of 8");
        bool const aligned_start = off == -1 || off % 8 == 0;
        bool consecutive = true;
        for (index_t j = 1; j < 8; ++j) consecutive &= at(i + j, a) == (off == -1 ? -1 : off + j);
        if (!aligned_start || !consecutive) {
          return failures.add(p, place(i, a) + "the 8-element chunk starting at offset " + std::to_string(off) +
                                     " is neither all zeros nor one aligned 16-byte load");
        }
      }
    }
  }
  return true;
}

// ---- the problem check ----

// Random integer-valued tensors: nonzero (a zero would hide a wrong tap) and spread out (so that two
// wrong taps rarely agree); every sum stays an integer far below 2^53, exact in double.
// (xorshift64: std::mt19937 cost a fifth of the sweep.)
struct Random {
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  std::uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

void fill(std::vector<float>& t, index_t n, Random& rng) {
  t.resize(static_cast<std::size_t>(n));
  for (float& v : t) {
    std::uint64_t const r = rng.next();
    float const magnitude = static_cast<float>(1 + (r >> 1) % 200);
    v = r & 1 ? magnitude : -magnitude;
  }
}

// Buffers reused across problems (the sweeps run a few hundred thousand small problems).
struct Scratch {
  std::vector<float> x, w, dy;
  std::vector<index_t> a_offsets, b_offsets;
  std::vector<double> a, b, d, want;
  Random rng;
  bool compare_whole = true;  // see gather_offsets
};

template <ConvMode kMode>
void check_problem(Conv2dProblem const& p, Scratch& s, Failures& failures) {
  ASSERT_TRUE(check(p).ok()) << describe(p);
  GemmCoord const e = p.gemm_extent(kMode);
  index_t const x_elements = p.N * p.H * p.W * p.C;
  index_t const w_elements = p.K * p.R * p.S * p.C;
  index_t const y_elements = p.N * p.P() * p.Q() * p.K;
  fill(s.x, x_elements, s.rng);
  fill(s.w, w_elements, s.rng);
  fill(s.dy, y_elements, s.rng);

  // Operand tensors, channel runs and the reference of each mode (see the table in implicit_gemm.h).
  OperandShape a_shape, b_shape;
  std::vector<float> const *a_tensor = nullptr, *b_tensor = nullptr;
  auto x_ref = TensorNHWC<float const>::packed(s.x.data(), p.activation_extent());
  auto w_ref = TensorKRSC<float const>::packed(s.w.data(), p.filter_extent());
  auto dy_ref = TensorNHWC<float const>::packed(s.dy.data(), p.output_extent());
  Status st;
  if constexpr (kMode == ConvMode::kFprop) {
    a_shape = {"A = x", e.m, e.k, x_elements, p.C}, a_tensor = &s.x;
    b_shape = {"B = w", e.n, e.k, w_elements, p.C}, b_tensor = &s.w;
    s.want.assign(static_cast<std::size_t>(y_elements), 0.0);
    st = reference::conv2d_fprop(p, x_ref, w_ref, TensorNHWC<double>::packed(s.want.data(), p.output_extent()));
  } else if constexpr (kMode == ConvMode::kDgrad) {
    a_shape = {"A = dy", e.m, e.k, y_elements, p.K}, a_tensor = &s.dy;
    b_shape = {"B = w", e.n, e.k, w_elements, p.C}, b_tensor = &s.w;
    s.want.assign(static_cast<std::size_t>(x_elements), 0.0);
    st = reference::conv2d_dgrad(p, dy_ref, w_ref, TensorNHWC<double>::packed(s.want.data(), p.activation_extent()));
  } else {
    a_shape = {"A = dy", e.m, e.k, y_elements, p.K}, a_tensor = &s.dy;
    b_shape = {"B = x", e.n, e.k, x_elements, p.C}, b_tensor = &s.x;
    s.want.assign(static_cast<std::size_t>(w_elements), 0.0);
    st = reference::conv2d_wgrad(p, x_ref, dy_ref, TensorKRSC<double>::packed(s.want.data(), p.filter_extent()));
  }
  ASSERT_TRUE(st.ok()) << describe(p) << ": " << st.to_string();
  ASSERT_EQ(static_cast<index_t>(s.want.size()), e.m * e.n) << describe(p) << ": D is not the output tensor";

  if (!gather_offsets<kMode, true>(p, a_shape, s.compare_whole, s.a_offsets, failures)) return;
  if (!gather_offsets<kMode, false>(p, b_shape, s.compare_whole, s.b_offsets, failures)) return;
  auto materialize = [](std::vector<index_t> const& offsets, std::vector<float> const& t, std::vector<double>& out) {
    out.resize(offsets.size());
    for (std::size_t i = 0; i < offsets.size(); ++i) out[i] = offsets[i] < 0 ? 0.0 : t[static_cast<std::size_t>(offsets[i])];
  };
  materialize(s.a_offsets, *a_tensor, s.a);  // a[m * K + k]
  materialize(s.b_offsets, *b_tensor, s.b);  // b[n * K + k]

  // D = A B, row-major M x N, compared exactly with the packed reference output.
  for (index_t m = 0; m < e.m; ++m) {
    for (index_t n = 0; n < e.n; ++n) {
      double sum = 0.0;
      double const* a_row = s.a.data() + m * e.k;
      double const* b_row = s.b.data() + n * e.k;
      for (index_t k = 0; k < e.k; ++k) sum += a_row[k] * b_row[k];
      double const want = s.want[static_cast<std::size_t>(m * e.n + n)];
      if (sum != want) {
        std::ostringstream msg;
        msg << "D(" << m << ", " << n << ") = " << sum << " through the mapping, the reference gives " << want;
        failures.add(p, msg.str());
        return;
      }
    }
  }
}

// ---- the sweeps ----

template <ConvMode kMode>
void every_geometry() {
  // (N, C, K) cycling over the geometries: both batch sizes, one and several channels and filters.
  static constexpr index_t kChannels[][3] = {{1, 1, 1}, {2, 1, 2}, {1, 2, 1}, {2, 3, 1}, {1, 1, 3}, {2, 2, 2}, {1, 3, 2}};
  auto const& axes = every_axis();
  ASSERT_EQ(axes.size(), 423u);
  Scratch s;
  s.compare_whole = false;
  Failures failures;
  std::size_t i = 0;
  for (Axis const& rows : axes) {
    for (Axis const& cols : axes) {
      auto const& nck = kChannels[i++ % std::size(kChannels)];
      check_problem<kMode>(make_problem(rows, cols, nck[0], nck[1], nck[2], kMode), s, failures);
      if (failures.full()) return;
    }
  }
  EXPECT_EQ(i, 178929u);
  EXPECT_EQ(failures.count(), 0);
}

template <ConvMode kMode>
void every_channel_count() {
  auto const& axes = every_axis();
  std::mt19937 pick(42);
  Scratch s;
  Failures failures;
  int problems = 0;
  for (index_t n = 1; n <= 2; ++n) {
    for (index_t c = 1; c <= 9; ++c) {
      for (index_t k = 1; k <= 9; ++k) {
        for (int g = 0; g < 40; ++g, ++problems) {
          Axis const& rows = axes[pick() % axes.size()];
          Axis const& cols = axes[pick() % axes.size()];
          check_problem<kMode>(make_problem(rows, cols, n, c, k, kMode), s, failures);
          if (failures.full()) return;
        }
      }
    }
  }
  EXPECT_EQ(problems, 6480);
  EXPECT_EQ(failures.count(), 0);
}

template <ConvMode kMode>
void sixteen_byte_chunks() {
  auto const& axes = every_axis();
  std::mt19937 pick(7);
  Scratch s;
  Failures failures;
  int problems = 0;
  for (Axis const& axis : axes) {
    for (bool on_rows : {true, false}) {
      Axis const& other = axes[pick() % axes.size()];
      index_t const n = 1 + problems % 2;
      check_problem<kMode>(make_problem(on_rows ? axis : other, on_rows ? other : axis, n, 8, 8, kMode), s, failures);
      ++problems;
      if (failures.full()) return;
    }
  }
  EXPECT_EQ(problems, 846);
  EXPECT_EQ(failures.count(), 0);
}

// The roles the kernels assume (which dimension is contiguous); the sweeps verify each claim.
static_assert(ImplicitGemmOperand<ConvMode::kFprop, true>::kKContiguous);
static_assert(ImplicitGemmOperand<ConvMode::kFprop, false>::kKContiguous);
static_assert(ImplicitGemmOperand<ConvMode::kDgrad, true>::kKContiguous);
static_assert(!ImplicitGemmOperand<ConvMode::kDgrad, false>::kKContiguous);
static_assert(!ImplicitGemmOperand<ConvMode::kWgrad, true>::kKContiguous);
static_assert(!ImplicitGemmOperand<ConvMode::kWgrad, false>::kKContiguous);

TEST(ImplicitGemm, EveryGeometryFprop) { every_geometry<ConvMode::kFprop>(); }
TEST(ImplicitGemm, EveryGeometryDgrad) { every_geometry<ConvMode::kDgrad>(); }
TEST(ImplicitGemm, EveryGeometryWgrad) { every_geometry<ConvMode::kWgrad>(); }
TEST(ImplicitGemm, EveryChannelCountFprop) { every_channel_count<ConvMode::kFprop>(); }
TEST(ImplicitGemm, EveryChannelCountDgrad) { every_channel_count<ConvMode::kDgrad>(); }
TEST(ImplicitGemm, EveryChannelCountWgrad) { every_channel_count<ConvMode::kWgrad>(); }
TEST(ImplicitGemm, SixteenByteChunksFprop) { sixteen_byte_chunks<ConvMode::kFprop>(); }
TEST(ImplicitGemm, SixteenByteChunksDgrad) { sixteen_byte_chunks<ConvMode::kDgrad>(); }
TEST(ImplicitGemm, SixteenByteChunksWgrad) { sixteen_byte_chunks<ConvMode::kWgrad>(); }

// Hand-checked elements of a 3x3 "same" convolution (N=1, H=W=4, C=2, K=3), one per operand.
TEST(ImplicitGemm, HandCheckedElements) {
  Conv2dProblem p;
  p.N = 1, p.H = p.W = 4, p.C = 2, p.K = 3, p.R = p.S = 3, p.pad_h = p.pad_w = 1;
  ConvGeometry const g = ConvGeometry::of(p);
  // fprop A: output (0, 1, 1) = m 5 at tap (0, 0, c 1) = k 1 reads x[0][0][0][1]; output (0, 0, 0) at
  // tap (0, 0) is padding.
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kFprop, true>(g, 5, 1)), 1);
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kFprop, true>(g, 0, 0)), -1);
  // fprop B: filter 2 at tap (1, 2, c 1) = k (1 * 3 + 2) * 2 + 1 = 11 is w[2][1][2][1] = 2 * 18 + 11.
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kFprop, false>(g, 2, 11)), 47);
  // dgrad A: input (0, 2, 3) = m 11 at tap (2, 1, k' 2) = k (2 * 3 + 1) * 3 + 2 = 23 reads
  // dy[0][2 + 1 - 2][3 + 1 - 1][2] = dy[0][1][3][2] = (1 * 4 + 3) * 3 + 2.
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kDgrad, true>(g, 11, 23)), 23);
  // dgrad B: channel 1 at tap (2, 1, k' 2) = k 23 is w[2][2][1][1] = 2 * 18 + (2 * 3 + 1) * 2 + 1.
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kDgrad, false>(g, 1, 23)), 51);
  // wgrad A: filter 2 at output pixel 7 is dy[0][1][3][2]; wgrad B: tap (2, 1, c 1) = n 15 at output
  // pixel 7 = (1, 3) reads x[0][1 - 1 + 2][3 - 1 + 1][1] = x[0][2][3][1] = (2 * 4 + 3) * 2 + 1.
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kWgrad, true>(g, 2, 7)), 23);
  EXPECT_EQ((implicit_gemm_offset<ConvMode::kWgrad, false>(g, 15, 7)), 23);
}

}  // namespace
}  // namespace tilefuse::conv
