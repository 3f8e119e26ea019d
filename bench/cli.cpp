// Command-line parsing (see cli.hpp).
#include "cli.hpp"

#include <charconv>
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

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    std::size_t const at = s.find(separator);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

}  // namespace

std::string usage() {
  return R"(tilefuse-bench: times tilefuse's GEMM against cuBLAS / cuBLASLt in one process, and checks it first.

usage:
  tilefuse-bench gemm --m M --n N --k K [--batch B] [options]
  tilefuse-bench gemm --preset issue3 [options]
  tilefuse-bench info [--device D]        device, versions and kernel facts only
  tilefuse-bench --help

problem:
  --m M --n N --k K    D (M x N, row-major) = A (M x K) * B (K x N)
  --batch B            batched GEMM, packed batch strides (default 1)
  --dtype LIST         bf16 | fp16, or a comma list (default bf16); fp32 accumulation, D in the same type
  --layout LIST        tn | nn | nt | tt | all, or a comma list (default tn). First letter A, second B:
                       t = row-major, n = column-major. tn = A row-major M x K and B column-major K x N
                       (both K-contiguous: x @ W.T with W stored N x K). tt = both row-major.
  --epilogue E         none | bias_gelu_residual (default none)
                       bias_gelu_residual: D = gelu_tanh(A*B + bias[col]) + C, C row-major M x N
  --split-k S          tilefuse's split-k factor (default 1; the peers choose their own)

measurement:
  --reps R             timed calls per implementation; the median is reported (default 50)
  --warmup-calls N     at least N warm-up calls ... (default 10)
  --warmup-ms T        ... and at least T ms of GPU time before timing (default 100)
  --check-samples N    random elements checked against float64, plus edges (default 4096)
  --seed S             input seed (default fixed: runs are reproducible)
  --no-floor           skip measuring the matmul rate and copy bandwidth (no floor columns)
  --device D           CUDA device index (default 0)
  --json FILE          also write every number to FILE (a preset defaults to tilefuse-bench-<preset>.json)

presets:
  issue3   8192^3, 4096^3, 2048^3, 4096x14336x4096, 8192x8192x1024, 128x8192x8192, 16384x8192x1024,
           4095x4097x4093, 1000^3, 127x255x8191 with epilogue none in the --dtype / --layout lists
           (default bf16 tn), then 8192^3 and 4096^3 bf16 tn with bias_gelu_residual.
)";
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
  } else if (command == "info") {
    o.command = Command::kInfo;
  } else {
    return "unknown command '" + std::string(command) + "': use gemm or info (tilefuse-bench --help)";
  }

  std::optional<std::int64_t> m, n, k;
  std::int64_t batch = 1;
  std::vector<DType> dtypes{DType::kBF16};
  std::vector<OperandLayout> layouts{OperandLayout{true, false}};
  EpilogueKind epilogue = EpilogueKind::kNone;
  int split_k = 1;
  bool epilogue_given = false;

  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.command = Command::kHelp;
      return o;
    }
    if (arg == "--no-floor") {
      o.measure_floor = false;
      continue;
    }
    if (!arg.starts_with("--")) return "unexpected argument '" + std::string(arg) + "'";
    std::string_view name = arg;
    std::string_view value;
    if (std::size_t const eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc) return std::string(name) + " needs a value";
      value = argv[++i];
    }
    auto positive = [&](std::int64_t& out) -> std::string {
      auto const v = parse_int<std::int64_t>(value);
      if (!v || *v <= 0) return std::string(name) + " needs a positive integer, not '" + std::string(value) + "'";
      out = *v;
      return {};
    };
    auto positive_int = [&](int& out) -> std::string {
      std::int64_t v = 0;
      if (std::string e = positive(v); !e.empty()) return e;
      if (v > (1 << 30)) return std::string(name) + " is too large";
      out = static_cast<int>(v);
      return {};
    };
    std::string error;
    if (name == "--m" || name == "--n" || name == "--k") {
      std::int64_t v = 0;
      error = positive(v);
      if (v > (std::int64_t{1} << 31) - 1) error = std::string(name) + " must be below 2^31 (cuBLAS takes int)";
      (name == "--m" ? m : name == "--n" ? n : k) = v;
    } else if (name == "--batch") {
      error = positive(batch);
    } else if (name == "--dtype") {
      dtypes.clear();
      for (std::string_view part : split(value, ',')) {
        auto const t = parse_dtype(part);
        if (!t) return "--dtype: unknown type '" + std::string(part) + "' (bf16 or fp16)";
        dtypes.push_back(*t);
      }
    } else if (name == "--layout") {
      layouts.clear();
      if (value == "all") {
        layouts = all_layouts();
      } else {
        for (std::string_view part : split(value, ',')) {
          auto const l = parse_layout(part);
          if (!l) return "--layout: unknown layout '" + std::string(part) + "' (tn, nn, nt, tt or all)";
          layouts.push_back(*l);
        }
      }
    } else if (name == "--epilogue") {
      auto const e = parse_epilogue(value);
      if (!e) return "--epilogue: unknown epilogue '" + std::string(value) + "' (none or bias_gelu_residual)";
      epilogue = *e;
      epilogue_given = true;
    } else if (name == "--split-k") {
      error = positive_int(split_k);
    } else if (name == "--reps") {
      error = positive_int(o.settings.timing.reps);
    } else if (name == "--warmup-calls") {
      error = positive_int(o.settings.timing.min_warmup_calls);
    } else if (name == "--warmup-ms") {
      int ms = 0;
      error = positive_int(ms);
      o.settings.timing.min_warmup_ms = ms;
    } else if (name == "--check-samples") {
      error = positive_int(o.settings.check_samples);
    } else if (name == "--seed") {
      auto const v = parse_int<std::uint64_t>(value);
      if (!v) error = "--seed needs an unsigned integer";
      else o.settings.seed = *v;
    } else if (name == "--device") {
      auto const v = parse_int<int>(value);
      if (!v || *v < 0) error = "--device needs a device index";
      else o.device = *v;
    } else if (name == "--json") {
      o.json_path = std::string(value);
    } else if (name == "--preset") {
      o.preset = std::string(value);
    } else {
      error = "unknown option " + std::string(name) + " (tilefuse-bench --help)";
    }
    if (!error.empty()) return error;
  }
  if (o.command != Command::kGemm) return o;

  if (!o.preset.empty()) {
    if (m || n || k || batch != 1 || epilogue_given) {
      return "--preset sets the shapes and epilogues: leave out --m, --n, --k, --batch and --epilogue";
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
    if (o.json_path.empty()) o.json_path = "tilefuse-bench-" + o.preset + ".json";
    return o;
  }
  if (!m || !n || !k) return "gemm needs --m, --n and --k (or --preset)";
  for (DType dtype : dtypes) {
    for (OperandLayout layout : layouts) {
      o.problems.push_back(GemmProblem{*m, *n, *k, batch, dtype, layout, epilogue, split_k});
    }
  }
  return o;
}

}  // namespace tilefuse::bench
