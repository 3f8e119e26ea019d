// The GPU GEMM test harness: runs one tilefuse::gemm::Gemm on the device with every named epilogue
// argument in device memory, and checks every output element against the host reference
// (reference::gemm in double, then epilogue::run_host with the same tree).
//
// How a case is checked:
//  * A and B hold integers in [-2, 2] and the epilogue inputs integers in [-3, 3], so every partial
//    sum of the fp32 accumulation is an integer below 2^24: the accumulator is exact whatever the
//    order of summation or split-K. Trees whose nodes are exact on such values (add, mul by powers of
//    two, relu, max) are compared bit for bit (+0 and -0 alike) after the same rounding to the output
//    type; trees with transcendental functions are compared with an error bound against a float64
//    formula the test supplies.
//  * Inputs: elements outside the matrix (leading-dimension padding, gaps between batch entries) hold
//    NaN, so a kernel that multiplies padding in produces NaN.
//  * Outputs: before the run, every element of the output holds a NaN pattern (a kernel that skips an
//    element leaves NaN behind), padding and gaps hold a sentinel byte, and kGuardElements elements
//    before and after the output hold the sentinel too; after the run the padding, gaps and guards
//    must still hold it. Reduction outputs are poisoned the same way: the library initialises them.
//  * The split-K workspace is filled with NaN bytes before the run.
//  * tf32 (float and tfloat32_t inputs): the integers in [-2, 2] are exact in tf32, so the same exact
//    comparisons hold; the epilogue tensors of a tfloat32_t GEMM are float (EpilogueElement). Cases
//    with Inputs::kNormal instead draw A and B from N(0, 1) and compare D = acc against float64 sums
//    of the tf32-rounded inputs within an fp32-accumulation bound (see normal_input_bound).
//  * Every element is checked; the first few mismatches are reported with (batch, row, col).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/data_type.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/host_driver.hpp>
#include <tilefuse/epilogue/tree_walk.hpp>
#include <tilefuse/gemm/device/gemm.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/reference/gemm.hpp>

#include "gpu_test_support.hpp"

namespace tilefuse::gpu_test {

using epilogue::NodeKind;

inline constexpr std::uint8_t kPoisonByte = 0xff;    // all-ones: NaN in half, bfloat16 and float
inline constexpr std::uint8_t kSentinelByte = 0xa5;  // padding, gaps and guards of outputs
inline constexpr index_t kGuardElements = 256;       // guard elements before and after each output

// ---- element types, type-erased ----

struct ElementInfo {
  std::size_t bytes = 0;
  char const* name = "";
  double (*read)(void const*) = nullptr;
  void (*write)(void*, double) = nullptr;  // rounds to nearest even
  double unit_roundoff = 0.0;              // 2^-p for p significant bits
};

template <class E>
ElementInfo element_info() {
  ElementInfo info;
  info.bytes = sizeof(E);
  info.name = name_of(data_type_of<E>);
  info.read = [](void const* p) {
    E e;
    std::memcpy(&e, p, sizeof(E));
    return to_double(e);
  };
  info.write = [](void* p, double v) {
    E const e = convert<E>(v);
    std::memcpy(p, &e, sizeof(E));
  };
  if constexpr (std::is_same_v<E, bfloat16_t>) {
    info.unit_roundoff = 1.0 / 256.0;
  } else if constexpr (std::is_same_v<E, half_t> || std::is_same_v<E, tfloat32_t>) {
    info.unit_roundoff = 1.0 / 2048.0;
  } else if constexpr (std::is_same_v<E, float_e4m3_t>) {
    info.unit_roundoff = 1.0 / 16.0;  // 3 stored mantissa bits (FP8 conv operands)
  } else if constexpr (std::is_same_v<E, float_e5m2_t>) {
    info.unit_roundoff = 1.0 / 8.0;
  } else {
    static_assert(std::is_same_v<E, float>, "the GPU tests use bfloat16, float16, float32 and FP8 tensors");
    info.unit_roundoff = 1.0 / 16777216.0;
  }
  return info;
}

template <class E>
char const* short_name() {
  if constexpr (std::is_same_v<E, bfloat16_t>) return "bf16";
  if constexpr (std::is_same_v<E, half_t>) return "fp16";
  if constexpr (std::is_same_v<E, tfloat32_t>) return "tf32";
  if constexpr (std::is_same_v<E, float>) return "fp32 (as tf32)";
  return name_of(data_type_of<E>);
}

template <class Layout>
constexpr bool is_column_major() {
  return std::is_same_v<Layout, ColumnMajor>;
}

// ---- where an element lies in a strided, batched matrix or vector ----

struct Place {
  index_t batch = 0;
  index_t row = 0;
  index_t col = 0;
};

struct Geometry {
  index_t rows = 0;
  index_t cols = 0;
  bool column_major = false;
  bool vector = false;       // one value per column or per row: rows == 1, index = col
  index_t ld = 0;            // distance between rows (row-major) or columns (column-major)
  index_t batch = 1;
  index_t batch_stride = 0;  // 0: one copy shared by every batch entry (inputs only)

  index_t major() const { return column_major ? cols : rows; }
  index_t minor() const { return column_major ? rows : cols; }
  // Elements from the first to one past the last element of one batch entry.
  index_t span() const { return rows == 0 || cols == 0 ? 0 : (major() - 1) * ld + minor(); }
  index_t body_elements() const {
    return batch_stride == 0 || batch <= 1 ? span() : (batch - 1) * batch_stride + span();
  }
  index_t offset(Place const& at) const {
    index_t const b = batch_stride == 0 ? 0 : at.batch;
    return b * batch_stride + (column_major ? at.col * ld + at.row : at.row * ld + at.col);
  }
  // The element at body offset i, or nothing when i is padding or a gap between batch entries.
  std::optional<Place> locate(index_t i) const {
    index_t b = 0;
    index_t within = i;
    if (batch_stride > 0) {
      b = i / batch_stride;
      within = i % batch_stride;
    }
    if (b >= batch) return std::nullopt;
    index_t const maj = within / ld;
    index_t const min = within % ld;
    Place const at{b, column_major ? min : maj, column_major ? maj : min};
    if (at.row >= rows || at.col >= cols) return std::nullopt;
    return at;
  }
  std::string describe() const {
    std::ostringstream s;
    if (vector) {
      s << cols << " values";
    } else {
      s << rows << " x " << cols << (column_major ? " column-major" : " row-major") << ", ld " << ld;
    }
    if (batch > 1) s << ", batch stride " << batch_stride;
    return s.str();
  }
};

// How a case chooses a leading dimension: packed, padded to a multiple of 8 elements (16 bytes, the
// fast path's alignment), or padded to an odd number (forces the narrow path).
enum class Ld { kPacked, kAligned, kOdd };

inline index_t choose_ld(index_t packed, Ld mode) {
  switch (mode) {
    case Ld::kAligned: return (packed / 8 + 1) * 8 + 8;  // a multiple of 8, at least 9 more than packed
    case Ld::kOdd: return packed % 2 == 0 ? packed + 3 : packed + 2;
    default: return packed;
  }
}

// Batch entries are whole padded matrices (major extent x ld, the convention of the library's checks)
// plus `batch_gap` elements; `shared` gives one matrix to the whole batch (batch_stride 0).
inline Geometry matrix_geometry(index_t rows, index_t cols, bool column_major, Ld ld_mode, index_t batch,
                                index_t batch_gap, bool shared = false) {
  Geometry g;
  g.rows = rows;
  g.cols = cols;
  g.column_major = column_major;
  g.ld = choose_ld(column_major ? rows : cols, ld_mode);
  g.batch = batch;
  g.batch_stride = shared ? 0 : g.major() * g.ld + batch_gap;
  return g;
}

inline Geometry vector_geometry(index_t length, index_t batch, index_t batch_stride) {
  Geometry g;
  g.rows = 1;
  g.cols = length;
  g.vector = true;
  g.ld = length;
  g.batch = batch;
  g.batch_stride = batch_stride;
  return g;
}

// ---- one tensor of a case: host images and device memory ----

struct ArgTensor {
  std::string name;
  bool output = false;
  ElementInfo element;
  Geometry geometry;
  index_t guard = 0;                  // elements before and after the body (outputs only)
  std::vector<std::uint8_t> initial;  // guard + body + guard as uploaded before the run
  std::vector<std::uint8_t> expected; // outputs: `initial` after the host reference ran on it
  std::vector<std::uint8_t> result;   // outputs: what the device left
  DeviceBuffer device;
  bool default_strides = false;       // pass kPacked instead of the (packed) strides

  index_t total_elements() const { return geometry.body_elements() + 2 * guard; }
  std::size_t guard_bytes() const { return static_cast<std::size_t>(guard) * element.bytes; }
  void* device_body() const { return device.as<std::uint8_t>() + guard_bytes(); }
  std::uint8_t const* initial_body() const { return initial.data() + guard_bytes(); }
  std::uint8_t* expected_body() { return expected.data() + guard_bytes(); }
  double value(std::vector<std::uint8_t> const& image, index_t element_index) const {
    return element.read(image.data() + static_cast<std::size_t>(element_index) * element.bytes);
  }
  // The value of an input at a place of the output (vectors: RowBroadcast by column, ColBroadcast by
  // row, chosen by `by_row`).
  double input_at(Place const& at, bool by_row = false) const {
    Place p = at;
    if (geometry.vector) p = Place{at.batch, 0, by_row ? at.row : at.col};
    return value(initial, guard + geometry.offset(p));
  }
};

// Builds the host image of a tensor: inputs get random integers in [lo, hi] and NaN outside the
// matrix; outputs get NaN inside and the sentinel outside, with guards.
inline std::unique_ptr<ArgTensor> make_tensor(std::string name, ElementInfo element, Geometry geometry, bool output,
                                              std::mt19937_64& rng, int lo, int hi, bool normal = false) {
  auto t = std::make_unique<ArgTensor>();
  t->name = std::move(name);
  t->output = output;
  t->element = element;
  t->geometry = geometry;
  t->guard = output ? kGuardElements : 0;
  std::size_t const bytes = static_cast<std::size_t>(t->total_elements()) * element.bytes;
  t->initial.assign(bytes, output ? kSentinelByte : kPoisonByte);
  std::uniform_int_distribution<int> dist(lo, hi);
  index_t const body = geometry.body_elements();
  for (index_t i = 0; i < body; ++i) {
    if (!geometry.locate(i)) continue;
    std::uint8_t* at = t->initial.data() + static_cast<std::size_t>(t->guard + i) * element.bytes;
    if (output) {
      std::memset(at, kPoisonByte, element.bytes);
    } else {
      element.write(at, normal ? std::normal_distribution<double>(0.0, 1.0)(rng) : static_cast<double>(dist(rng)));
    }
  }
  if (output) t->expected = t->initial;
  t->device = DeviceBuffer(bytes);
  return t;
}

// ---- cases ----

// What A and B hold: integers in [-2, 2] (exact sums, the default), or N(0, 1) samples (tf32 inputs
// only, with a D = acc tree: checks the tf32 rounding and the accumulation within a bound).
enum class Inputs { kIntegers, kNormal };

// The element type of a GEMM's epilogue tensors (D, C, bias, ...): the input type, except float for
// tfloat32_t inputs (tf32 is an input format; its outputs are float).
template <class T>
using EpilogueElement = std::conditional_t<std::is_same_v<T, tfloat32_t>, float, T>;

struct GemmCase {
  GemmCoord problem{1, 1, 1, 1};
  Ld ld_a = Ld::kPacked;
  Ld ld_b = Ld::kPacked;
  Ld ld_epilogue = Ld::kPacked;  // C, D and auxiliary outputs
  index_t batch_gap = 0;         // extra elements between the batch entries of every tensor
  bool shared_vectors = false;   // bias vectors with batch_stride 0 (one for the whole batch)
  bool shared_b = false;         // one B for the whole batch (batch_stride_b = 0)
  int split_k = 1;
  gemm::GemmFamily family = gemm::GemmFamily::kAuto;  // gemm::Gemm's typed override (operations that have it)
  bool refusal_allowed = false;  // can_implement may refuse the case (then nothing is run)
  Inputs inputs = Inputs::kIntegers;
  std::uint64_t seed = 1;
};

inline char const* ld_name(Ld mode) {
  switch (mode) {
    case Ld::kAligned: return "padded to x8";
    case Ld::kOdd: return "padded odd";
    default: return "packed";
  }
}

inline std::string describe_case(GemmCase const& c) {
  std::ostringstream s;
  s << "m=" << c.problem.m << " n=" << c.problem.n << " k=" << c.problem.k << " batch=" << c.problem.batch
    << " split_k=" << c.split_k << " | lda " << ld_name(c.ld_a) << ", ldb " << ld_name(c.ld_b) << ", epilogue ld "
    << ld_name(c.ld_epilogue) << ", batch gap " << c.batch_gap << (c.shared_vectors ? ", shared vectors" : "")
    << (c.shared_b ? ", shared B" : "")
    << " | seed " << c.seed;
  return s.str();
}

template <class Config>
std::string describe_config() {
  std::ostringstream s;
  s << "tile " << Config::kTileM << "x" << Config::kTileN << "x" << Config::kTileK << ", " << Config::kStages
    << " stages";
  return s.str();
}

// Looks up epilogue inputs by name, for the float64 formulas of inexact trees.
class InputLookup {
 public:
  explicit InputLookup(std::vector<std::unique_ptr<ArgTensor>> const& tensors) : tensors_(tensors) {}
  // The value of input `name` that the element at `at` reads (RowBroadcast: by column; ColBroadcast:
  // pass by_row = true; AuxLoad: the element itself).
  double operator()(std::string_view name, Place const& at, bool by_row = false) const {
    for (auto const& t : tensors_) {
      if (t->name == name && !t->output) return t->input_at(at, by_row);
    }
    throw std::runtime_error("the test's reference asked for an unknown epilogue input " + std::string(name));
  }

 private:
  std::vector<std::unique_ptr<ArgTensor>> const& tensors_;
};

// ---- the host reference ----

// acc[(b * m + r) * n + c] = sum_k A(r, k) B(k, c) in double (the reference splits its rows over threads).
template <class T, class LA, class LB>
void reference_accumulator(GemmCoord p, ArgTensor const& a, ArgTensor const& b, std::vector<double>& acc) {
  acc.assign(static_cast<std::size_t>(p.batch * p.m * p.n), 0.0);
  MatrixRef<T const, LA> const a_ref{reinterpret_cast<T const*>(a.initial_body()), p.m, p.k, a.geometry.ld,
                                     a.geometry.batch_stride};
  MatrixRef<T const, LB> const b_ref{reinterpret_cast<T const*>(b.initial_body()), p.k, p.n, b.geometry.ld,
                                     b.geometry.batch_stride};
  MatrixRef<double, RowMajor> const out{acc.data(), p.m, p.n, p.n, p.m * p.n};
  Status const s = reference::gemm<double>(p, a_ref, b_ref, out);
  if (!s.ok()) throw std::runtime_error("reference::gemm refused the case: " + s.to_string());
}

// Inputs::kNormal references: acc = the float64 product of A and B rounded to tf32 as the kernel rounds
// them (round_to_tf32: to nearest, ties away from zero; a no-op for tfloat32_t), and acc_abs = the
// same product of their absolute values (sum_k |a b|, for the bound).
template <class T, class LA, class LB>
void normal_input_references(GemmCoord p, ArgTensor const& a, ArgTensor const& b, std::vector<double>& acc,
                             std::vector<double>& acc_abs) {
  static_assert(sizeof(T) == sizeof(float), "tf32 inputs are 32-bit");
  auto rounded = [](ArgTensor const& t, bool absolute) {
    auto copy = std::make_unique<ArgTensor>();
    copy->element = t.element;
    copy->geometry = t.geometry;
    copy->guard = t.guard;
    copy->initial = t.initial;
    for (std::size_t i = 0; i + sizeof(float) <= copy->initial.size(); i += sizeof(float)) {
      float x;
      std::memcpy(&x, copy->initial.data() + i, sizeof(float));
      x = round_to_tf32(x);  // NaN padding stays NaN
      if (absolute) x = std::fabs(x);
      std::memcpy(copy->initial.data() + i, &x, sizeof(float));
    }
    return copy;
  };
  reference_accumulator<T, LA, LB>(p, *rounded(a, false), *rounded(b, false), acc);
  reference_accumulator<T, LA, LB>(p, *rounded(a, true), *rounded(b, true), acc_abs);
}

// The error allowed for an element of D = acc with normal inputs: the fp32 accumulation of tf32
// products (exact: 11 x 11 significant bits) in k / 8 mma steps (counted as k / 4 in case the hardware
// adds in halves), each rounding or truncating by at most 2 ulps of the running |sum| <= sum_k |a b|
// (4 * 2^-24 = 2^-22), plus split-K and the final conversion (the 16):
//   bound = (k / 4 + 16) * 2^-22 * sum_k |a b|.
// A kernel that skips the tf32 rounding (the tensor core then truncates) moves each product by up to
// ~2^-9 of its size, biased towards zero: an error of ~2^-10 sqrt(k) per element, several times this
// bound (k = 256: ~2e-2 against ~3e-3 for sum |a b| ~ 0.64 k); a dropped k-tile (8-32 products of
// size ~1) fails every element.
inline double normal_input_bound(index_t k, double sum_abs) {
  return (static_cast<double>(k) / 4.0 + 16.0) * std::ldexp(sum_abs, -22);
}

// ---- comparison ----

class MismatchReport {
 public:
  explicit MismatchReport(std::size_t keep = 8) : keep_(keep) {}
  void add(std::string text) {
    if (lines_.size() < keep_) lines_.push_back(std::move(text));
    ++count_;
  }
  std::size_t count() const { return count_; }
  std::string text() const {
    std::ostringstream s;
    for (auto const& l : lines_) s << "\n    " << l;
    if (count_ > lines_.size()) s << "\n    ... and " << (count_ - lines_.size()) << " more";
    return s.str();
  }

 private:
  std::size_t keep_;
  std::size_t count_ = 0;
  std::vector<std::string> lines_;
};

inline std::string hex_bytes(std::uint8_t const* p, std::size_t n) {
  static char const digits[] = "0123456789abcdef";
  std::string s = "0x";
  for (std::size_t i = n; i-- > 0;) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

inline std::string format_place(ArgTensor const& t, Place const& at) {
  std::ostringstream s;
  s << t.name << "[batch " << at.batch;
  if (t.geometry.vector) {
    s << ", index " << at.col << "]";
  } else {
    s << ", row " << at.row << ", col " << at.col << "]";
  }
  return s.str();
}

// Describes a body offset that is not an element: which batch entry and line it pads.
inline std::string format_padding(ArgTensor const& t, index_t i) {
  Geometry const& g = t.geometry;
  std::ostringstream s;
  s << t.name << " padding at body offset " << i;
  index_t b = 0;
  index_t within = i;
  if (g.batch_stride > 0) {
    b = i / g.batch_stride;
    within = i % g.batch_stride;
  }
  s << " (batch " << b << ", " << (g.column_major ? "column " : "row ") << within / g.ld << ", position "
    << within % g.ld << "; the tensor is " << g.describe() << ")";
  return s.str();
}

// Approximate reference of one output element: the value and the allowed absolute error.
struct Approx {
  double value = 0.0;
  double bound = 0.0;
};
using ApproxFn = std::function<Approx(Place const&)>;

// Checks one output tensor element by element; `approx` (may be empty) replaces the bitwise
// comparison of elements with a bounded one.
inline void check_output(ArgTensor const& t, ApproxFn const& approx, MismatchReport& report) {
  std::size_t const eb = t.element.bytes;
  index_t const total = t.total_elements();
  index_t const body = t.geometry.body_elements();
  for (index_t j = 0; j < total; ++j) {
    std::uint8_t const* got = t.result.data() + static_cast<std::size_t>(j) * eb;
    std::uint8_t const* want = t.expected.data() + static_cast<std::size_t>(j) * eb;
    index_t const i = j - t.guard;
    if (i < 0 || i >= body) {
      if (std::memcmp(got, want, eb) != 0) {
        std::ostringstream s;
        s << t.name << (i < 0 ? " guard before the output, element " : " guard after the output, element ")
          << (i < 0 ? i : i - body) << ": overwritten with " << hex_bytes(got, eb);
        report.add(s.str());
      }
      continue;
    }
    std::optional<Place> const at = t.geometry.locate(i);
    if (!at) {
      if (std::memcmp(got, want, eb) != 0) {
        report.add(format_padding(t, i) + ": overwritten with " + hex_bytes(got, eb));
      }
      continue;
    }
    double const g = t.element.read(got);
    if (approx) {
      Approx const a = approx(*at);
      if (!(std::fabs(g - a.value) <= a.bound)) {
        std::ostringstream s;
        s.precision(9);
        s << format_place(t, *at) << ": got " << g << " (" << hex_bytes(got, eb) << "), want " << a.value << " +- "
          << a.bound;
        if (std::isnan(g) && std::all_of(got, got + eb, [](std::uint8_t x) { return x == kPoisonByte; })) {
          s << " [still the poison: never written]";
        }
        report.add(s.str());
      }
    } else if (std::memcmp(got, want, eb) != 0 && !(g == 0.0 && t.element.read(want) == 0.0)) {
      // (+0 and -0 count as equal: the sign of an exact zero depends on the order of operations.)
      std::ostringstream s;
      s.precision(9);
      s << format_place(t, *at) << ": got " << g << " (" << hex_bytes(got, eb) << "), want " << t.element.read(want)
        << " (" << hex_bytes(want, eb) << ")";
      if (std::all_of(got, got + eb, [](std::uint8_t x) { return x == kPoisonByte; })) {
        s << " [still the poison: never written]";
      }
      report.add(s.str());
    }
  }
}

// ---- epilogue specifications ----
//
// A Spec names a tree template and how to check it:
//   template <class T> using Tree = ...;           the epilogue for element type T
//   static constexpr char const* kName;            for messages
//   static constexpr bool kExact;                  bitwise comparison against run_host
//   static float scalar(std::string_view name, GemmCoord const&);   values of Scalar<> leaves (if any)
//   static double reference(double acc, Place const&, InputLookup const&, GemmCoord const&);
//                                                  float64 formula of D (inexact trees only)
template <class Spec>
concept HasScalars = requires(GemmCoord p) { Spec::scalar(std::string_view{}, p); };

// The value of a Scalar<> leaf (a template on the node, so that trees without scalars need no
// Spec::scalar).
template <class Spec, class Node>
float scalar_value(std::string const& name, GemmCoord const& p) {
  static_assert(HasScalars<Spec>, "a tree with Scalar<> leaves needs Spec::scalar(name, problem)");
  return Spec::scalar(name, p);
}

// Creates every named argument of the tree (tensors and scalars) and sets it on both the device and
// the host argument sets.
template <class Spec, class Tree>
void add_epilogue_arguments(GemmCase const& c, std::mt19937_64& rng, std::vector<std::unique_ptr<ArgTensor>>& tensors,
                            epilogue::EpilogueArguments<Tree>& device_args,
                            epilogue::EpilogueArguments<Tree>& host_args) {
  GemmCoord const p = c.problem;
  std::vector<std::string> done;
  epilogue::for_each_node_type<Tree>([&]<class Node>() {
    if constexpr (epilogue::is_named_node<Node>()) {
      std::string const name = epilogue::node_name<Node>();
      if (std::find(done.begin(), done.end(), name) != done.end()) return;
      done.push_back(name);
      constexpr NodeKind kind = Node::kKind;
      if constexpr (kind == NodeKind::kScalar) {
        float const v = scalar_value<Spec, Node>(name, p);
        device_args.set(name, v);
        host_args.set(name, v);
      } else {
        using E = typename Node::Element;
        constexpr bool is_output =
            kind == NodeKind::kStore || kind == NodeKind::kRowReduce || kind == NodeKind::kColReduce;
        Geometry g;
        if constexpr (kind == NodeKind::kStore || kind == NodeKind::kAuxLoad) {
          g = matrix_geometry(p.m, p.n, is_column_major<typename Node::LayoutTag>(), c.ld_epilogue, p.batch,
                              c.batch_gap);
        } else {
          index_t const length = kind == NodeKind::kRowBroadcast || kind == NodeKind::kColReduce ? p.n : p.m;
          bool const shared = !is_output && c.shared_vectors;
          g = vector_geometry(length, p.batch, shared ? 0 : length + c.batch_gap);
        }
        auto t = make_tensor(name, element_info<E>(), g, is_output, rng, -3, 3);
        t->default_strides = c.ld_epilogue == Ld::kPacked && c.batch_gap == 0 && !(c.shared_vectors && !is_output);
        epilogue::Strides strides;
        if (!t->default_strides) {
          strides.ld = g.vector ? epilogue::kPacked : g.ld;
          strides.batch_stride = g.batch_stride;
        }
        if constexpr (is_output) {
          device_args.set(name, static_cast<E*>(t->device_body()), strides);
          host_args.set(name, reinterpret_cast<E*>(t->expected_body()), strides);
        } else {
          device_args.set(name, static_cast<E const*>(t->device_body()), strides);
          host_args.set(name, reinterpret_cast<E const*>(t->initial_body()), strides);
        }
        tensors.push_back(std::move(t));
      }
    }
  });
}

// What a case looked like, for SCOPED_TRACE and messages.
template <class T, class LA, class LB, class Spec, class Config>
std::string case_title(GemmCase const& c) {
  std::ostringstream s;
  s << short_name<T>() << ", A " << LA::kName << ", B " << LB::kName << ", " << describe_config<Config>()
    << ", epilogue \"" << Spec::kName << "\" | " << describe_case(c);
  return s.str();
}

// What run_gemm_cases counts: outcomes and the operand path each case took, by describe()'s words.
struct CaseTally {
  int run = 0;
  int refused = 0;
  int failed = 0;
  int wide_path = 0;    // describe() names the 16-byte path
  int narrow_path = 0;  // describe() names the element-wise path
  int hopper = 0;       // describe() names an sm90 TMA + WGMMA kernel
};

inline void tally_path(std::string const& described, CaseTally& tally) {
  if (described.find("element-wise") != std::string::npos) {
    ++tally.narrow_path;
  } else if (described.find("16-byte") != std::string::npos) {
    ++tally.wide_path;
  }
  if (described.find("sm90 TMA + WGMMA") != std::string::npos) ++tally.hopper;
}

// Runs one case on the device and checks it. Returns false when the case failed. `Operation` is the
// device-level GEMM under test: gemm::Gemm by default, or any class template with its template
// parameters (Element, LayoutA, LayoutB, Epilogue, Config) and its Arguments / can_implement /
// workspace_size / run / describe (gemm::GemmSm90).
template <class T, class LA, class LB, class Spec, class Config,
          template <class, class, class, class, class> class Operation = gemm::Gemm>
bool run_gemm_case(GemmCase const& c, Stream const& stream, CaseTally& tally) {
  using Tree = typename Spec::template Tree<EpilogueElement<T>>;
  using Op = Operation<T, LA, LB, Tree, Config>;
  GemmCoord const p = c.problem;
  std::string const title = case_title<T, LA, LB, Spec, Config>(c);
  std::mt19937_64 rng(c.seed);

  auto a = make_tensor("A", element_info<T>(), matrix_geometry(p.m, p.k, is_column_major<LA>(), c.ld_a, p.batch, c.batch_gap),
                       false, rng, -2, 2, c.inputs == Inputs::kNormal);
  auto b = make_tensor("B", element_info<T>(),
                       matrix_geometry(p.k, p.n, is_column_major<LB>(), c.ld_b, p.batch, c.batch_gap, c.shared_b), false,
                       rng, -2, 2, c.inputs == Inputs::kNormal);
  if (c.inputs == Inputs::kNormal && !std::is_same_v<T, float> && !std::is_same_v<T, tfloat32_t>) {
    throw std::runtime_error("Inputs::kNormal is for the tf32 path (float and tfloat32_t inputs)");
  }
  std::vector<std::unique_ptr<ArgTensor>> tensors;
  typename Op::EpilogueArgs device_args;
  epilogue::EpilogueArguments<Tree> host_args;
  add_epilogue_arguments<Spec>(c, rng, tensors, device_args, host_args);

  a->device.upload(a->initial.data(), stream.get());
  b->device.upload(b->initial.data(), stream.get());
  for (auto const& t : tensors) t->device.upload(t->initial.data(), stream.get());

  typename Op::Arguments args;
  args.problem = p;
  args.a = static_cast<T const*>(a->device_body());
  args.b = static_cast<T const*>(b->device_body());
  if (c.ld_a != Ld::kPacked || c.batch_gap != 0) {
    args.lda = a->geometry.ld;
    args.batch_stride_a = a->geometry.batch_stride;
  }
  if (c.ld_b != Ld::kPacked || c.batch_gap != 0 || c.shared_b) {
    args.ldb = b->geometry.ld;
    args.batch_stride_b = b->geometry.batch_stride;
  }
  args.epilogue = device_args;
  args.split_k = c.split_k;
  if constexpr (requires { args.family; }) args.family = c.family;

  std::string const path = Op::describe(args);
  Status const implementable = Op::can_implement(args);
  if (!implementable.ok()) {
    if (c.refusal_allowed) {
      ++tally.refused;
      std::cout << "[ refused  ] " << title << ": " << implementable.to_string() << "\n";
      return true;
    }
    ADD_FAILURE() << title << "\n  " << path << "\n  can_implement refused: " << implementable.to_string();
    return false;
  }
  ++tally.run;
  tally_path(path, tally);
  std::size_t const workspace_bytes = Op::workspace_size(args);
  DeviceBuffer workspace(workspace_bytes);
  workspace.fill_bytes(kPoisonByte, stream.get());
  Status const launched = Op::run(args, workspace.get(), stream.get());
  if (!launched.ok()) {
    ADD_FAILURE() << title << "\n  " << path << "\n  run failed: " << launched.to_string();
    return false;
  }

  // The host reference runs while the device works.
  std::vector<double> acc;
  std::vector<double> acc_abs;  // Inputs::kNormal: sum_k |A(r, k) B(k, c)|, for the error bound
  if (c.inputs == Inputs::kNormal) {
    if constexpr (sizeof(T) == sizeof(float)) normal_input_references<T, LA, LB>(p, *a, *b, acc, acc_abs);
  } else {
    reference_accumulator<T, LA, LB>(p, *a, *b, acc);
  }
  MatrixRef<double const, RowMajor> const acc_ref{acc.data(), p.m, p.n, p.n, p.m * p.n};
  Status const host = epilogue::run_host<Tree>(host_args, acc_ref, epilogue::ProblemShape{p.m, p.n, p.batch});
  if (!host.ok()) throw std::runtime_error("epilogue::run_host refused the case: " + host.to_string());

  stream.synchronize();
  for (auto const& t : tensors) {
    if (!t->output) continue;
    t->result.resize(t->initial.size());
    t->device.download(t->result.data(), stream.get());
  }

  InputLookup const inputs(tensors);
  bool ok = true;
  for (auto const& t : tensors) {
    if (!t->output) continue;
    ApproxFn approx;
    if (c.inputs == Inputs::kNormal && t->name == "D") {
      approx = [&](Place const& at) {
        std::size_t const i = static_cast<std::size_t>((at.batch * p.m + at.row) * p.n + at.col);
        return Approx{acc[i], normal_input_bound(p.k, acc_abs[i])};
      };
    } else if constexpr (!Spec::kExact) {
      if (t->name == "D") {
        double const u = t->element.unit_roundoff;
        approx = [&, u](Place const& at) {
          double const x = acc[static_cast<std::size_t>((at.batch * p.m + at.row) * p.n + at.col)];
          double const want = Spec::reference(x, at, inputs, p);
          // Rounding to D (half an ulp, relative) plus the float evaluation of the tree (a few float
          // ulps of the operands' magnitude, which is at most about |acc| + the inputs).
          return Approx{want, 1.01 * u * std::fabs(want) + 4e-6 * (1.0 + std::fabs(x))};
        };
      }
    }
    MismatchReport report;
    check_output(*t, approx, report);
    if (report.count() > 0) {
      ok = false;
      ADD_FAILURE() << title << "\n  " << path << "\n  output \"" << t->name << "\" (" << t->element.name << ", "
                    << t->geometry.describe() << "): " << report.count() << " mismatches" << report.text();
    }
  }
  return ok;
}

// Runs a list of cases (one stream for all), continuing after a failed case; stops after
// `max_failures` failed cases so that one broken path does not flood the log.
template <class T, class LA, class LB, class Spec, class Config,
          template <class, class, class, class, class> class Operation = gemm::Gemm>
void run_gemm_cases(std::vector<GemmCase> const& cases, int max_failures = 4) {
  Stream stream;
  CaseTally tally;
  for (auto const& c : cases) {
    bool passed = false;
    try {
      passed = run_gemm_case<T, LA, LB, Spec, Config, Operation>(c, stream, tally);
    } catch (std::exception const& e) {
      // A CUDA error (an illegal address, say) usually leaves the context unusable: stop here.
      ADD_FAILURE() << case_title<T, LA, LB, Spec, Config>(c) << "\n  " << e.what();
      ++tally.failed;
      break;
    }
    if (!passed) {
      if (++tally.failed >= max_failures) {
        ADD_FAILURE() << "stopping after " << tally.failed << " failed cases of " << cases.size();
        break;
      }
    }
  }
  std::cout << "[ cases    ] " << tally.run << " run (" << tally.wide_path << " on the 16-byte path, "
            << tally.narrow_path << " element-wise), " << tally.refused << " refused as allowed, " << tally.failed
            << " failed" << std::endl;
  ::testing::Test::RecordProperty("cases_run", tally.run);
  ::testing::Test::RecordProperty("cases_failed", tally.failed);
  ::testing::Test::RecordProperty("cases_16_byte_path", tally.wide_path);
  ::testing::Test::RecordProperty("cases_element_wise_path", tally.narrow_path);
}

}  // namespace tilefuse::gpu_test
