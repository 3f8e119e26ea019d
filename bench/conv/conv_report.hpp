// The conv2d report: one progress line per row on stderr, the results table with notes, the kernels each
// implementation ran and the geometric means of tilefuse's speedups on stdout, and everything in JSON.
// The header (device, versions, method, floor rates) is the gemm report's (report.hpp).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "conv_bench.hpp"
#include "floor.hpp"
#include "report.hpp"

namespace tilefuse::bench {

// max(FLOPs / matmul rate, minimal bytes / copy bandwidth) in ms; 0 when the rates were not measured.
double conv_floor_ms(ConvProblem const& p, FloorRates const& rates);

// Geometric mean of peer ms / tilefuse ms over the rows where both were timed, per peer, dtype and mode.
struct ConvSpeedupMean {
  std::string peer;
  DType dtype;
  ConvMode mode;
  double geomean = 0;
  int rows = 0;   // rows in the mean
  int total = 0;  // rows with this peer
};
std::vector<ConvSpeedupMean> conv_speedup_means(std::vector<ConvResultRow> const& rows);

void print_conv_progress(std::ostream& out, int index, int total, ConvResultRow const& row);
void print_conv_table(std::ostream& out, std::vector<ConvResultRow> const& rows, FloorRates const& floor);
// Throws BenchError when the file cannot be written.
void write_conv_json(std::string const& path, RunHeader const& header, std::string const& cudnn_version,
                     std::vector<ConvResultRow> const& rows, std::string const& stopped_because);

}  // namespace tilefuse::bench
