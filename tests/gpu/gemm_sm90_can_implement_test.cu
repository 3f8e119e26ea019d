// gemm::GemmSm90's argument checks: what the Hopper kernel cannot run is refused with a sentence that
// names the field and its value (and the sm80 fallback where one exists); describe() names the
// kernel; a plan made once runs repeatedly (the reduction restarts at its identity every run).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using StoreTree = specs::StoreD::Tree<bfloat16_t>;
using Op = gemm::GemmSm90<bfloat16_t, RowMajor, ColumnMajor, StoreTree, Sm90LargeConfig>;
using RowRowOp = gemm::GemmSm90<bfloat16_t, RowMajor, RowMajor, StoreTree, Sm90LargeConfig>;
using AmaxTree = specs::AuxAmax::Tree<bfloat16_t>;
using AmaxOp = gemm::GemmSm90<bfloat16_t, RowMajor, ColumnMajor, AmaxTree, Sm90MediumConfig>;

bool mentions(std::string const& text, std::string_view word) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return out;
  };
  return lower(text).find(lower(word)) != std::string::npos;
}

constexpr index_t kM = 64;
constexpr index_t kN = 64;
constexpr index_t kK = 64;
constexpr std::size_t kRoom = 4 * 256 * 256 * sizeof(bfloat16_t);

struct Buffers {
  DeviceBuffer a{kRoom};
  DeviceBuffer b{kRoom};
  DeviceBuffer d{kRoom};
};

template <class O>
typename O::Arguments valid_args(Buffers const& buf) {
  typename O::Arguments args;
  args.problem = GemmCoord{kM, kN, kK, 1};
  args.a = buf.a.as<bfloat16_t const>();
  args.b = buf.b.as<bfloat16_t const>();
  args.epilogue.set("D", buf.d.as<bfloat16_t>());
  return args;
}

#define TILEFUSE_SKIP_UNLESS_SM90()                                 \
  do {                                                              \
    std::string const skip = sm90_skip_reason();                    \
    if (!skip.empty()) GTEST_SKIP() << skip;                        \
  } while (0)

TEST(GemmSm90CanImplement, AcceptsAValidProblem) {
  TILEFUSE_SKIP_UNLESS_SM90();
  Buffers buf;
  auto const args = valid_args<Op>(buf);
  Status const s = Op::can_implement(args);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(mentions(Op::describe(args), "sm90")) << Op::describe(args);
  EXPECT_TRUE(mentions(Op::describe(args), "128x256x64")) << Op::describe(args);
}

// The packed epilogue copies D out by TMA where D is aligned for it and n a multiple of 8, by each
// lane's stores otherwise (the GPU tests' odd shapes and leading dimensions run that path); describe()
// says which.
TEST(GemmSm90CanImplement, DescribesDStoredByTmaOnlyWhereAligned) {
  TILEFUSE_SKIP_UNLESS_SM90();
  Buffers buf;
  auto args = valid_args<Op>(buf);
  EXPECT_TRUE(mentions(Op::describe(args), "D stored by TMA")) << Op::describe(args);
  args.epilogue.set("D", buf.d.as<bfloat16_t>(), {.ld = kN + 1});
  EXPECT_TRUE(Op::can_implement(args).ok());
  EXPECT_FALSE(mentions(Op::describe(args), "D stored by TMA")) << Op::describe(args);
  args.epilogue.set("D", buf.d.as<bfloat16_t>() + 1);
  EXPECT_FALSE(mentions(Op::describe(args), "D stored by TMA")) << Op::describe(args);
  args.epilogue.set("D", buf.d.as<bfloat16_t>());
  args.problem.n = kN - 1;  // a store would write the row's last 16-byte piece whole, past n
  EXPECT_FALSE(mentions(Op::describe(args), "D stored by TMA")) << Op::describe(args);
}

TEST(GemmSm90CanImplement, RefusesLayoutsThatAreNotKMajorNamingTheFallback) {
  Buffers buf;
  auto const args = valid_args<RowRowOp>(buf);
  Status const s = RowRowOp::can_implement(args);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "row-major")) << s.message();
  EXPECT_TRUE(mentions(s.message(), "gemm::Gemm")) << s.message();
  EXPECT_FALSE(RowRowOp::run(args, nullptr, nullptr).ok());
}

TEST(GemmSm90CanImplement, RefusesSplitK) {
  TILEFUSE_SKIP_UNLESS_SM90();
  Buffers buf;
  auto args = valid_args<Op>(buf);
  args.split_k = 2;
  Status const s = Op::can_implement(args);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(mentions(s.message(), "split_k = 2")) << s.message();
}

TEST(GemmSm90CanImplement, RefusesWhatTmaCannotDescribeNamingTheField) {
  TILEFUSE_SKIP_UNLESS_SM90();
  Buffers buf;
  {
    auto args = valid_args<Op>(buf);
    args.lda = 67;  // >= k, not a multiple of 8
    Status const s = Op::can_implement(args);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(mentions(s.message(), "lda = 67")) << s.message();
  }
  {
    auto args = valid_args<Op>(buf);
    args.ldb = 68;
    Status const s = Op::can_implement(args);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(mentions(s.message(), "ldb = 68")) << s.message();
  }
  {
    auto args = valid_args<Op>(buf);
    args.a = buf.a.as<bfloat16_t const>() + 1;  // 2-byte aligned
    Status const s = Op::can_implement(args);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(mentions(s.message(), "16-byte")) << s.message();
  }
  {
    auto args = valid_args<Op>(buf);
    args.problem.batch = 2;
    args.batch_stride_b = kK * kN + 3;
    Status const s = Op::can_implement(args);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(mentions(s.message(), "batch_stride_b")) << s.message();
  }
  {
    auto args = valid_args<Op>(buf);
    args.problem.k = 0;
    EXPECT_FALSE(Op::can_implement(args).ok());
  }
  {
    auto args = valid_args<Op>(buf);
    args.b = nullptr;
    Status const s = Op::can_implement(args);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(mentions(s.message(), "b is a null pointer")) << s.message();
  }
}

// initialize() once, run(plan) three times: the same D, and a column amax that restarts at its
// identity each run (it would otherwise keep the first run's values, which equal the later ones
// anyway, so the amax buffer is poisoned with NaN between the runs: a run that did not restart it
// would propagate the NaN).
TEST(GemmSm90CanImplement, APlanRunsRepeatedly) {
  TILEFUSE_SKIP_UNLESS_SM90();
  constexpr index_t m = 300, n = 200, k = 136;
  std::vector<bfloat16_t> a(m * k), b(k * n), bias(n);
  for (index_t i = 0; i < m * k; ++i) a[i] = convert<bfloat16_t>(static_cast<double>(i % 5) - 2.0);
  for (index_t i = 0; i < k * n; ++i) b[i] = convert<bfloat16_t>(static_cast<double>(i % 3) - 1.0);
  for (index_t i = 0; i < n; ++i) bias[i] = convert<bfloat16_t>(static_cast<double>(i % 7) - 3.0);
  DeviceBuffer da(a.size() * 2), db(b.size() * 2), dbias(bias.size() * 2), dd(m * n * 2), daux(m * n * 2),
      damax(n * sizeof(float));
  Stream stream;
  da.upload(a.data(), stream.get());
  db.upload(b.data(), stream.get());
  dbias.upload(bias.data(), stream.get());
  AmaxOp::Arguments args;
  args.problem = GemmCoord{m, n, k, 1};
  args.a = da.as<bfloat16_t const>();
  args.b = db.as<bfloat16_t const>();
  args.epilogue.set("D", dd.as<bfloat16_t>())
      .set("aux", daux.as<bfloat16_t>())
      .set("bias", dbias.as<bfloat16_t const>())
      .set("amax", damax.as<float>());
  AmaxOp::Plan plan;
  Status const s = AmaxOp::initialize(args, &plan);
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::vector<std::uint16_t> first(m * n), again(m * n);
  std::vector<float> amax_first(n), amax_again(n);
  for (int run = 0; run < 3; ++run) {
    damax.fill_bytes(kPoisonByte, stream.get());
    dd.fill_bytes(kPoisonByte, stream.get());
    Status const r = AmaxOp::run(plan, stream.get());
    ASSERT_TRUE(r.ok()) << r.to_string();
    stream.synchronize();
    dd.download(run == 0 ? first.data() : again.data(), stream.get());
    damax.download(run == 0 ? amax_first.data() : amax_again.data(), stream.get());
    stream.synchronize();
    if (run > 0) {
      EXPECT_EQ(first, again) << "run " << run;
      EXPECT_EQ(std::vector<float>(amax_first), amax_again) << "run " << run;
    }
  }
  for (index_t c = 0; c < n; ++c) EXPECT_FALSE(std::isnan(amax_first[c])) << "amax[" << c << "]";
  // Spot check against a host product.
  for (index_t r : {index_t{0}, index_t{1}, index_t{127}, index_t{128}, m - 1}) {
    for (index_t c : {index_t{0}, index_t{7}, index_t{8}, index_t{129}, n - 1}) {
      double acc = 0;
      for (index_t i = 0; i < k; ++i) acc += to_double(a[r * k + i]) * to_double(b[c * k + i]);
      double const want = std::max(0.0, acc + to_double(bias[c]));
      bfloat16_t got;
      std::memcpy(&got, &first[r * n + c], 2);
      EXPECT_EQ(to_double(got), to_double(convert<bfloat16_t>(want))) << "D[" << r << ", " << c << "]";
    }
  }
}

}  // namespace
}  // namespace tilefuse::gpu_test
