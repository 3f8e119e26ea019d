// Command-line parsing for tilefuse-bench (the usage text says what each option does).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "conv_problems.hpp"
#include "gemm_bench.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

enum class Command { kGemm, kConv2d, kInfo, kHelp };

struct CliOptions {
  Command command = Command::kHelp;
  std::vector<GemmProblem> problems;       // gemm
  std::vector<ConvProblem> conv_problems;  // conv2d
  std::string preset;     // empty: one problem from the shape options
  std::string json_path;  // empty: no JSON (a preset defaults to tilefuse-bench-<preset>.json)
  int device = 0;
  bool measure_floor = true;
  BenchSettings settings;
  std::string command_line;
};

// The options, or a message saying what is wrong with the command line.
std::variant<CliOptions, std::string> parse_cli(int argc, char const* const* argv);
std::string usage();

// ---- shared by the subcommands' parsers (cli.cpp, conv_cli.cpp) ----

// One option: "--name value" or "--name=value"; the flags --help, -h and --no-floor have no value.
struct CliOption {
  std::string_view name;
  std::string_view value;
};
// The option at argv[*i], advancing *i past its value; or what is wrong with it.
std::variant<CliOption, std::string> next_option(int argc, char const* const* argv, int* i);
// The options every benchmark subcommand takes (measurement, device, JSON): nullopt when `option` is
// none of them, else "" or what is wrong with its value.
std::optional<std::string> parse_common_option(CliOption const& option, CliOptions& o);
// Reads the options after the subcommand: the common ones into `o`, the others through handle(option),
// which returns "" or what is wrong. Returns "" or the first error; --help sets o.command to kHelp and stops.
std::string for_each_option(int argc, char const* const* argv, CliOptions& o,
                            std::function<std::string(CliOption const&)> const& handle);
// "" and the value, or what is wrong (the option's name and value in the message).
std::string parse_positive(CliOption const& option, std::int64_t& out);
std::string parse_positive_int(CliOption const& option, int& out);
// --split-k: a positive count, or 0 (the operation chooses).
std::string parse_split_k(CliOption const& option, int& out);
std::optional<std::int64_t> parse_int64(std::string_view s);
std::vector<std::string_view> split_list(std::string_view s, char separator);
// "bf16,fp16" -> the types, or what is wrong.
std::variant<std::vector<DType>, std::string> parse_dtype_list(std::string_view s);

// conv2d's options (conv_cli.cpp); `o` holds the command line and the command.
std::variant<CliOptions, std::string> parse_conv2d_cli(int argc, char const* const* argv, CliOptions o);
std::string conv2d_usage();

}  // namespace tilefuse::bench
