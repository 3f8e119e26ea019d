// Command-line parsing (see cli.hpp).
#include "cli.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>

namespace tilefuse::bench {
namespace {

template <class Int>
std::optional<Int> parse_int(std::string_view s) {
  Int value{};
  auto const [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

bool is_flag(std::string_view arg) {
  return arg == "--help" || arg == "-h" || arg == "--no-floor" || arg == "--interleave";
}

// tf32 runs one tilefuse instantiation (the sm80 kernel, epilogue none): refuse what it cannot run
// rather than fill the table with "not built" rows. "" when every problem can run.
std::string check_tf32_problems(std::vector<GemmProblem> const& problems, std::string const& kernel) {
  for (GemmProblem const& p : problems) {
    if (p.dtype != DType::kTF32) continue;
    if (p.epilogue != EpilogueKind::kNone) {
      return "tf32 takes --epilogue none only (bias_gelu_residual is instantiated for bf16 only)";
    }
    if (kernel.starts_with("sm90")) {
      return "tf32 runs on the sm80 kernel (mma.sync) only; --kernel " + kernel +
             " is the Hopper kernel, which takes bf16 or fp16: use --kernel sm80 or auto";
    }
  }
  return {};
}

}  // namespace

std::optional<std::int64_t> parse_int64(std::string_view s) { return parse_int<std::int64_t>(s); }

std::vector<std::string_view> split_list(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    std::size_t const at = s.find(separator);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

std::variant<CliOption, std::string> next_option(int argc, char const* const* argv, int* i) {
  std::string_view const arg = argv[*i];
  if (is_flag(arg)) return CliOption{arg, {}};
  if (!arg.starts_with("--")) return "unexpected argument '" + std::string(arg) + "'";
  if (std::size_t const eq = arg.find('='); eq != std::string_view::npos) {
    return CliOption{arg.substr(0, eq), arg.substr(eq + 1)};
  }
  if (*i + 1 >= argc) return std::string(arg) + " needs a value";
  *i += 1;
  return CliOption{arg, argv[*i]};
}

std::string parse_positive(CliOption const& option, std::int64_t& out) {
  auto const v = parse_int<std::int64_t>(option.value);
  if (!v || *v <= 0) {
    return std::string(option.name) + " needs a positive integer, not '" + std::string(option.value) + "'";
  }
  out = *v;
  return {};
}

std::string parse_positive_int(CliOption const& option, int& out) {
  std::int64_t v = 0;
  if (std::string e = parse_positive(option, v); !e.empty()) return e;
  if (v > (1 << 30)) return std::string(option.name) + " is too large";
  out = static_cast<int>(v);
  return {};
}

std::string parse_split_k(CliOption const& option, int& out) {
  if (option.value == "0") {
    out = 0;
    return {};
  }
  return parse_positive_int(option, out);
}

std::variant<std::vector<DType>, std::string> parse_dtype_list(std::string_view s) {
  std::vector<DType> dtypes;
  for (std::string_view part : split_list(s, ',')) {
    auto const t = parse_dtype(part);
    if (!t) return "--dtype: unknown type '" + std::string(part) + "' (bf16, fp16 or tf32)";
    dtypes.push_back(*t);
  }
  return dtypes;
}

std::optional<std::string> parse_common_option(CliOption const& option, CliOptions& o) {
  std::string_view const name = option.name;
  std::string_view const value = option.value;
  if (name == "--no-floor") {
    o.measure_floor = false;
    return "";
  }
  if (name == "--interleave") {
    o.settings.timing.interleave = true;
    return "";
  }
  if (name == "--peers") {
    if (value != "all" && value != "none") return "--peers: '" + std::string(value) + "' (all or none)";
    o.settings.peers = value == "all";
    return "";
  }
  if (name == "--reps") return parse_positive_int(option, o.settings.timing.reps);
  if (name == "--warmup-calls") return parse_positive_int(option, o.settings.timing.min_warmup_calls);
  if (name == "--warmup-ms") {
    int ms = 0;
    std::string error = parse_positive_int(option, ms);
    o.settings.timing.min_warmup_ms = ms;
    return error;
  }
  if (name == "--check-samples") return parse_positive_int(option, o.settings.check_samples);
  if (name == "--seed") {
    auto const v = parse_int<std::uint64_t>(value);
    if (!v) return "--seed needs an unsigned integer";
    o.settings.seed = *v;
    return "";
  }
  if (name == "--device") {
    auto const v = parse_int<int>(value);
    if (!v || *v < 0) return "--device needs a device index";
    o.device = *v;
    return "";
  }
  if (name == "--json") {
    o.json_path = std::string(value);
    return "";
  }
  return std::nullopt;
}

std::string usage() {
  return R"(tilefuse-bench: times tilefuse's GEMM against cuBLAS / cuBLASLt and its Conv2d against cuDNN in one
process, and checks each implementation first.

usage:
  tilefuse-bench gemm --m M --n N --k K [--batch B] [options]
  tilefuse-bench gemm --preset issue3|issue3-tf32 [options]
  tilefuse-bench conv2d --n N --h H --w W --c C --k K --r R --s S [options]   (see below)
  tilefuse-bench conv2d --preset resnet50|resnet50-strided|unet [options]
  tilefuse-bench info [--device D]        device, versions and kernel facts only
  tilefuse-bench --help

problem:
  --m M --n N --k K    D (M x N, row-major) = A (M x K) * B (K x N)
  --batch B            batched GEMM, packed batch strides (default 1)
  --dtype LIST         bf16 | fp16 | tf32, or a comma list (default bf16); fp32 accumulation, D in the same
                       type. tf32: A, B and D are fp32 in memory, computed on tf32 tensor cores (tilefuse's
                       sm80 kernel with Sm80Tf32LargeConfig; cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32);
                       epilogue none only; tilefuse's tf32 is built for tn (other layouts: cuBLAS only)
  --layout LIST        tn | nn | nt | tt | all, or a comma list (default tn). First letter A, second B:
                       t = row-major, n = column-major. tn = A row-major M x K and B column-major K x N
                       (both K-contiguous: x @ W.T with W stored N x K). tt = both row-major.
  --epilogue E         none | bias_gelu_residual (default none)
                       bias_gelu_residual: D = gelu_tanh(A*B + bias[col]) + C, C row-major M x N
  --split-k S          tilefuse's split-k factor (default 1; 0: gemm::Gemm chooses, with --kernel auto or
                       sm80; the peers choose their own)
  --kernel K           sm80 (mma.sync, default) | sm90 (TMA + WGMMA; bf16/fp16, tn only, Hopper GPUs; tile
                       picked per problem) | sm90-large | sm90-medium | sm90-narrow | sm90-short (one tile:
                       128x256, 128x128, 128x64, 64x64 ping-pong; bf16 none only) | sm90-pingpong | sm90-pingpong-wide (ping-pong
                       consumers, 128x128 / 64x256 per warpgroup; bf16, none or bias_gelu_residual) |
                       sm90-pingpong-multicast (128x128 ping-pong, 2-CTA clusters sharing B) |
                       sm90-pingpong-wide-multicast (64x256 ping-pong, 2-CTA clusters sharing B) |
                       sm90-large-3stage (128x256 with a 3-stage ring; none or bias_gelu_residual) |
                       sm90-split-large | sm90-split-medium | sm90-split-narrow | sm90-split-short (128x256,
                       128x128, 128x64, ping-pong 64x64 with split-K summed in the kernel, --split-k S >= 2
                       dividing k; bf16, none or bias_gelu_residual) |
                       sm90-tma-residual-large | sm90-tma-residual-medium | sm90-tma-residual-pingpong-wide (the
                       residual loaded by TMA on that tile; bf16, none or bias_gelu_residual) |
                       sm90-pingpong-tall (ping-pong 128x192 per warpgroup, 192 accumulators per thread; bf16,
                       none or bias_gelu_residual, the residual staged) |
                       sm90-mid96 | sm90-wide160 (cooperative 128x96, 7 stages / 128x160, 5 stages: finer waves
                       for outputs of a few thousand rows; bf16, none or bias_gelu_residual) |
                       sm90-split-mid96 (128x96 with split-K summed in the kernel, --split-k S >= 2) |
                       auto (gemm::Gemm's default: sm90 where it can, else sm80; describe says which and why)

measurement:
  --reps R             timed calls per implementation; the median is reported (default 50)
  --warmup-calls N     at least N warm-up calls ... (default 10)
  --warmup-ms T        ... and at least T ms of GPU time before timing (default 100)
  --check-samples N    random elements checked against float64, plus edges (default 4096)
  --seed S             input seed (default fixed: runs are reproducible)
  --interleave         time the implementations call by call in turn (A B, B A, ..., each on its own operand
                       set, one warm-up for all): the same clocks for each (default: mirrored halves A B B A,
                       each with its own warm-up)
  --no-floor           skip measuring the matmul rate and copy bandwidth (no floor columns)
  --peers all|none     gemm: time the peers (cuBLAS / cuBLASLt) and a fused row's plain twin beside tilefuse
                       (all, the default), or tilefuse alone (none: one kernel per run, e.g. under a clock
                       sampler; no ratios)
  --device D           CUDA device index (default 0)
  --json FILE          also write every number to FILE (a preset defaults to tilefuse-bench-<preset>.json)

presets:
  issue3       8192^3, 4096^3, 2048^3, 4096x14336x4096, 8192x8192x1024, 128x8192x8192, 16384x8192x1024,
               4095x4097x4093, 1000^3, 127x255x8191 with epilogue none in the --dtype / --layout lists
               (default bf16 tn), then 8192^3 and 4096^3 bf16 tn with bias_gelu_residual.
  issue3-tf32  8192^3 and 4096^3 in tf32, tn, epilogue none, beside cuBLAS FAST_TF32 (the dtype and
               layout are fixed: leave out --dtype and --layout)
)" + conv2d_usage();
}

std::string for_each_option(int argc, char const* const* argv, CliOptions& o,
                            std::function<std::string(CliOption const&)> const& handle) {
  for (int i = 2; i < argc; ++i) {
    auto next = next_option(argc, argv, &i);
    if (auto const* error = std::get_if<std::string>(&next)) return *error;
    CliOption const option = std::get<CliOption>(next);
    if (option.name == "--help" || option.name == "-h") {
      o.command = Command::kHelp;
      return {};
    }
    std::optional<std::string> common = parse_common_option(option, o);
    std::string const error = common ? *common : handle(option);
    if (!error.empty()) return error;
  }
  return {};
}

std::variant<CliOptions, std::string> parse_cli(int argc, char const* const* argv) {
  CliOptions o;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command_line += ' ';
    o.command_line += argv[i];
  }
  if (argc < 2) return o;  // help
  std::string_view const command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") return o;
  if (command == "gemm") {
    o.command = Command::kGemm;
  } else if (command == "conv2d") {
    o.command = Command::kConv2d;
    return parse_conv2d_cli(argc, argv, std::move(o));
  } else if (command == "info") {
    o.command = Command::kInfo;
  } else {
    return "unknown command '" + std::string(command) + "': use gemm, conv2d or info (tilefuse-bench --help)";
  }

  std::optional<std::int64_t> m, n, k;
  std::int64_t batch = 1;
  std::vector<DType> dtypes{DType::kBF16};
  std::vector<OperandLayout> layouts{OperandLayout{true, false}};
  EpilogueKind epilogue = EpilogueKind::kNone;
  int split_k = 1;
  bool epilogue_given = false;
  bool dtype_given = false;
  bool layout_given = false;

  std::string const error = for_each_option(argc, argv, o, [&](CliOption const& option) -> std::string {
    std::string_view const name = option.name;
    std::string_view const value = option.value;
    if (name == "--m" || name == "--n" || name == "--k") {
      std::int64_t v = 0;
      std::string e = parse_positive(option, v);
      if (v > (std::int64_t{1} << 31) - 1) e = std::string(name) + " must be below 2^31 (cuBLAS takes int)";
      (name == "--m" ? m : name == "--n" ? n : k) = v;
      return e;
    }
    if (name == "--batch") return parse_positive(option, batch);
    if (name == "--dtype") {
      auto list = parse_dtype_list(value);
      if (auto const* e = std::get_if<std::string>(&list)) return *e;
      dtypes = std::get<std::vector<DType>>(list);
      dtype_given = true;
      return {};
    }
    if (name == "--layout") {
      layout_given = true;
      layouts.clear();
      if (value == "all") {
        layouts = all_layouts();
        return {};
      }
      for (std::string_view part : split_list(value, ',')) {
        auto const l = parse_layout(part);
        if (!l) return "--layout: unknown layout '" + std::string(part) + "' (tn, nn, nt, tt or all)";
        layouts.push_back(*l);
      }
      return {};
    }
    if (name == "--epilogue") {
      auto const e = parse_epilogue(value);
      if (!e) return "--epilogue: unknown epilogue '" + std::string(value) + "' (none or bias_gelu_residual)";
      epilogue = *e;
      epilogue_given = true;
      return {};
    }
    if (name == "--split-k") return parse_split_k(option, split_k);  // 0: gemm::Gemm chooses (auto or sm80)
    if (name == "--kernel") {
      constexpr std::string_view kKernels[] = {"sm80", "sm90", "sm90-large", "sm90-large-3stage", "sm90-medium",
                                               "sm90-narrow", "sm90-short", "sm90-pingpong", "sm90-pingpong-wide",
                                               "sm90-pingpong-multicast", "sm90-pingpong-wide-multicast",
                                               "sm90-split-large", "sm90-split-medium", "sm90-split-narrow", "sm90-split-short", "sm90-tma-residual-large",
                                               "sm90-tma-residual-medium", "sm90-tma-residual-pingpong-wide",
                                               "sm90-pingpong-tall", "sm90-mid96", "sm90-wide160",
                                               "sm90-split-mid96", "auto"};
      if (std::find(std::begin(kKernels), std::end(kKernels), value) == std::end(kKernels)) {
        std::string known;
        for (std::string_view k : kKernels) known += (known.empty() ? "" : ", ") + std::string(k);
        return "--kernel: unknown kernel '" + std::string(value) + "' (" + known + ")";
      }
      o.settings.kernel = std::string(value);
      return {};
    }
    if (name == "--preset") {
      o.preset = std::string(value);
      return {};
    }
    return "unknown option " + std::string(name) + " (tilefuse-bench --help)";
  });
  if (!error.empty()) return error;
  if (o.command != Command::kGemm) return o;

  if (!o.preset.empty()) {
    if (m || n || k || batch != 1 || epilogue_given) {
      return "--preset sets the shapes and epilogues: leave out --m, --n, --k, --batch and --epilogue";
    }
    if (preset_pins_dtype_and_layout(o.preset) && (dtype_given || layout_given)) {
      return "--preset " + o.preset + " sets the dtype and layout: leave out --dtype and --layout";
    }
    auto problems = preset_problems(o.preset, PresetOptions{dtypes, layouts, split_k});
    if (!problems) {
      std::string names;
      for (auto const& p : preset_names()) {
        if (!names.empty()) names += ", ";
        names += p;
      }
      return "unknown preset '" + o.preset + "' (known: " + names + ")";
    }
    o.problems = std::move(*problems);
    if (std::string e = check_tf32_problems(o.problems, o.settings.kernel); !e.empty()) return e;
    if (o.json_path.empty()) o.json_path = "tilefuse-bench-" + o.preset + ".json";
    return o;
  }
  if (!m || !n || !k) return "gemm needs --m, --n and --k (or --preset)";
  for (DType dtype : dtypes) {
    for (OperandLayout layout : layouts) {
      o.problems.push_back(GemmProblem{*m, *n, *k, batch, dtype, layout, epilogue, split_k});
    }
  }
  if (std::string e = check_tf32_problems(o.problems, o.settings.kernel); !e.empty()) return e;
  return o;
}

}  // namespace tilefuse::bench
