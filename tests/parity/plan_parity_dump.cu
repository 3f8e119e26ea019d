// Writes the C++ planners' choices for random problems, every mode and epilogue kind, aligned and not, on
// sm_80- and sm_90-like device facts, as JSON, for tests/python/test_plan_parity.py: the Python package
// must get the same plans through tilefuse._C from its own view of each problem (its traced epilogue's
// facts). The conv plans are made from conv::Conv2d's own plan input (its tree facts, its element type,
// its alignment check), so the two sides share nothing but the planner function. Host code; runs
// without a GPU (no kernel is launched or instantiated). Usage: plan_parity_dump <out.json> [cases]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/gemm/device/gemm_plan.hpp>

namespace {

using namespace tilefuse;
using namespace tilefuse::epilogue;

// The epilogue kinds, named as tests/python/test_plan_parity.py names its Python functions.
template <class T> using None = Store<"D", T, Acc>;
template <class T> using Bias = Store<"D", T, Add<Acc, RowBroadcast<"bias", T>>>;
template <class T> using BiasRelu = Store<"D", T, Relu<Add<Acc, RowBroadcast<"bias", T>>>>;
template <class T> using BiasGelu = Store<"D", T, GeluErf<Add<Acc, RowBroadcast<"bias", T>>>>;
template <class T> using BiasResidualRelu =
    Store<"D", T, Relu<Add<Add<Acc, RowBroadcast<"bias", T>>, AuxLoad<"residual", T>>>>;
template <class T> using ResidualAfterRelu =
    Store<"D", T, Add<Relu<Add<Acc, RowBroadcast<"bias", T>>>, AuxLoad<"residual", T>>>;
template <class T> using ResidualTwice = Store<"D", T, Add<Relu<Add<Acc, AuxLoad<"residual", T>>>, AuxLoad<"residual", T>>>;
template <class T> using Scaled = Store<"D", T, Mul<Acc, Scalar<"alpha">>>;
template <class T> using Fp32Residual = Store<"D", float, Add<Acc, AuxLoad<"residual", T>>>;
template <class T> using RowScale = Store<"D", T, Mul<Acc, ColBroadcast<"scale", float>>>;

char const* mode_name(ConvMode m) { return m == ConvMode::kFprop ? "fprop" : m == ConvMode::kDgrad ? "dgrad" : "wgrad"; }

std::string quoted(std::string const& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct Writer {
  std::ofstream out;
  bool first = true;
  void item(std::string const& json) {
    out << (first ? "\n" : ",\n") << json;
    first = false;
  }
};

template <class Element, ConvMode kMode, template <class> class Tree>
void conv_case(Writer& w, char const* tree_name, char const* element, Conv2dProblem p, DeviceFacts device, bool aligned,
               int split_k, bool deterministic, conv::ConvOverrides overrides, bool residual_aligned) {
  using Op = conv::Conv2d<Element, kMode, Tree<Element>>;
  typename Op::Arguments args;
  p.mode = kMode;
  args.problem = p;
  // Fake device addresses: only their alignment enters the plan.
  auto const* a = reinterpret_cast<Element const*>(static_cast<std::uintptr_t>(aligned ? 0x10000 : 0x10002));
  auto const* b = reinterpret_cast<Element const*>(std::uintptr_t{0x20000});
  args.x = kMode == ConvMode::kDgrad ? nullptr : (kMode == ConvMode::kFprop ? a : b);
  args.w = kMode == ConvMode::kWgrad ? nullptr : b;
  args.dy = kMode == ConvMode::kFprop ? nullptr : a;
  args.split_k = split_k;
  args.deterministic = deterministic;
  args.overrides = overrides;
  conv::ConvPlanInput in = Op::plan_input(args, device);
  // The residual's alignment fact, as conv::Conv2d derives it from its bound tree: a fake (m, n) residual,
  // 2 bytes off 16 where residual_aligned is false (Python's side makes the same tensor and reads the fact).
  GemmCoord const out = conv::conv_output_matrix(p);
  auto const* residual = reinterpret_cast<void const*>(std::uintptr_t{residual_aligned ? 0x30000u : 0x30002u});
  if (in.tree.residual_by_tma) in.residual_unaligned = gemm::tma_residual_unaligned(residual, out.n, 1, 0);
  conv::ConvPlan const plan = conv::plan_conv2d(in);
  auto const s = [](auto const& v) { return std::to_string(v); };
  auto const b01 = [](bool v) { return std::string(v ? "true" : "false"); };
  std::string j = "{\"kind\": \"conv\", \"tree\": " + quoted(tree_name) + ", \"mode\": " + quoted(mode_name(kMode)) +
                  ", \"element\": " + quoted(element) + ", \"geometry\": [" + s(p.N) + ", " + s(p.H) + ", " + s(p.W) +
                  ", " + s(p.C) + ", " + s(p.K) + ", " + s(p.R) + ", " + s(p.S) + ", " + s(p.pad_h) + ", " +
                  s(p.pad_w) + ", " + s(p.stride_h) + ", " + s(p.stride_w) + ", " + s(p.dilation_h) + ", " +
                  s(p.dilation_w) + "], \"device\": [" + s(device.major) + ", " + s(device.minor) + ", " +
                  s(device.sm_count) + "], \"aligned\": " + b01(aligned) + ", \"residual_aligned\": " + b01(residual_aligned) +
                  ", \"residual_unaligned\": " + quoted(in.residual_unaligned) + ", \"split_k\": " + s(split_k) +
                  ", \"deterministic\": " + b01(deterministic) + ", \"overrides\": {";
  std::string o;
  if (overrides.family) o += "\"family\": \"sm80\"";
  if (overrides.sm90_tile) o += std::string(o.empty() ? "" : ", ") + "\"sm90_tile\": " + quoted(conv::name_of(*overrides.sm90_tile));
  if (overrides.sm90_source) o += std::string(o.empty() ? "" : ", ") + "\"sm90_source\": \"gather\"";
  if (overrides.split_reduction) {
    o += std::string(o.empty() ? "" : ", ") + "\"split_reduction\": " +
         (*overrides.split_reduction == conv::SplitReduction::kInKernel ? "\"kernel\"" : "\"pass\"");
  }
  j += o + "}, \"facts\": {\"reads_memory\": " + b01(in.tree.reads_memory) +
       ", \"residual_by_tma\": " + b01(in.tree.residual_by_tma) + "}, \"plan\": {\"family\": " +
       quoted(plan.family == conv::ConvFamily::kSm90 ? "sm90" : "sm80") + ", \"split_k\": " + s(plan.split_k) +
       ", \"sm80_split_k\": " + s(plan.sm80_split_k) + ", \"sm80_config\": " + quoted(gemm::config_name_of(plan.sm80_tile)) +
       ", \"aligned\": " + b01(plan.aligned) + ", \"why_narrow\": " + quoted(plan.why_narrow) +
       ", \"why_not_hopper\": " + quoted(plan.why_not_hopper) + ", \"sm90_tile\": " + quoted(conv::name_of(plan.sm90_tile)) +
       ", \"sm90_config\": " + quoted(conv::config_name_of(plan.sm90_tile, plan.im2col)) + ", \"im2col\": " +
       b01(plan.im2col) + ", \"half_k\": " + b01(plan.half_k) + ", \"pointwise\": " + b01(plan.pointwise) +
       ", \"split_in_kernel\": " + b01(plan.split_in_kernel) + ", \"sm_count\": " + s(plan.sm_count) +
       ", \"why_source\": " + quoted(plan.why_source) + ", \"why_tile\": " + quoted(plan.why_tile) + "}}";
  w.item(j);
}

template <class Element, template <class> class Tree>
void conv_modes(Writer& w, char const* tree_name, char const* element, ConvMode mode, Conv2dProblem const& p,
                DeviceFacts device, bool aligned, int split_k, bool deterministic, conv::ConvOverrides o, bool ra) {
  if (mode == ConvMode::kFprop) conv_case<Element, ConvMode::kFprop, Tree>(w, tree_name, element, p, device, aligned, split_k, deterministic, o, ra);
  if constexpr (sizeof(Element) == 2) {
    if (mode == ConvMode::kDgrad) conv_case<Element, ConvMode::kDgrad, Tree>(w, tree_name, element, p, device, aligned, split_k, deterministic, o, ra);
    if (mode == ConvMode::kWgrad) conv_case<Element, ConvMode::kWgrad, Tree>(w, tree_name, element, p, device, aligned, split_k, deterministic, o, ra);
  }
}

template <class Element>
void conv_trees(Writer& w, int tree, char const* element, ConvMode mode, Conv2dProblem const& p, DeviceFacts device,
                bool aligned, int split_k, bool deterministic, conv::ConvOverrides o, bool ra) {
  switch (tree) {
    case 0: return conv_modes<Element, None>(w, "none", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 1: return conv_modes<Element, Bias>(w, "bias", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 2: return conv_modes<Element, BiasRelu>(w, "bias_relu", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 3: return conv_modes<Element, BiasGelu>(w, "bias_gelu", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 4: return conv_modes<Element, BiasResidualRelu>(w, "bias_residual_relu", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 5: return conv_modes<Element, ResidualAfterRelu>(w, "residual_after_relu", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 6: return conv_modes<Element, ResidualTwice>(w, "residual_twice", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 7: return conv_modes<Element, Scaled>(w, "scaled", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    case 8: return conv_modes<Element, Fp32Residual>(w, "fp32_residual", element, mode, p, device, aligned, split_k, deterministic, o, ra);
    default: return conv_modes<Element, RowScale>(w, "row_scale", element, mode, p, device, aligned, split_k, deterministic, o, ra);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: plan_parity_dump <out.json> [conv cases, default 600]\n");
    return 2;
  }
  int const cases = argc > 2 ? std::atoi(argv[2]) : 600;
  Writer w{std::ofstream(argv[1])};
  w.out << "[";
  std::mt19937_64 rng(20261127);
  auto pick = [&](auto const& list) { return list[rng() % list.size()]; };
  std::array<DeviceFacts, 4> const devices{{{9, 0, 132}, {9, 0, 114}, {8, 0, 108}, {8, 9, 128}}};
  std::array<index_t, 12> const channels{3, 8, 16, 24, 64, 96, 128, 192, 256, 320, 512, 1024};
  int written = 0;
  while (written < cases) {
    Conv2dProblem p;
    p.N = 1 + static_cast<index_t>(rng() % 64);
    p.H = 1 + static_cast<index_t>(rng() % 96);
    p.W = 1 + static_cast<index_t>(rng() % 96);
    p.C = pick(channels);
    p.K = pick(channels);
    p.R = pick(std::array<index_t, 4>{1, 3, 5, 7});
    p.S = rng() % 4 == 0 ? pick(std::array<index_t, 3>{1, 3, 5}) : p.R;
    p.pad_h = static_cast<index_t>(rng() % 4);
    p.pad_w = rng() % 4 == 0 ? static_cast<index_t>(rng() % 4) : p.pad_h;
    p.stride_h = rng() % 3 == 0 ? 2 : 1;
    p.stride_w = p.stride_h;
    p.dilation_h = rng() % 8 == 0 ? 2 : 1;
    p.dilation_w = p.dilation_h;
    if (!check(p).ok() || p.N * p.H * p.W * p.C > (index_t{1} << 30)) continue;
    DeviceFacts const device = pick(devices);
    bool const aligned = rng() % 5 != 0;
    int const split_k = pick(std::array<int, 4>{0, 0, 1, 5});
    bool const deterministic = rng() % 4 == 0;
    bool const ra = rng() % 3 != 0;  // the residual (where a tree loads one by TMA) 16-byte aligned
    conv::ConvOverrides o;
    switch (rng() % 10) {
      case 0: o.sm90_tile = static_cast<conv::ConvSm90Tile>(rng() % 9); break;
      case 1: o.sm90_source = conv::ConvSource::kGather; break;
      case 2: o.split_reduction = rng() % 2 ? conv::SplitReduction::kInKernel : conv::SplitReduction::kPass; break;
      case 3: o.family = conv::ConvFamily::kSm80; break;
      default: break;
    }
    auto const mode = static_cast<ConvMode>(rng() % 3);
    int const tree = static_cast<int>(rng() % 10);
    switch (rng() % 5) {
      case 0: conv_trees<half_t>(w, tree, "float16", mode, p, device, aligned, split_k, deterministic, o, ra); break;
      case 1: conv_trees<float_e4m3_t>(w, tree, "float8_e4m3", ConvMode::kFprop, p, device, aligned, split_k, deterministic, o, ra); break;
      default: conv_trees<bfloat16_t>(w, tree, "bfloat16", mode, p, device, aligned, split_k, deterministic, o, ra); break;
    }
    ++written;
  }
  // The Hopper GEMM's and the scaled GEMM's configs.
  for (int i = 0; i < 400; ++i) {
    bool const few_rows = rng() % 4 == 0;  // the skinny kernel's m, or just past it
    GemmCoord g{1 + static_cast<index_t>(rng() % (few_rows ? 10 : 9000)), 1 + static_cast<index_t>(rng() % 9000),
                1 + static_cast<index_t>(rng() % 9000), rng() % 4 == 0 ? 3 : 1};
    if (rng() % 2 == 0) {  // n and k whole 16-byte rows, as most real GEMMs (and the tensors Python builds) have
      g.n = (g.n + 7) / 8 * 8;
      g.k = (g.k + 7) / 8 * 8;
    }
    DeviceFacts const device = pick(devices);
    auto const scaling = static_cast<gemm::Fp8Scaling>(rng() % 3);
    bool const fast = rng() % 2 == 0;
    gemm::Sm90GemmPlan const plain = gemm::plan_gemm_sm90(g, device);
    gemm::Sm90GemmPlan const scaled = gemm::plan_scaled_gemm(g, device, scaling, fast);
    // The whole plan (gemm::Gemm's): operand facts and a split request drawn at random.
    gemm::GemmRequest request;
    request.problem = g;
    request.sixteen_bit = rng() % 8 != 0;
    request.hopper_layouts = rng() % 3 != 0;
    request.tma_aligned = rng() % 3 != 0;
    request.split_k = rng() % 3 == 0 ? static_cast<int>(rng() % 9) : 0;
    request.skinny_code = rng() % 2 == 0;
    request.residual_by_tma = rng() % 3 == 0;
    gemm::GemmPlan whole;
    if (!gemm::plan_gemm(request, device, &whole).ok()) return 1;  // (the family is not forced: it always plans)
    auto const s = [](auto const& v) { return std::to_string(v); };
    char const* const scaling_name = scaling == gemm::Fp8Scaling::kPerTensor ? "per-tensor"
                                     : scaling == gemm::Fp8Scaling::kRowWise ? "row-wise" : "block-wise";
    w.item("{\"kind\": \"gemm\", \"problem\": [" + s(g.m) + ", " + s(g.n) + ", " + s(g.k) + ", " + s(g.batch) +
           "], \"device\": [" + s(device.major) + ", " + s(device.minor) + ", " + s(device.sm_count) +
           "], \"scaling\": \"" + scaling_name + "\", \"fast_accum\": " + (fast ? "true" : "false") +
           ", \"plain\": {\"config\": " + quoted(plain.config) + ", \"tile\": " + quoted(plain.tile) +
           "}, \"scaled\": {\"config\": " + quoted(scaled.config) + ", \"tile\": " + quoted(scaled.tile) + "}" +
           ", \"request\": {\"sixteen_bit\": " + (request.sixteen_bit ? "true" : "false") +
           ", \"hopper_layouts\": " + (request.hopper_layouts ? "true" : "false") +
           ", \"tma_aligned\": " + (request.tma_aligned ? "true" : "false") + ", \"split_k\": " + s(request.split_k) +
           ", \"skinny_code\": " + (request.skinny_code ? "true" : "false") +
           ", \"residual_by_tma\": " + (request.residual_by_tma ? "true" : "false") +
           "}, \"whole\": {\"family\": " + quoted(gemm::name_of(whole.family)) +
           ", \"copy_operands\": " + (whole.copy_operands ? "true" : "false") + ", \"padded_k\": " + s(whole.padded_k) +
           ", \"config\": " + quoted(whole.sm90.config) + ", \"sm80_config\": " + quoted(whole.sm80_config) +
           ", \"sm80_aligned\": " + (whole.sm80_aligned ? "true" : "false") + ", \"split_k\": " +
           s(whole.family == gemm::GemmFamily::kSm90 ? whole.sm90.split_k : whole.split_k) + "}}");
  }
  w.out << "\n]\n";
  std::printf("plan_parity_dump: %d conv and 400 gemm plans in %s\n", cases, argv[1]);
  return w.out.good() ? 0 : 1;
}
