// tilefuse._C's planner half: the C++ planners (conv/device/conv2d_plan.hpp, gemm/device/gemm_plan.hpp)
// bound for Python, so that tilefuse.Conv2d, Gemm and scaled_mm make every choice through the same code
// as conv::Conv2d, gemm::Gemm and gemm::ScaledGemm. Plans come back as dicts of plain values.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include <tilefuse/conv/conv2d_problem_check.hpp>
#include <tilefuse/conv/device/conv2d_describe.hpp>
#include <tilefuse/conv/device/conv2d_dgrad_phases.hpp>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/conv/device/conv2d_wgrad_im2col.hpp>
#include <tilefuse/conv/device/conv2d_sm90_launch.hpp>
#include <tilefuse/gemm/device/gemm_plan.hpp>
#include <tilefuse/gemm/device/gemm_sm80_describe.hpp>
#include <tilefuse/gemm/device/gemm_sm90_describe.hpp>

#include "conv_values.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using tilefuse::DeviceFacts;
using tilefuse::conv::ConvElement;

// (major, minor, sm_count)
using DeviceTuple = std::tuple<int, int, int>;
DeviceFacts device_of(DeviceTuple const& d) { return {std::get<0>(d), std::get<1>(d), std::get<2>(d)}; }

using tilefuse_python::conv_element;
using tilefuse_python::conv_mode;

// geometry: N, H, W, C, K, R, S, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w.
using Geometry = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t>;

// The planner's input for a checked problem of `g` in `mode` (the facts every conv binding is given).
tilefuse::conv::ConvPlanInput conv_plan_input(Geometry const& g, tilefuse::ConvMode mode, std::string const& element,
                                              DeviceTuple const& device, bool operands_aligned) {
  tilefuse::conv::ConvPlanInput in;
  auto& p = in.problem;
  std::tie(p.N, p.H, p.W, p.C, p.K, p.R, p.S, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w) = g;
  p.mode = mode;
  if (tilefuse::Status const s = tilefuse::check(p); !s.ok()) throw std::invalid_argument("tilefuse: " + s.message());
  in.element = conv_element(element);
  in.device = device_of(device);
  in.operands_aligned = operands_aligned;
  return in;
}

// The Hopper tile's k: 64-channel k-tiles where FP8's half-k configs run, else the element's.
int sm90_tile_k(tilefuse::conv::ConvPlan const& plan, tilefuse::conv::ConvElement element) {
  return plan.half_k ? 64 : static_cast<int>(tilefuse::conv::sm90_conv_tile_k(element));
}

// conv::Conv2d::describe()'s text of a plan, with the kernel's stages, schedule and TMA residual as the compiled
// kernel reports them (its layout).
std::string describe_conv_plan(tilefuse::conv::ConvPlanInput const& in, tilefuse::conv::ConvPlan const& plan,
                               std::string const& element, int stages, bool ping_pong, bool tma_aux) {
  using namespace tilefuse::conv;
  tilefuse::ConvMode const m = in.problem.mode;
  bool const sixteen_bit = in.element == ConvElement::kBfloat16 || in.element == ConvElement::kFloat16;
  ConvDescribeFacts f{m == tilefuse::ConvMode::kFprop ? "conv2d fprop" : m == tilefuse::ConvMode::kDgrad ? "conv2d dgrad"
                                                                                                   : "conv2d wgrad"};
  f.auto_config = true;  // the Python package runs the planner's tiles
  f.dgrad_sm90 = m == tilefuse::ConvMode::kDgrad && sixteen_bit;
  f.wgrad_sm90 = m == tilefuse::ConvMode::kWgrad && sixteen_bit;
  f.chunk_elements = 16 / element_bytes(in.element);
  if (is_fp8(in.element)) f.fp8_element = element.c_str();
  tilefuse::GemmCoord const out = conv_output_matrix(in.problem);
  if (plan.family == ConvFamily::kSm90) {
    std::array<int, 2> const tile = tile_shape_of(plan.sm90_tile);
    return describe_sm90_plan(f, plan, out, {tile[0], tile[1], sm90_tile_k(plan, in.element), stages, ping_pong, tma_aux});
  }
  return describe_sm80_plan(f, plan, out, tilefuse::gemm::sm80_gemm_kernel_facts(plan.sm80_tile));
}

nb::dict plan_conv2d(std::string const& mode, Geometry const& g, std::string const& element, bool reads_memory,
                     bool residual_by_tma, DeviceTuple const& device, bool operands_aligned, int split_k,
                     bool deterministic, std::optional<std::string> const& family,
                     std::optional<std::string> const& sm90_tile, std::optional<std::string> const& sm90_source,
                     std::optional<std::string> const& split_reduction, std::string const& residual_unaligned) {
  using namespace tilefuse::conv;
  ConvPlanInput in = conv_plan_input(g, conv_mode(mode), element, device, operands_aligned);
  auto const& p = in.problem;
  in.tree = {reads_memory, residual_by_tma};
  in.split_k = split_k;
  in.deterministic = deterministic;
  in.residual_unaligned = residual_unaligned;
  if (family) {
    if (*family != "sm80" && *family != "sm90") throw std::invalid_argument("tilefuse: family must be sm80 or sm90");
    in.overrides.family = *family == "sm80" ? ConvFamily::kSm80 : ConvFamily::kSm90;
  }
  if (sm90_tile) {
    in.overrides.sm90_tile = conv_sm90_tile_named(*sm90_tile);
    if (!in.overrides.sm90_tile) throw std::invalid_argument("tilefuse: no Hopper conv tile named '" + *sm90_tile + "'");
  }
  if (sm90_source) {
    if (*sm90_source != "gather") throw std::invalid_argument("tilefuse: only the gather source can be forced");
    in.overrides.sm90_source = ConvSource::kGather;
  }
  if (split_reduction) {
    if (*split_reduction != "kernel" && *split_reduction != "pass") {
      throw std::invalid_argument("tilefuse: split_reduction must be kernel or pass");
    }
    in.overrides.split_reduction = *split_reduction == "kernel" ? SplitReduction::kInKernel : SplitReduction::kPass;
  }
  ConvPlan const plan = plan_conv2d(in);
  std::array<int, 3> const sm80 = tilefuse::gemm::sm80_tile_shape(plan.sm80_tile);
  std::array<int, 2> const sm90 = tile_shape_of(plan.sm90_tile);
  bool const hopper = plan.family == ConvFamily::kSm90;
  nb::dict d;
  d["family"] = hopper ? "sm90" : "sm80";
  d["split_k"] = plan.split_k;
  d["sm80_split_k"] = plan.sm80_split_k;
  d["sm80_config"] = tilefuse::gemm::config_name_of(plan.sm80_tile);
  d["sm80_tile"] = nb::make_tuple(sm80[0], sm80[1], sm80[2]);
  d["aligned"] = plan.aligned;
  d["why_narrow"] = plan.why_narrow;
  d["why_not_hopper"] = plan.why_not_hopper;
  d["sm90_tile"] = name_of(plan.sm90_tile);
  d["sm90_config"] = config_name_of(plan.sm90_tile, plan.im2col);
  d["sm90_tile_shape"] = nb::make_tuple(sm90[0], sm90[1], sm90_tile_k(plan, in.element));
  d["im2col"] = plan.im2col;
  d["half_k"] = plan.half_k;
  d["pointwise"] = plan.pointwise;
  d["split_in_kernel"] = plan.split_in_kernel;
  d["sm_count"] = plan.sm_count;
  d["why_source"] = plan.why_source;
  d["why_tile"] = plan.why_tile;
  // How the Hopper kernel runs (conv2d_sm90_launch.hpp): the wgrad's splits and the kernel's C++ type,
  // its tree spelled tilefuse_jit::Epilogue (the JIT's alias).
  ConvSm90Splits const splits = p.mode == tilefuse::ConvMode::kWgrad ? conv_sm90_splits(conv_output_matrix(p), plan)
                                                                     : ConvSm90Splits{};
  char const* const reductions[] = {"none", "kernel", "pass"};
  d["sm90_split"] = reductions[static_cast<int>(splits.reduction)];
  d["sm90_splits"] = splits.splits;
  d["sm90_k_per_split"] = splits.k_per_split;
  d["sm90_kernel"] = hopper ? conv_sm90_kernel_type(p.mode, in.element, plan, in.tree, splits.reduction, "tilefuse_jit::Epilogue")
                            : std::string();
  d["sm90_kernel_tree"] = splits.reduction == ConvSm90Split::kPass ? conv_sm90_partial_tree() : "tilefuse_jit::Epilogue";
  d["sm90_residual_by_tma"] = hopper && conv_sm90_loads_residual_by_tma(p.mode, plan, in.tree, splits.reduction);
  tilefuse::GemmCoord const out = conv_output_matrix(p);
  // The workspace: the in-kernel split's zeroed sums and tickets, or the pass's fp32 partials.
  d["sm90_workspace_bytes"] = splits.reduction == ConvSm90Split::kInKernel ? conv_sm90_split_sums_bytes(out)
                              : splits.reduction == ConvSm90Split::kPass
                                  ? static_cast<std::size_t>(splits.splits * out.m * out.n) * sizeof(float)
                                  : std::size_t{0};
  d["sm90_tickets_offset"] = conv_sm90_split_tickets_offset(out);
  // describe(stages, ping_pong, tma_aux): conv::Conv2d::describe()'s text of this plan, once the compiled
  // kernel's layout gives its constants.
  d["describe"] = nb::cpp_function(
      [in, plan, element](int stages, bool ping_pong, bool tma_aux) {
        return describe_conv_plan(in, plan, element, stages, ping_pong, tma_aux);
      },
      "stages"_a, "ping_pong"_a, "tma_aux"_a);
  return d;
}

// conv::plan_dgrad_phases for the Python package (which runs the phases): whether a strided dgrad runs as
// stride-1 fprops, why, and each phase's taps, padding, crop and extent per axis, and its row map into dx
// (conv::phase_row_map: gemm::sm90::OutputRowMap's fourteen index_t in order, empty for a phase without taps).
nb::dict plan_dgrad_phases(Geometry const& g, std::string const& element, bool bare_tree, DeviceTuple const& device,
                           bool operands_aligned) {
  using namespace tilefuse::conv;
  ConvPlanInput const in = conv_plan_input(g, tilefuse::ConvMode::kDgrad, element, device, operands_aligned);
  DgradPhases const planned = tilefuse::conv::plan_dgrad_phases(in, bare_tree);
  nb::list phases;
  for (DgradPhase const& ph : planned.phases) {
    nb::dict d;
    d["phase"] = nb::make_tuple(ph.a, ph.b);
    d["taps"] = nb::make_tuple(ph.h.taps, ph.w.taps);
    d["padding"] = nb::make_tuple(ph.h.pad, ph.w.pad);
    d["crop"] = nb::make_tuple(ph.h.crop, ph.w.crop);
    d["extent"] = nb::make_tuple(ph.h.extent, ph.w.extent);
    nb::tuple row_map;
    if (!ph.empty()) {
      auto const m = phase_row_map(ph, in.problem);
      row_map = nb::make_tuple(m.pixels_q, m.pixels_p, m.crop_h, m.crop_w, m.extent_h, m.extent_w, m.image_pitch,
                               m.row_pitch, m.column_pitch, m.origin, m.by_q.magic, m.by_q.shift, m.by_pq.magic,
                               m.by_pq.shift);
    }
    d["row_map"] = row_map;
    phases.append(d);
  }
  nb::dict d;
  d["use"] = planned.use;
  d["why"] = planned.why;
  d["phases"] = phases;
  return d;
}

// conv::plan_wgrad_im2col for the Python package (which gathers): whether a wgrad of few channels runs as
// im2col + the Hopper GEMM, why, and the GEMM's sizes.
nb::dict plan_wgrad_im2col(Geometry const& g, std::string const& element, bool bare_tree, DeviceTuple const& device,
                           bool operands_aligned) {
  using namespace tilefuse::conv;
  ConvPlanInput const in = conv_plan_input(g, tilefuse::ConvMode::kWgrad, element, device, operands_aligned);
  WgradIm2col const planned = tilefuse::conv::plan_wgrad_im2col(in, bare_tree, true);
  nb::dict d;
  d["use"] = planned.use;
  d["why"] = planned.why;
  d["columns"] = planned.columns;
  d["gemm_family"] = std::string(tilefuse::gemm::name_of(planned.gemm.family));
  d["padded_columns"] = planned.padded_columns;
  d["padded_k"] = planned.padded_k;
  d["workspace_bytes"] = planned.workspace_bytes;
  return d;
}

std::int64_t conv_channels_to_pad(std::int64_t c, std::int64_t k, std::string const& element) {
  tilefuse::Conv2dProblem p;
  p.C = c;
  p.K = k;
  return tilefuse::conv::channels_to_pad(p, conv_element(element));
}

// Every Hopper kernel the planner can pick for a 16-bit mode and tree facts, as (kernel, kernel tree, split)
// with the tree spelled tilefuse_jit::Epilogue: what tilefuse.jit.prebuilt compiles.
std::vector<std::tuple<std::string, std::string, std::string>> conv_sm90_kernel_choices(std::string const& mode,
                                                                                       std::string const& element,
                                                                                       bool reads_memory,
                                                                                       bool residual_by_tma) {
  using namespace tilefuse::conv;
  char const* const reductions[] = {"none", "kernel", "pass"};
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (ConvSm90KernelChoice const& c :
       tilefuse::conv::conv_sm90_kernel_choices(conv_mode(mode), conv_element(element), {reads_memory, residual_by_tma},
                                                "tilefuse_jit::Epilogue")) {
    out.emplace_back(c.kernel, c.kernel_tree, reductions[static_cast<int>(c.split)]);
  }
  return out;
}

nb::dict gemm_plan_dict(tilefuse::gemm::Sm90GemmPlan const& plan) {
  nb::dict d;
  d["config"] = plan.config;
  d["tile"] = plan.tile;
  d["tile_shape"] = nb::make_tuple(plan.tile_m, plan.tile_n, plan.tile_k);
  d["split_k"] = plan.split_k;
  d["residual_by_tma"] = plan.residual_by_tma;
  d["why"] = plan.why;
  return d;
}

std::optional<tilefuse::gemm::Sm90Tile> gemm_tile_named(std::optional<std::string> const& name) {
  using tilefuse::gemm::Sm90Tile;
  if (!name) return std::nullopt;
  std::string choices;
  for (Sm90Tile t : tilefuse::gemm::kSm90Tiles) {
    if (*name == tilefuse::gemm::name_of(t)) return t;
    choices += std::string(choices.empty() ? "" : ", ") + tilefuse::gemm::name_of(t);
  }
  throw std::invalid_argument("tilefuse: tile='" + *name + "': use 'auto' or one of " + choices);
}

nb::dict plan_gemm_sm90(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, DeviceTuple const& device,
                        std::optional<std::string> const& tile) {
  return gemm_plan_dict(tilefuse::gemm::plan_gemm_sm90({m, n, k, batch}, device_of(device), false, gemm_tile_named(tile)));
}

// The whole GEMM plan (gemm::plan_gemm, as gemm::Gemm makes it): family, copies, tile, split.
nb::dict plan_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, DeviceTuple const& device,
                   bool sixteen_bit, bool hopper_layouts, bool tma_aligned, int split_k,
                   std::optional<std::string> const& tile, std::string const& family, bool skinny_code,
                   bool residual_by_tma) {
  using tilefuse::gemm::GemmFamily;
  tilefuse::gemm::GemmRequest r;
  r.skinny_code = skinny_code;
  r.residual_by_tma = residual_by_tma;
  r.problem = {m, n, k, batch};
  r.sixteen_bit = sixteen_bit;
  r.hopper_layouts = hopper_layouts;
  r.tma_aligned = tma_aligned;
  r.split_k = split_k;
  r.tile = gemm_tile_named(tile);
  r.family = family == "auto"   ? GemmFamily::kAuto
             : family == "sm80" ? GemmFamily::kSm80
             : family == "sm90" ? GemmFamily::kSm90
             : family == "skinny"
                 ? GemmFamily::kSkinny
                 : throw std::invalid_argument("tilefuse: family '" + family + "': use auto, sm80, sm90 or skinny");
  tilefuse::gemm::GemmPlan plan;
  tilefuse::Status const s = tilefuse::gemm::plan_gemm(r, device_of(device), &plan);
  if (!s.ok()) throw std::invalid_argument("tilefuse: " + s.message());
  nb::dict d = gemm_plan_dict(plan.sm90);
  d["family"] = tilefuse::gemm::name_of(plan.family);
  d["copy_operands"] = plan.copy_operands;
  d["padded_k"] = plan.padded_k;
  if (plan.family != GemmFamily::kSm90) d["split_k"] = plan.split_k;
  d["sm80_config"] = plan.sm80_config;  // family sm80: its config, tile and path ("" / zeros otherwise)
  d["sm80_tile"] = nb::make_tuple(plan.sm80_tile[0], plan.sm80_tile[1], plan.sm80_tile[2]);
  d["sm80_aligned"] = plan.sm80_aligned;
  tilefuse::GemmCoord const run{m, n, plan.padded_k, batch};
  bool const split = plan.family == GemmFamily::kSm90 && plan.sm90.split_k > 1;
  d["split_workspace_bytes"] = split ? tilefuse::gemm::sm90_split_workspace_bytes(run, plan.sm90.tile_m, plan.sm90.tile_n) : 0;
  d["split_tickets_offset"] = split ? tilefuse::gemm::sm90_split_tickets_offset(run) : 0;
  d["why"] = plan.why;
  return d;
}

nb::dict plan_scaled_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, DeviceTuple const& device,
                          std::string const& scaling, bool fast_accum) {
  using tilefuse::gemm::Fp8Scaling;
  Fp8Scaling const s = scaling == "per-tensor" ? Fp8Scaling::kPerTensor
                       : scaling == "row-wise" ? Fp8Scaling::kRowWise
                       : scaling == "block-wise"
                           ? Fp8Scaling::kBlockWise
                           : throw std::invalid_argument("tilefuse: scaling '" + scaling + "' is not per-tensor, row-wise or block-wise");
  return gemm_plan_dict(tilefuse::gemm::plan_scaled_gemm({m, n, k, batch}, device_of(device), s, fast_accum));
}

}  // namespace

void bind_plan(nb::module_& m) {
  m.def("plan_conv2d", &plan_conv2d, "mode"_a, "geometry"_a, "element"_a, "reads_memory"_a, "residual_by_tma"_a,
        "device"_a, "operands_aligned"_a, "split_k"_a, "deterministic"_a = false, "family"_a = nb::none(),
        "sm90_tile"_a = nb::none(), "sm90_source"_a = nb::none(), "split_reduction"_a = nb::none(),
        "residual_unaligned"_a = "",
        "conv::plan_conv2d: the kernel family, source, tile and split of a convolution, as conv::Conv2d picks them.");
  m.def("plan_dgrad_phases", &plan_dgrad_phases, "geometry"_a, "element"_a, "bare_tree"_a, "device"_a,
        "operands_aligned"_a, "conv::plan_dgrad_phases: a strided dgrad as stride-1 fprops of dy, one per phase of dx.");
  m.def("plan_wgrad_im2col", &plan_wgrad_im2col, "geometry"_a, "element"_a, "bare_tree"_a, "device"_a,
        "operands_aligned"_a, "conv::plan_wgrad_im2col: a wgrad of few channels as im2col + the Hopper GEMM.");
  m.def("conv_channels_to_pad", &conv_channels_to_pad, "c"_a, "k"_a, "element"_a,
        "conv::channels_to_pad: zero channels to add to x and w for 16-byte rows.");
  m.def("conv_sm90_kernel_choices", &conv_sm90_kernel_choices, "mode"_a, "element"_a, "reads_memory"_a,
        "residual_by_tma"_a, "Every Hopper conv kernel the planner can pick for a mode and tree: (kernel, tree, split).");
  m.def("gemm_sm90_config_choices", &tilefuse::gemm::sm90_config_choices, "residual_by_tma"_a,
        "gemm::sm90_config_choices: every 16-bit Hopper GEMM config the planner can pick (TMA residual twins, or the "
        "plain tiles and the split).");
  m.def("plan_gemm_sm90", &plan_gemm_sm90, "m"_a, "n"_a, "k"_a, "batch"_a, "device"_a, "tile"_a = nb::none(),
        "gemm::plan_gemm_sm90: the Hopper GEMM's config for a problem (gemm::GemmSm90 with Sm90AutoConfig).");
  m.def("plan_gemm", &plan_gemm, "m"_a, "n"_a, "k"_a, "batch"_a, "device"_a, "sixteen_bit"_a = true,
        "hopper_layouts"_a = true, "tma_aligned"_a = true, "split_k"_a = 0, "tile"_a = nb::none(), "family"_a = "auto",
        "skinny_code"_a = false, "residual_by_tma"_a = false,
        "gemm::plan_gemm: the GEMM's kernel family, operand copies, tile, split and whether the residual comes by "
        "TMA, as gemm::Gemm plans them.");
  m.def("describe_gemm_sm90",
        [](int tile_m, int tile_n, int tile_k, int stages, int consumer_warpgroups, bool ping_pong, int cluster_m,
           bool tma_aux, bool reduce_splits, std::int64_t tiles, std::int64_t grid, bool d_by_tma, std::int64_t splits) {
          return tilefuse::gemm::describe_sm90_gemm({tile_m, tile_n, tile_k, stages, consumer_warpgroups, ping_pong,
                                                    cluster_m, tma_aux, reduce_splits},
                                                   tiles, grid, d_by_tma, splits);
        },
        "tile_m"_a, "tile_n"_a, "tile_k"_a, "stages"_a, "consumer_warpgroups"_a, "ping_pong"_a, "cluster_m"_a,
        "tma_aux"_a, "reduce_splits"_a, "tiles"_a, "grid"_a, "d_by_tma"_a, "splits"_a,
        "gemm::GemmSm90::describe()'s text from the kernel's constants (the compiled kernel's layout) and the plan.");
  m.def("describe_gemm_sm80",
        [](std::string const& config, std::string const& element, bool aligned, int split_k, std::string const& why,
           std::int64_t lda, std::int64_t ldb, std::int64_t batch, std::int64_t batch_stride_a,
           std::int64_t batch_stride_b) {
          using namespace tilefuse::gemm;
          Sm80Tile const* tile = nullptr;
          for (Sm80Tile const& t : {Sm80Tile::kLarge, Sm80Tile::kSmall, Sm80Tile::kNarrow}) {
            if (config == config_name_of(t)) tile = &t;
          }
          if (tile == nullptr) throw std::invalid_argument("tilefuse: no sm80 config named '" + config + "'");
          if (element != "bfloat16" && element != "float16") {
            throw std::invalid_argument("tilefuse: the sm80 GEMM from Python takes bfloat16 or float16, not " + element);
          }
          // Where the leading dimensions and batch strides are whole chunks, an unaligned plan is the bases'.
          std::string why_narrow = aligned ? std::string() : sm80_why_narrow(true, lda, ldb, batch, batch_stride_a,
                                                                              batch_stride_b, 8);
          if (!aligned && why_narrow.empty()) why_narrow = "a or b is not 16-byte aligned";
          // The planner's "sm80 kernel: <why the Hopper kernel is not used>", as gemm::Gemm words it.
          std::string const note = why.find(": ") == std::string::npos ? std::string()
                                                                       : hopper_refused_note(why_hopper_not_used(why));
          return describe_sm80_gemm(sm80_gemm_kernel_facts(*tile), element == "bfloat16" ? "bf16" : "fp16", false,
                                    aligned, why_narrow, split_k, note);
        },
        "config"_a, "element"_a, "aligned"_a, "split_k"_a, "why"_a, "lda"_a, "ldb"_a, "batch"_a, "batch_stride_a"_a,
        "batch_stride_b"_a,
        "gemm::Gemm::describe()'s text of an sm80 plan (the 16-byte path by cp.async: what Python runs).");
  m.def("plan_scaled_gemm", &plan_scaled_gemm, "m"_a, "n"_a, "k"_a, "batch"_a, "device"_a, "scaling"_a,
        "fast_accum"_a, "gemm::plan_scaled_gemm: the FP8 scaled GEMM's config, as gemm::ScaledGemm picks it.");
}
