// The conv2d subcommand's options and usage (the shared option helpers are in cli.cpp).
#include <tilefuse/conv/conv2d_problem_check.hpp>

#include "cli.hpp"

namespace tilefuse::bench {
namespace {

// "2" (both dimensions) or "2x3" (height x width); at least `minimum`.
std::string parse_pair(CliOption const& option, std::int64_t minimum, std::int64_t* h, std::int64_t* w) {
  auto const parts = split_list(option.value, 'x');
  std::optional<std::int64_t> a = parse_int64(parts[0]);
  std::optional<std::int64_t> b = parts.size() == 2 ? parse_int64(parts[1]) : a;
  if (parts.size() > 2 || !a || !b || *a < minimum || *b < minimum || *a > (1 << 30) || *b > (1 << 30)) {
    return std::string(option.name) + " needs an integer >= " + std::to_string(minimum) + ", or two as HxW, not '" +
           std::string(option.value) + "'";
  }
  *h = *a;
  *w = *b;
  return {};
}

std::string names(std::vector<std::string> const& list) {
  std::string out;
  for (auto const& n : list) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string conv2d_usage() {
  return R"(
conv2d: tilefuse's implicit-GEMM Conv2d (sm_80 path, gemm::Sm80AutoConfig: the operation picks tile and split-K) beside cuDNN, same data:
  epilogue none:               cuDNN cudnnConvolutionForward / BackwardData / BackwardFilter
  epilogue bias_relu_residual: cuDNN cudnnConvolutionBiasActivationForward (fused), and
                               cuDNN conv + one bias_residual_relu kernel (unfused)

  --n N --h H --w W --c C      input x: N x H x W x C, NHWC
  --k K --r R --s S            filter w: K x R x S x C (KRSC); output y: N x P x Q x K
  --pad P --stride U --dilation D
                               one value, or HxW (defaults 0, 1, 1)
  --mode LIST                  fprop | dgrad | wgrad | all, or a comma list (default fprop)
  --dtype LIST                 bf16 | fp16, or a comma list (default bf16)
  --epilogue E                 none | bias_relu_residual (default none; bias_relu_residual is fprop only):
                               y = relu(conv(x, w) + bias[k] + residual), residual N x P x Q x K
  --split-k S                  tilefuse's split-k factor (default 0: the operation chooses; cuDNN chooses its own)
  --sm90-tile T                force tilefuse's Hopper tile: large | medium | narrow | pingpong-narrow |
                               pingpong-medium | wide | 64x64 | 64x128 | 64x256 (conv::ConvOverrides)
  --sm90-source gather         force the Hopper fprop's cp.async gathers of x (default: TMA im2col where valid)
  --split-reduction R          kernel | pass: how the Hopper wgrad sums its splits (default: the planner's)
  --dgrad-phases P             beside | in-turn: a strided dgrad's phases side by side (default) or each after
                               the one before (conv::ConvOverrides::phases_in_turn)
  --preset NAME                resnet50 (12 ResNet-50 layers, N = 64), resnet50-strided (its 6 strided
                               layers) or unet (6 UNet 3x3 layers, N = 8)
                               in every --mode and --dtype; writes tilefuse-bench-conv2d-NAME.json unless --json
  and the measurement options above (--reps, --warmup-calls, --warmup-ms, --check-samples, --seed,
  --no-floor, --device, --json). FLOPs are 2*N*P*Q*K*R*S*C; at the end, geometric means of the speedups.
)";
}

std::variant<CliOptions, std::string> parse_conv2d_cli(int argc, char const* const* argv, CliOptions o) {
  Conv2dProblem shape;
  bool shape_given = false;
  std::vector<DType> dtypes{DType::kBF16};
  std::vector<ConvMode> modes{ConvMode::kFprop};
  ConvEpilogue epilogue = ConvEpilogue::kNone;
  int split_k = 0;  // 0: the operation chooses
  conv::ConvOverrides overrides;

  std::string const error = for_each_option(argc, argv, o, [&](CliOption const& option) -> std::string {
    std::string_view const name = option.name;
    std::string_view const value = option.value;
    index_t* const extent = name == "--n"   ? &shape.N
                            : name == "--h" ? &shape.H
                            : name == "--w" ? &shape.W
                            : name == "--c" ? &shape.C
                            : name == "--k" ? &shape.K
                            : name == "--r" ? &shape.R
                            : name == "--s" ? &shape.S
                                            : nullptr;
    if (extent != nullptr) {
      int v = 0;
      std::string e = parse_positive_int(option, v);
      *extent = v;
      shape_given = true;
      return e;
    }
    if (name == "--pad" || name == "--stride" || name == "--dilation") {
      shape_given = true;
      if (name == "--pad") return parse_pair(option, 0, &shape.pad_h, &shape.pad_w);
      if (name == "--stride") return parse_pair(option, 1, &shape.stride_h, &shape.stride_w);
      return parse_pair(option, 1, &shape.dilation_h, &shape.dilation_w);
    }
    if (name == "--dtype") {
      auto list = parse_dtype_list(value);
      if (auto const* e = std::get_if<std::string>(&list)) return *e;
      dtypes = std::get<std::vector<DType>>(list);
      for (DType t : dtypes) {
        if (t == DType::kTF32) return "--dtype tf32 is for the gemm subcommand; conv2d runs bf16 or fp16";
      }
      return {};
    }
    if (name == "--mode") {
      modes.clear();
      for (std::string_view part : split_list(value, ',')) {
        if (part == "all") {
          modes.insert(modes.end(), {ConvMode::kFprop, ConvMode::kDgrad, ConvMode::kWgrad});
          continue;
        }
        auto const m = parse_conv_mode(part);
        if (!m) return "--mode: unknown mode '" + std::string(part) + "' (fprop, dgrad, wgrad or all)";
        modes.push_back(*m);
      }
      return {};
    }
    if (name == "--epilogue") {
      auto const e = parse_conv_epilogue(value);
      if (!e) return "--epilogue: unknown epilogue '" + std::string(value) + "' (none or bias_relu_residual)";
      epilogue = *e;
      return {};
    }
    if (name == "--split-k") return parse_split_k(option, split_k);
    if (name == "--sm90-tile") {
      overrides.sm90_tile = conv::conv_sm90_tile_named(value);
      return overrides.sm90_tile ? std::string() : "--sm90-tile: unknown tile '" + std::string(value) + "'";
    }
    if (name == "--sm90-source") {
      if (value != "gather") return "--sm90-source: only 'gather' can be forced (im2col is the default where valid)";
      overrides.sm90_source = conv::ConvSource::kGather;
      return {};
    }
    if (name == "--split-reduction") {
      if (value != "kernel" && value != "pass") return "--split-reduction: 'kernel' or 'pass'";
      overrides.split_reduction = value == "kernel" ? conv::SplitReduction::kInKernel : conv::SplitReduction::kPass;
      return {};
    }
    if (name == "--dgrad-phases") {
      if (value != "in-turn" && value != "beside") return "--dgrad-phases: 'in-turn' or 'beside'";
      overrides.phases_in_turn = value == "in-turn";
      return {};
    }
    if (name == "--preset") {
      o.preset = std::string(value);
      return {};
    }
    return "unknown option " + std::string(name) + " for conv2d (tilefuse-bench --help)";
  });
  if (!error.empty()) return error;
  if (!o.settings.peers) return "--peers none is a gemm option (the conv rows time cuDNN beside tilefuse)";
  if (o.command == Command::kHelp) return o;

  if (epilogue == ConvEpilogue::kBiasReluResidual) {
    for (ConvMode m : modes) {
      if (m != ConvMode::kFprop) {
        return std::string("--epilogue bias_relu_residual is fprop only (cuDNN's fused call is a forward "
                           "convolution); --mode ") + name_of(m) + " needs --epilogue none";
      }
    }
  }
  if (!o.preset.empty()) {
    if (shape_given) {
      return "--preset sets the layer shapes: leave out --n, --h, --w, --c, --k, --r, --s, --pad, --stride and "
             "--dilation";
    }
    auto problems = conv_preset_problems(o.preset, ConvPresetOptions{dtypes, modes, epilogue, split_k, overrides});
    if (!problems) return "unknown conv2d preset '" + o.preset + "' (known: " + names(conv_preset_names()) + ")";
    o.conv_problems = std::move(*problems);
    if (o.json_path.empty()) o.json_path = "tilefuse-bench-conv2d-" + o.preset + ".json";
    return o;
  }
  if (shape.N == 0 || shape.H == 0 || shape.W == 0 || shape.C == 0 || shape.K == 0 || shape.R == 0 || shape.S == 0) {
    return "conv2d needs --n, --h, --w, --c, --k, --r and --s (or --preset)";
  }
  if (Status const valid = check(shape); !valid.ok()) return valid.message();
  for (DType dtype : dtypes) {
    for (ConvMode mode : modes) {
      ConvProblem p;
      p.shape = shape;
      p.shape.mode = mode;
      p.dtype = dtype;
      p.epilogue = epilogue;
      p.split_k = split_k;
      p.overrides = overrides;
      o.conv_problems.push_back(std::move(p));
    }
  }
  return o;
}

}  // namespace tilefuse::bench
