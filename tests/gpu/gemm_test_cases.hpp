// The epilogue trees the GPU tests run and the lists of cases (shapes, strides, split-K) they run them
// on. Shapes include 1, non-multiples of every tile extent (7, 13, 127, 129, 255, 257, 1000, 2049) and
// exact multiples, up to a few thousand; the host reference costs at most a few 1e8 multiply-adds
// per case.
#pragma once

#include <cmath>
#include <random>
#include <string_view>
#include <vector>

#include "gemm_harness.hpp"

namespace tilefuse::gpu_test {

using gemm::Sm80LargeConfig;
using gemm::Sm80SmallConfig;
using gemm::Sm80Tf32LargeConfig;
using gemm::Sm80Tf32SmallConfig;

// Sm80LargeConfig loading by cp.async on Hopper too (otherwise gemm::Gemm loads its K-contiguous 16-bit
// operands by TMA on an sm_90 device): keeps that path tested there.
struct Sm80LargeCpAsyncConfig : Sm80LargeConfig {
  static constexpr bool kTmaOnHopper = false;
};

// ---- epilogue specifications (see gemm_harness.hpp for what a Spec provides) ----
namespace specs {

using namespace tilefuse::epilogue;

struct StoreD {
  template <class T>
  using Tree = Store<"D", T, Acc>;
  static constexpr char const* kName = "D = acc";
  static constexpr bool kExact = true;
};

struct AlphaBetaC {
  template <class T>
  using Tree = Store<"D", T, Add<Mul<Scalar<"alpha">, Acc>, Mul<Scalar<"beta">, AuxLoad<"C", T>>>>;
  static constexpr char const* kName = "D = alpha * acc + beta * C";
  static constexpr bool kExact = true;  // powers of two times integers
  static float scalar(std::string_view name, GemmCoord const&) { return name == "alpha" ? 0.5f : -2.0f; }
};

struct BiasRowRelu {
  template <class T>
  using Tree = Store<"D", T, Relu<Add<Acc, RowBroadcast<"bias", T>>>>;
  static constexpr char const* kName = "D = relu(acc + bias[col])";
  static constexpr bool kExact = true;
};

struct BiasCol {
  template <class T>
  using Tree = Store<"D", T, Add<Acc, ColBroadcast<"bias", T>>>;
  static constexpr char const* kName = "D = acc + bias[row]";
  static constexpr bool kExact = true;
};

// A per-row scale and a per-column bias, FP8 row-wise's shape of tree in 16 bits (integer-valued:
// exact).
struct RowScaleColumnBias {
  template <class T>
  using Tree = Store<"D", T, Add<Mul<Acc, ColBroadcast<"scale", T>>, RowBroadcast<"bias", T>>>;
  static constexpr char const* kName = "D = acc * scale[row] + bias[col]";
  static constexpr bool kExact = true;
};

struct ResidualRelu {
  template <class T>
  using Tree = Store<"D", T, Relu<Add<Add<Acc, RowBroadcast<"bias", T>>, AuxLoad<"C", T>>>>;
  static constexpr char const* kName = "D = relu(acc + bias[col] + C)";
  static constexpr bool kExact = true;
};

struct ResidualColumnMajorC {
  template <class T>
  using Tree = Store<"D", T, Add<Mul<Scalar<"alpha">, Acc>, AuxLoad<"C", T, ColumnMajor>>>;
  static constexpr char const* kName = "D = alpha * acc + C (C column-major)";
  static constexpr bool kExact = true;
  static float scalar(std::string_view, GemmCoord const&) { return 2.0f; }
};

// The float64 formulas below are those of epilogue/ops.h, evaluated in double.
inline double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct GeluTanhD {
  template <class T>
  using Tree = Store<"D", T, GeluTanh<Acc>>;
  static constexpr char const* kName = "D = gelu_tanh(acc)";
  static constexpr bool kExact = false;
  static double reference(double acc, Place const&, InputLookup const&, GemmCoord const&) { return gelu_tanh(acc); }
};

struct SiluBias {
  template <class T>
  using Tree = Store<"D", T, Silu<Add<Acc, RowBroadcast<"bias", T>>>>;
  static constexpr char const* kName = "D = silu(acc + bias[col])";
  static constexpr bool kExact = false;
  static double reference(double acc, Place const& at, InputLookup const& in, GemmCoord const&) {
    double const z = acc + in("bias", at);
    return z * sigmoid(z);
  }
};

// A different activation above and below row r0 (the coordinate-aware epilogue of the README).
struct RegionSigmoidTanh {
  template <class T>
  using Tree = Store<"D", T, Where<Less<Row, Scalar<"r0">>, Sigmoid<Acc>, Tanh<Acc>>>;
  static constexpr char const* kName = "D = row < r0 ? sigmoid(acc) : tanh(acc)";
  static constexpr bool kExact = false;
  static float scalar(std::string_view, GemmCoord const& p) { return static_cast<float>(p.m / 2); }
  static double reference(double acc, Place const& at, InputLookup const&, GemmCoord const& p) {
    return static_cast<double>(at.row) < static_cast<double>(p.m / 2) ? sigmoid(acc) : std::tanh(acc);
  }
};

// Coordinates and constants alone: the sm90 kernel evaluates such trees on its accumulator registers
// (the packed epilogue), where each pair of elements must see its own row and column.
struct CoordinateRelu {
  template <class T>
  using Tree = Store<"D", T, Where<Less<Col, Constant<37.0f>>, Relu<Acc>, Add<Acc, Row>>>;
  static constexpr char const* kName = "D = col < 37 ? relu(acc) : acc + row";
  static constexpr bool kExact = true;
};

// An auxiliary output (the pre-activation) and a per-column amax of it, inside the tree.
struct AuxAmax {
  template <class T>
  using Tree = Store<"D", T, Relu<ColReduce<"amax", reduce::AbsMax, Store<"aux", T, Add<Acc, RowBroadcast<"bias", T>>>>>>;
  static constexpr char const* kName = "aux = acc + bias[col]; amax[col] = max |aux|; D = relu(aux)";
  static constexpr bool kExact = true;
};

}  // namespace specs

// ---- case lists ----

inline GemmCase make_case(index_t m, index_t n, index_t k, index_t batch = 1) {
  GemmCase c;
  c.problem = GemmCoord{m, n, k, batch};
  return c;
}

// Shapes, batch 1: fixed edge shapes plus a few random ones (seeded). Every other shape pads A's and
// B's leading dimensions to a multiple of 8 elements, so that odd shapes also run on the 16-byte path
// (its partial chunks at the m, n and k edges); the others are packed and mostly take the element-wise
// path.
inline std::vector<GemmCase> shape_sweep_cases(std::uint64_t seed) {
  static constexpr index_t kShapes[][3] = {
      {1, 1, 1},       {7, 13, 1},       {13, 7, 127},     {127, 129, 13},    {129, 127, 255},
      {255, 257, 129}, {257, 255, 7},    {1000, 13, 257},  {13, 1000, 129},   {1, 2049, 257},
      {2049, 1, 129},  {2049, 257, 64},  {257, 1000, 1000}, {129, 129, 2049}, {128, 256, 32},
      {256, 512, 96},  {1000, 1000, 33},
      // More 128x256 tiles than a 132-SM GPU runs at once (231), two k-tiles, the second partial.
      {2600, 2600, 72},
  };
  std::vector<GemmCase> cases;
  for (auto const& s : kShapes) cases.push_back(make_case(s[0], s[1], s[2]));
  // Random shapes: half near the interesting sizes, half anywhere in [1, 3000]; at most 3e8 MACs.
  static constexpr index_t kInteresting[] = {1, 7, 13, 127, 129, 255, 257, 1000, 2049};
  std::mt19937_64 rng(seed);
  auto dim = [&] {
    if (rng() % 2 == 0) {
      index_t const base = kInteresting[rng() % std::size(kInteresting)];
      return std::max<index_t>(1, base + static_cast<index_t>(rng() % 5) - 2);
    }
    return static_cast<index_t>(1 + rng() % 3000);
  };
  while (cases.size() < std::size(kShapes) + 5) {
    GemmCase c = make_case(dim(), dim(), dim());
    if (c.problem.m * c.problem.n * c.problem.k > 300'000'000) continue;
    c.seed = rng();
    cases.push_back(c);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].seed ^= seed * 1000 + i;
    if (i % 2 == 1) cases[i].ld_a = cases[i].ld_b = Ld::kAligned;
  }
  return cases;
}

// Batches, padded leading dimensions (aligned: the 16-byte path; odd: the element-wise path), gaps
// between batch entries, a B shared by the batch.
inline std::vector<GemmCase> stride_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  GemmCase c = make_case(129, 257, 65, 3);  // packed defaults (kPacked) with a batch
  add(c);
  c = make_case(129, 257, 72, 3);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  c.batch_gap = 8;
  add(c);
  c = make_case(127, 255, 13, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kOdd;
  c.batch_gap = 3;
  add(c);
  c = make_case(64, 64, 64, 4);  // only A is narrow
  c.ld_a = Ld::kOdd;
  add(c);
  c = make_case(64, 136, 64, 2);  // only B is narrow
  c.ld_b = Ld::kOdd;
  add(c);
  c = make_case(200, 136, 72, 2);  // only the epilogue tensors are padded, odd
  c.ld_epilogue = Ld::kOdd;
  c.batch_gap = 5;
  add(c);
  c = make_case(1000, 1000, 40, 5);  // big batch, aligned padding, shared B and shared bias
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  c.shared_b = true;
  c.shared_vectors = true;
  add(c);
  c = make_case(1, 7, 1, 7);  // tiny matrices, many of them
  c.ld_epilogue = Ld::kOdd;
  add(c);
  c = make_case(2049, 129, 257, 2);  // tall; A padded odd, B padded to a multiple of 8
  c.ld_a = Ld::kOdd;
  c.ld_b = Ld::kAligned;
  add(c);
  return cases;
}

// Parallel split-K: several split counts, with batches and narrow operands; one case asks for more
// splits than K has tiles (the library may refuse it, but must not run it wrongly).
inline std::vector<GemmCase> split_k_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c, int split) {
    c.split_k = split;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  add(make_case(129, 257, 1000), 2);
  GemmCase aligned = make_case(129, 257, 1000);
  aligned.ld_a = aligned.ld_b = Ld::kAligned;
  add(aligned, 3);
  add(make_case(257, 129, 2049, 2), 4);
  add(make_case(13, 7, 127), 3);
  aligned = make_case(1000, 1000, 257);
  aligned.ld_a = aligned.ld_b = aligned.ld_epilogue = Ld::kAligned;
  add(aligned, 5);
  add(make_case(1, 1, 64), 2);
  add(make_case(64, 64, 2049), 16);
  GemmCase c = make_case(127, 255, 300, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kOdd;
  c.batch_gap = 3;
  add(c, 2);
  c = make_case(64, 64, 13);
  c.refusal_allowed = true;
  add(c, 4);
  return cases;
}

// split_k = 0 (the operation chooses): small outputs with long K, which split, packed (element-wise
// path) and aligned, batched, with odd leading dimensions; one whose K is too short to split, and one
// whose 81 tiles of 128x256 leave no SM idle enough to split.
inline std::vector<GemmCase> auto_split_k_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.split_k = 0;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  add(make_case(127, 255, 8191));
  GemmCase c = make_case(64, 72, 4100);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  add(c);
  c = make_case(33, 17, 3001, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kOdd;
  c.batch_gap = 5;
  add(c);
  add(make_case(1, 1, 2048));
  add(make_case(300, 500, 257));
  c = make_case(1100, 2100, 520);
  c.ld_a = c.ld_b = Ld::kAligned;
  add(c);
  c = make_case(128, 256, 8192);  // on sm_90: K split 8 ways on the 64x64 tile
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  add(c);
  return cases;
}

// A few small problems for every path: what the compute-sanitizer runs (GemmSmall.*).
inline std::vector<GemmCase> small_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  add(make_case(1, 1, 1));
  GemmCase c = make_case(7, 13, 5);  // 16-byte path with a partial chunk in k
  c.ld_a = c.ld_b = Ld::kAligned;
  add(c);
  add(make_case(130, 260, 33));  // crosses a tile boundary in m and n
  c = make_case(130, 260, 33);   // the same on the 16-byte path
  c.ld_a = c.ld_b = Ld::kAligned;
  add(c);
  c = make_case(33, 65, 40, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  c.batch_gap = 8;
  add(c);
  c = make_case(17, 9, 70, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kOdd;
  c.batch_gap = 1;
  add(c);
  c = make_case(40, 24, 96);
  c.split_k = 2;
  add(c);
  c = make_case(19, 23, 77, 2);
  c.ld_a = Ld::kOdd;
  c.split_k = 3;
  add(c);
  // More batch entries (140) than SMs, 9 tiles of 128x256 each, partial in m, n and k: the sanitizers
  // see blocks of one kernel follow each other on an SM.
  c = make_case(300, 520, 100, 140);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  add(c);
  return cases;
}

// The cases every fused epilogue runs: edge shapes, strided batches (shared and per-batch vectors),
// narrow paths, split-K.
inline std::vector<GemmCase> epilogue_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  auto aligned = [](GemmCase c) {
    c.ld_a = c.ld_b = Ld::kAligned;
    return c;
  };
  add(make_case(1, 1, 1));
  add(aligned(make_case(13, 7, 127)));
  add(make_case(129, 257, 255));
  add(aligned(make_case(257, 1000, 129)));
  add(make_case(2049, 13, 64));
  add(make_case(256, 512, 64));
  GemmCase c = make_case(129, 257, 64, 3);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  c.batch_gap = 8;
  c.shared_vectors = true;
  add(c);
  c = make_case(127, 255, 31, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kOdd;
  c.batch_gap = 3;
  add(c);
  c = aligned(make_case(127, 255, 500));
  c.split_k = 3;
  add(c);
  c = make_case(255, 129, 200, 2);
  c.ld_epilogue = Ld::kOdd;
  c.split_k = 2;
  add(c);
  return cases;
}

// The tf32 path with N(0, 1) inputs (Inputs::kNormal, D = acc only): all paths (16-byte and
// element-wise, edges in every dimension), batches, split-K; k from 8 to 1000 so that the bound stays
// well below the error of a kernel that skips the tf32 rounding.
inline std::vector<GemmCase> tf32_normal_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.inputs = Inputs::kNormal;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  GemmCase c = make_case(257, 129, 256);
  add(c);
  c.ld_a = c.ld_b = Ld::kAligned;
  add(c);
  c = make_case(128, 256, 64);  // whole tiles, 16-byte path
  add(c);
  c = make_case(1000, 255, 200, 2);
  c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
  c.batch_gap = 4;
  add(c);
  c = make_case(129, 300, 1000);
  c.ld_a = Ld::kOdd;
  c.split_k = 3;
  add(c);
  c = make_case(64, 1000, 512);
  c.ld_a = c.ld_b = Ld::kAligned;
  c.split_k = 4;
  add(c);
  add(make_case(13, 7, 9));
  add(make_case(300, 260, 8));
  return cases;
}

}  // namespace tilefuse::gpu_test

// Three tests of one (element, layouts, epilogue, config) instance: the shape sweep, strided batches
// and split-K. Suite and Name are test-name tokens; `seed` keeps the random shapes apart.
#define TILEFUSE_GPU_GEMM_SWEEP_TESTS(Suite, Name, T, LA, LB, Spec, Config, seed)                     \
  TEST(Suite, Name##Shapes) {                                                                       \
    ::tilefuse::gpu_test::run_gemm_cases<T, LA, LB, Spec, Config>(::tilefuse::gpu_test::shape_sweep_cases(seed)); \
  }                                                                                                  \
  TEST(Suite, Name##Strides) {                                                                      \
    ::tilefuse::gpu_test::run_gemm_cases<T, LA, LB, Spec, Config>(::tilefuse::gpu_test::stride_cases(seed)); \
  }                                                                                                  \
  TEST(Suite, Name##SplitK) {                                                                       \
    ::tilefuse::gpu_test::run_gemm_cases<T, LA, LB, Spec, Config>(::tilefuse::gpu_test::split_k_cases(seed)); \
  }

// One test running the epilogue case list on one instance.
#define TILEFUSE_GPU_GEMM_EPILOGUE_TEST(Suite, Name, T, LA, LB, Spec, Config, seed) \
  TEST(Suite, Name) {                                                              \
    ::tilefuse::gpu_test::run_gemm_cases<T, LA, LB, Spec, Config>(::tilefuse::gpu_test::epilogue_cases(seed)); \
  }

// One test running the small cases (what the compute-sanitizer stages run: GemmSmall.*).
#define TILEFUSE_GPU_GEMM_SMALL_TEST(Name, T, LA, LB, Spec, Config, seed) \
  TEST(GemmSmall, Name) {                                                 \
    ::tilefuse::gpu_test::run_gemm_cases<T, LA, LB, Spec, Config>(::tilefuse::gpu_test::small_cases(seed)); \
  }
