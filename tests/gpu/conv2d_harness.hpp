// The GPU Conv2d test harness: runs one tilefuse::conv::Conv2d on the device and checks every output
// element against the host reference (reference::conv2d_* in double, then epilogue::run_host with the
// same tree over the output matrix). Built on the GEMM harness (gemm_harness.hpp), whose element
// types, epilogue argument set-up, poisoning and comparison it reuses:
//  * x, w and dy hold integers in [-2, 2] and epilogue inputs integers in [-3, 3]: the fp32
//    accumulator is exact in any order (and with split-K), so exact trees compare bit for bit and
//    trees with transcendental functions against a float64 formula within a bound.
//  * x, w and dy lie between kInputGuard NaN elements on each side: a gather that reads memory for a
//    padding tap, or runs past a tensor, produces NaN.
//  * Outputs hold NaN in every element and a sentinel in guard elements before and after; afterwards
//    every element must match and every guard be intact. The split-K workspace starts as NaN.
//  * Only the operands of the mode are allocated; the others stay null (the op must not need them).
//  * describe() must name the 16-byte path exactly when C and K are multiples of 8 (16 for FP8) and
//    the operands are 16-byte aligned, and the element-wise path otherwise.
//  * FP8 operands (the Hopper kernel's fprop): the tensor cores accumulate the whole K with fewer bits
//    than fp32, so D is checked against the float64 tree within Spec::accumulation_bound(sum |x w|)
//    beyond the rounding of D; the harness computes sum |x w| per output by a second reference pass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/reference/conv2d.hpp>

#include "gemm_harness.hpp"

namespace tilefuse::gpu_test {

inline constexpr index_t kInputGuard = 64;  // NaN elements before and after x, w and dy

struct ConvCase {
  Conv2dProblem problem;    // mode is set by the runner
  int split_k = 1;
  bool misaligned = false;  // x, w, dy start 2 bytes past a 16-byte boundary: element-wise path
  std::uint64_t seed = 1;
};

inline char const* mode_name(ConvMode m) {
  return m == ConvMode::kFprop ? "fprop" : m == ConvMode::kDgrad ? "dgrad" : "wgrad";
}

inline std::string describe_conv_case(ConvCase const& c) {
  Conv2dProblem const& p = c.problem;
  std::ostringstream s;
  s << "N=" << p.N << " H=" << p.H << " W=" << p.W << " C=" << p.C << " K=" << p.K << " R=" << p.R << " S=" << p.S
    << " pad=(" << p.pad_h << "," << p.pad_w << ") stride=(" << p.stride_h << "," << p.stride_w << ") dilation=("
    << p.dilation_h << "," << p.dilation_w << ") -> P=" << p.P() << " Q=" << p.Q() << " split_k=" << c.split_k
    << (c.misaligned ? " misaligned operands" : "") << " | seed " << c.seed;
  return s.str();
}

// ---- operands: x, w or dy between NaN guards ----

struct ConvInput {
  std::string name;
  ElementInfo element;
  index_t elements = 0;
  index_t lead = 0;                 // elements before the tensor (guard, plus 1 when misaligned)
  std::vector<std::uint8_t> image;  // lead + tensor + guard, as uploaded
  DeviceBuffer device;

  template <class T>
  T const* host_data() const {
    return reinterpret_cast<T const*>(image.data() + static_cast<std::size_t>(lead) * element.bytes);
  }
  template <class T>
  T const* device_data() const {
    return reinterpret_cast<T const*>(device.as<std::uint8_t>() + static_cast<std::size_t>(lead) * element.bytes);
  }
};

template <class T>
std::unique_ptr<ConvInput> make_input(std::string name, index_t elements, bool misaligned, std::mt19937_64& rng,
                                      Stream const& stream) {
  auto t = std::make_unique<ConvInput>();
  t->name = std::move(name);
  t->element = element_info<T>();
  t->elements = elements;
  t->lead = kInputGuard + (misaligned ? 1 : 0);
  std::size_t const total = static_cast<std::size_t>(t->lead + elements + kInputGuard);
  t->image.assign(total * t->element.bytes, kPoisonByte);
  std::uniform_int_distribution<int> dist(-2, 2);
  for (index_t i = 0; i < elements; ++i) {
    t->element.write(t->image.data() + static_cast<std::size_t>(t->lead + i) * t->element.bytes, dist(rng));
  }
  t->device = DeviceBuffer(t->image.size());
  t->device.upload(t->image.data(), stream.get());
  return t;
}

// ---- the host reference, split over threads ----

// The mode's convolution in double into acc, the packed output tensor (= the row-major output matrix); the
// reference splits its loops over threads.
template <class T>
void reference_conv(Conv2dProblem const& p, ConvMode mode, T const* x, T const* w, T const* dy,
                    std::vector<double>& acc) {
  TensorNHWC<T const> const x_ref = TensorNHWC<T const>::packed(x, p.activation_extent());
  TensorKRSC<T const> const w_ref = TensorKRSC<T const>::packed(w, p.filter_extent());
  TensorNHWC<T const> const dy_ref = TensorNHWC<T const>::packed(dy, p.output_extent());
  Status st;
  if (mode == ConvMode::kFprop) {
    acc.assign(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K), 0.0);
    st = reference::conv2d_fprop(p, x_ref, w_ref, TensorNHWC<double>::packed(acc.data(), p.output_extent()));
  } else if (mode == ConvMode::kDgrad) {
    acc.assign(static_cast<std::size_t>(p.N * p.H * p.W * p.C), 0.0);
    st = reference::conv2d_dgrad(p, dy_ref, w_ref, TensorNHWC<double>::packed(acc.data(), p.activation_extent()));
  } else {
    acc.assign(static_cast<std::size_t>(p.K * p.R * p.S * p.C), 0.0);
    st = reference::conv2d_wgrad(p, x_ref, dy_ref, TensorKRSC<double>::packed(acc.data(), p.filter_extent()));
  }
  if (!st.ok()) throw std::runtime_error("the reference convolution refused the case: " + st.to_string());
}

// ---- one case ----

template <class Config>
std::string describe_conv_config() {
  if constexpr (std::is_same_v<Config, gemm::Sm80AutoConfig>) {
    return "tile chosen per problem (Sm80AutoConfig)";
  } else {
    return describe_config<Config>();
  }
}

template <class T, ConvMode kMode, class Spec, class Config>
std::string conv_case_title(ConvCase const& c) {
  std::ostringstream s;
  s << short_name<T>() << " " << mode_name(kMode) << ", " << describe_conv_config<Config>() << ", epilogue \""
    << Spec::kName << "\" | " << describe_conv_case(c);
  return s.str();
}

// Runs one case on the device and checks it. Returns false when the case failed. `named` is incremented when
// describe() contains `must_name` (when given).
template <class T, ConvMode kMode, class Spec, class Config>
bool run_conv_case(ConvCase const& c, Stream const& stream, CaseTally& tally, std::string_view must_name = {},
                   int* named = nullptr) {
  using Tree = typename Spec::template Tree<T>;
  using Op = conv::Conv2d<T, kMode, Tree, Config>;
  Conv2dProblem p = c.problem;
  p.mode = kMode;
  std::string const title = conv_case_title<T, kMode, Spec, Config>(c);
  std::mt19937_64 rng(c.seed);

  // The output matrix is the GEMM's M x N, and the packed output tensor.
  GemmCoord const out = Op::output_matrix(p);
  GemmCoord const gemm = p.gemm_extent(kMode);
  if (out.m != gemm.m || out.n != gemm.n || out.batch != 1) {
    ADD_FAILURE() << title << "\n  output_matrix = " << out.m << " x " << out.n << " batch " << out.batch
                  << ", but the implicit GEMM is " << gemm.m << " x " << gemm.n;
    return false;
  }

  bool const reads_x = kMode != ConvMode::kDgrad;
  bool const reads_w = kMode != ConvMode::kWgrad;
  bool const reads_dy = kMode != ConvMode::kFprop;
  std::unique_ptr<ConvInput> x, w, dy;
  if (reads_x) x = make_input<T>("x", p.N * p.H * p.W * p.C, c.misaligned, rng, stream);
  if (reads_w) w = make_input<T>("w", p.K * p.R * p.S * p.C, c.misaligned, rng, stream);
  if (reads_dy) dy = make_input<T>("dy", p.N * p.P() * p.Q() * p.K, c.misaligned, rng, stream);

  // Epilogue tensors over the output matrix, with the GEMM harness's poison and guards.
  GemmCase matrix_case;
  matrix_case.problem = GemmCoord{out.m, out.n, out.k, 1};
  std::vector<std::unique_ptr<ArgTensor>> tensors;
  typename Op::EpilogueArgs device_args;
  epilogue::EpilogueArguments<Tree> host_args;
  add_epilogue_arguments<Spec>(matrix_case, rng, tensors, device_args, host_args);
  for (auto const& t : tensors) t->device.upload(t->initial.data(), stream.get());

  typename Op::Arguments args;

  args.overrides = test_conv_overrides();
  args.problem = p;
  if (x) args.x = x->template device_data<T>();
  if (w) args.w = w->template device_data<T>();
  if (dy) args.dy = dy->template device_data<T>();
  args.epilogue = device_args;
  args.split_k = c.split_k;

  std::string const path = Op::describe(args);
  Status const implementable = Op::can_implement(args);
  if (!implementable.ok()) {
    ADD_FAILURE() << title << "\n  " << path << "\n  can_implement refused: " << implementable.to_string();
    return false;
  }
  ++tally.run;
  tally_path(path, tally);
  if (named != nullptr && !must_name.empty() && path.find(must_name) != std::string::npos) ++*named;
  constexpr index_t kChunk = sizeof(T) == 1 ? 16 : 8;  // channels per 16-byte chunk (FP8 or 16-bit)
  bool const want_fast = p.C % kChunk == 0 && p.K % kChunk == 0 && !c.misaligned;
  bool const fast = path.find("16-byte") != std::string::npos && path.find("element-wise") == std::string::npos;
  bool ok = true;
  if (fast != want_fast) {
    ADD_FAILURE() << title << "\n  describe: " << path << "\n  expected the "
                  << (want_fast ? "16-byte path (C and K multiples of 8, aligned operands)" : "element-wise path");
    ok = false;
  }

  DeviceBuffer workspace(Op::workspace_size(args));
  workspace.fill_bytes(kPoisonByte, stream.get());
  Status const launched = Op::run(args, workspace.get(), stream.get());
  if (!launched.ok()) {
    ADD_FAILURE() << title << "\n  " << path << "\n  run failed: " << launched.to_string();
    return false;
  }

  // The host reference runs while the device works.
  std::vector<double> acc;
  reference_conv<T>(p, kMode, x ? x->template host_data<T>() : nullptr, w ? w->template host_data<T>() : nullptr,
                    dy ? dy->template host_data<T>() : nullptr, acc);
  constexpr bool kFp8 = sizeof(T) == 1;
  std::vector<double> abs_acc;  // FP8: sum |x w| per output, for the accumulation's bound
  if constexpr (kFp8) {
    static_assert(kMode == ConvMode::kFprop && !Spec::kExact, "FP8 convolutions are fprop, checked within a bound");
    auto absolute = [](ConvInput const& in) {
      std::vector<T> v(static_cast<std::size_t>(in.elements));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = convert<T>(std::fabs(to_double(in.template host_data<T>()[i])));
      return v;
    };
    std::vector<T> const abs_x = absolute(*x), abs_w = absolute(*w);
    reference_conv<T>(p, kMode, abs_x.data(), abs_w.data(), nullptr, abs_acc);
  }
  MatrixRef<double const, RowMajor> const acc_ref{acc.data(), out.m, out.n, out.n, out.m * out.n};
  Status const host = epilogue::run_host<Tree>(host_args, acc_ref, epilogue::ProblemShape{out.m, out.n, 1});
  if (!host.ok()) throw std::runtime_error("epilogue::run_host refused the case: " + host.to_string());

  stream.synchronize();
  for (auto const& t : tensors) {
    if (!t->output) continue;
    t->result.resize(t->initial.size());
    t->device.download(t->result.data(), stream.get());
  }

  InputLookup const inputs(tensors);
  for (auto const& t : tensors) {
    if (!t->output) continue;
    ApproxFn approx;
    if constexpr (!Spec::kExact) {
      if (t->name == "D") {
        double const u = t->element.unit_roundoff;
        approx = [&, u](Place const& at) {
          double const a = acc[static_cast<std::size_t>(at.row * out.n + at.col)];
          double const want = Spec::reference(a, at, inputs, out);
          // Rounding to D (half an ulp, relative) plus the float evaluation of the tree.
          double bound = 1.01 * u * std::fabs(want) + 4e-6 * (1.0 + std::fabs(a));
          if constexpr (kFp8) bound += Spec::accumulation_bound(abs_acc[static_cast<std::size_t>(at.row * out.n + at.col)]);
          return Approx{want, bound};
        };
      }
    }
    MismatchReport report;
    check_output(*t, approx, report);
    if (report.count() > 0) {
      ok = false;
      ADD_FAILURE() << title << "\n  " << path << "\n  output \"" << t->name << "\" (" << t->element.name << ", "
                    << t->geometry.describe() << "; row = " << (kMode == ConvMode::kWgrad ? "filter" : "pixel")
                    << ", col = " << (kMode == ConvMode::kWgrad ? "tap (r,s,c)" : "channel")
                    << "): " << report.count() << " mismatches" << report.text();
    }
  }
  return ok;
}

// Runs a list of cases on one stream, continuing after a failed case; stops after `max_failures`. Returns how
// many cases' describe() contained `must_name` (0 when none is given): a test that forces a planner override
// checks with it that the override took effect at least once (else it would check the default path only).
template <class T, ConvMode kMode, class Spec, class Config>
int run_conv_cases(std::vector<ConvCase> const& cases, int max_failures = 4, std::string_view must_name = {}) {
  Stream stream;
  CaseTally tally;
  int named = 0;
  for (auto const& c : cases) {
    bool passed = false;
    try {
      passed = run_conv_case<T, kMode, Spec, Config>(c, stream, tally, must_name, &named);
    } catch (std::exception const& e) {
      // A CUDA error (an illegal address, say) usually leaves the context unusable: stop here.
      ADD_FAILURE() << conv_case_title<T, kMode, Spec, Config>(c) << "\n  " << e.what();
      ++tally.failed;
      break;
    }
    if (!passed && ++tally.failed >= max_failures) {
      ADD_FAILURE() << "stopping after " << tally.failed << " failed cases of " << cases.size();
      break;
    }
  }
  std::cout << "[ cases    ] " << tally.run << " run (" << tally.wide_path << " on the 16-byte path, "
            << tally.narrow_path << " element-wise; " << tally.hopper << " on the Hopper kernel), " << tally.failed
            << " failed" << std::endl;
  ::testing::Test::RecordProperty("cases_run", tally.run);
  ::testing::Test::RecordProperty("cases_failed", tally.failed);
  return named;
}

// What describe() says when a ConvOverrides field forced by a ScopedConvOverride took effect (conv2d_plan.hpp,
// conv2d_describe.hpp); `value` as passed to ScopedConvOverride.
inline std::string_view forced_marker(ConvOverride field, std::string_view value) {
  switch (field) {
    case ConvOverride::kTile: return "forced (ConvOverrides::sm90_tile)";
    case ConvOverride::kSource: return "the gather source forced (ConvOverrides::sm90_source)";
    case ConvOverride::kReduction:
      return value == "kernel" ? "(summed in the kernel" : "(fp32 partials in the workspace, then a reduction pass";
  }
  return {};
}

}  // namespace tilefuse::gpu_test

// One test running a case list on one (element, mode, epilogue, config) instance.
#define TILEFUSE_GPU_CONV_TEST(Suite, Name, T, Mode, Spec, Config, cases)                         \
  TEST(Suite, Name) {                                                                             \
    ::tilefuse::gpu_test::run_conv_cases<T, ::tilefuse::ConvMode::Mode, Spec, Config>(cases);     \
  }
