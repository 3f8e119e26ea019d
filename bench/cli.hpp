// Command-line parsing for tilefuse-bench (the usage text says what each option does).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "gemm_bench.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

enum class Command { kGemm, kInfo, kHelp };

struct CliOptions {
  Command command = Command::kHelp;
  std::vector<GemmProblem> problems;
  std::string preset;     // empty: one problem from --m/--n/--k
  std::string json_path;  // empty: no JSON (a preset defaults to tilefuse-bench-<preset>.json)
  int device = 0;
  bool measure_floor = true;
  BenchSettings settings;
  std::string command_line;
};

// The options, or a message saying what is wrong with the command line.
std::variant<CliOptions, std::string> parse_cli(int argc, char const* const* argv);
std::string usage();

}  // namespace tilefuse::bench
