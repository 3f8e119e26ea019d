// The report: a markdown header (device, versions, method, floor rates, SASS facts) and table on
// stdout, one progress line per row on stderr, and everything in a JSON file.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "device_info.hpp"
#include "floor.hpp"
#include "gemm_bench.hpp"
#include "json_writer.hpp"
#include "kernel_facts.hpp"

namespace tilefuse::bench {

struct RunHeader {
  std::string command_line;
  DeviceInfo device;
  BenchSettings settings;
  FloorRates floor;
  std::vector<KernelFacts> kernels;
  bool has_tf32_rows = false;  // the header then also gives the tf32 floor rate
};

void print_header(std::ostream& out, RunHeader const& header);
void print_progress(std::ostream& out, int index, int total, ResultRow const& row);
// Rows as a markdown table, one line per (problem, peer), and the reasons behind every non-ok entry.
void print_table(std::ostream& out, std::vector<ResultRow> const& rows, FloorRates const& floor);
// Throws BenchError when the file cannot be written.
void write_json(std::string const& path, RunHeader const& header, std::vector<ResultRow> const& rows,
                std::string const& stopped_because);

// Pieces shared with the conv2d report (conv_report.hpp).
std::string fixed(double value, int digits);
std::string one_line(std::string text);  // line breaks to spaces: a message fits one table note
bool timed(Measurement const& m);
// The table lines of one row: one per peer (one with dashes when the row has no peers), with `label` as
// its leading cells; notes for anything not ok go to `notes`, each starting with `name`.
void print_result_lines(std::ostream& out, std::ostream& notes, std::string const& label, std::string const& name,
                        Measurement const& tilefuse, std::vector<Measurement> const& peers, double floor_time);
std::string check_cell(Measurement const& m);  // "ok 3.1e-03", "MISMATCH ...", or the state
void write_error(JsonWriter& j, SampleError const& e);
// floor and tilefuse_ms: 0 when unknown (then no time_over_floor / tilefuse_speedup fields).
void write_measurement(JsonWriter& j, Measurement const& m, double floor, double tilefuse_ms);
// A row's fields after its problem: floor, operand sets, check, tilefuse and the peers.
void write_row_results(JsonWriter& j, RowResults const& row, double floor_time);
// The top-level fields before the rows: tool, command, device, method, floor and kernels.
void write_json_header(JsonWriter& j, RunHeader const& header, std::string const& stopped_because);

}  // namespace tilefuse::bench
