// The benchmarks' loop over their problems, shared by the GEMM and conv commands: each problem's row in turn; a
// row whose setup throws becomes a failed row (tilefuse's measurement an error with the message), and a FatalDeviceError (a sticky CUDA error) stops the run
// after its row.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "results.hpp"  // FatalDeviceError

namespace tilefuse::bench {

// A row for a problem whose setup failed before any implementation ran (e.g. out of memory).
template <class Row, class Problem>
Row failed_row(Problem const& p, std::string const& message) {
  Row row;
  row.problem = p;
  row.tilefuse.implementation = "tilefuse";
  row.tilefuse.state = MeasurementState::kError;
  row.tilefuse.message = message;
  return row;
}

// run(problem) -> Row; after(index, row) reports a row. *stopped: the fatal error's message, empty when every
// problem ran.
template <class Row, class Problem, class Run, class After>
std::vector<Row> run_rows(std::vector<Problem> const& problems, Run&& run, After&& after, std::string* stopped) {
  std::vector<Row> rows;
  stopped->clear();
  for (std::size_t i = 0; i < problems.size(); ++i) {
    try {
      rows.push_back(run(problems[i]));
    } catch (FatalDeviceError const& e) {
      rows.push_back(failed_row<Row>(problems[i], e.what()));
      *stopped = e.what();
    } catch (BenchError const& e) {
      rows.push_back(failed_row<Row>(problems[i], e.what()));
    }
    after(static_cast<int>(i), rows.back());
    if (!stopped->empty()) {
      std::cerr << "stopping: " << *stopped << '\n';
      break;
    }
  }
  return rows;
}

}  // namespace tilefuse::bench
