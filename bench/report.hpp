// The report: a markdown header (device, versions, method, floor rates, SASS facts) and table on
// stdout, one progress line per row on stderr, and everything in a JSON file.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "device_info.hpp"
#include "floor.hpp"
#include "gemm_bench.hpp"
#include "kernel_facts.hpp"

namespace tilefuse::bench {

struct RunHeader {
  std::string command_line;
  DeviceInfo device;
  BenchSettings settings;
  FloorRates floor;
  std::vector<KernelFacts> kernels;
};

void print_header(std::ostream& out, RunHeader const& header);
void print_progress(std::ostream& out, int index, int total, ResultRow const& row);
// Rows as a markdown table, one line per (problem, peer), and the reasons behind every non-ok entry.
void print_table(std::ostream& out, std::vector<ResultRow> const& rows, FloorRates const& floor);
// Throws BenchError when the file cannot be written.
void write_json(std::string const& path, RunHeader const& header, std::vector<ResultRow> const& rows,
                std::string const& stopped_because);

}  // namespace tilefuse::bench
