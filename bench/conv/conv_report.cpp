// The conv2d report (see conv_report.hpp).
#include "conv_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "json_writer.hpp"

namespace tilefuse::bench {
namespace {

std::string row_name(ConvProblem const& p) {
  return (p.layer.empty() ? "" : p.layer + ": ") + conv_shape_name(p) + " " + name_of(p.dtype) + " " +
         name_of(p.shape.mode) + " " + name_of(p.epilogue);
}

std::string problem_cells(ConvProblem const& p) {
  return (p.layer.empty() ? "-" : p.layer) + " | " + conv_shape_name(p) + " | " + name_of(p.dtype) + " | " +
         name_of(p.shape.mode) + " | " + name_of(p.epilogue);
}

void write_conv_problem(JsonWriter& j, ConvProblem const& p) {
  Conv2dProblem const& s = p.shape;
  j.begin_object();
  j.field("layer", p.layer).field("mode", name_of(s.mode)).field("dtype", name_of(p.dtype));
  j.field("epilogue", name_of(p.epilogue)).field("split_k", p.split_k);
  j.field("n", s.N).field("h", s.H).field("w", s.W).field("c", s.C).field("k", s.K).field("r", s.R).field("s", s.S);
  j.field("pad_h", s.pad_h).field("pad_w", s.pad_w).field("stride_h", s.stride_h).field("stride_w", s.stride_w);
  j.field("dilation_h", s.dilation_h).field("dilation_w", s.dilation_w).field("p", s.P()).field("q", s.Q());
  OutputMatrix const out = output_matrix(p);
  j.field("output_rows", out.rows).field("output_cols", out.cols);
  j.end_object();
}

}  // namespace

double conv_floor_ms(ConvProblem const& p, FloorRates const& rates) {
  if (!rates.measured || rates.matmul_tflops <= 0 || rates.copy_gbps <= 0) return 0.0;
  double const compute_s = conv_flops(p) / (rates.matmul_tflops * 1e12);
  double const memory_s = conv_minimal_bytes(p) / (rates.copy_gbps * 1e9);
  return std::max(compute_s, memory_s) * 1e3;
}

std::vector<ConvSpeedupMean> conv_speedup_means(std::vector<ConvResultRow> const& rows) {
  // One entry per (peer, dtype, mode), in the order first seen; log_sums[i] belongs to means[i].
  std::vector<ConvSpeedupMean> means;
  std::vector<double> log_sums;
  for (ConvResultRow const& row : rows) {
    for (Measurement const& peer : row.peers) {
      auto const at = std::find_if(means.begin(), means.end(), [&](ConvSpeedupMean const& m) {
        return m.peer == peer.implementation && m.dtype == row.problem.dtype && m.mode == row.problem.shape.mode;
      });
      std::size_t i = static_cast<std::size_t>(at - means.begin());
      if (at == means.end()) {
        means.push_back(ConvSpeedupMean{peer.implementation, row.problem.dtype, row.problem.shape.mode});
        log_sums.push_back(0.0);
      }
      ++means[i].total;
      if (timed(row.tilefuse) && timed(peer)) {
        log_sums[i] += std::log(peer.timing.median_ms / row.tilefuse.timing.median_ms);
        ++means[i].rows;
      }
    }
  }
  for (std::size_t i = 0; i < means.size(); ++i) {
    means[i].geomean = means[i].rows > 0 ? std::exp(log_sums[i] / means[i].rows) : 0.0;
  }
  return means;
}

void print_conv_progress(std::ostream& out, int index, int total, ConvResultRow const& row) {
  std::vector<Measurement const*> all{&row.tilefuse};
  for (Measurement const& p : row.peers) all.push_back(&p);
  out << "[" << index + 1 << "/" << total << "] " << row_name(row.problem) << ": ";
  for (std::size_t i = 0; i < all.size(); ++i) {
    Measurement const& m = *all[i];
    out << (i > 0 ? ", " : "") << m.implementation << ' ';
    if (timed(m)) {
      out << fixed(m.timing.median_ms, 4) << " ms (" << fixed(m.tflops, 1) << " TFLOP/s)";
    } else {
      out << name_of(m.state);
    }
  }
  out << '\n';
  // A wrong result or a failed call must not go unnoticed in a long log.
  for (Measurement const* m : all) {
    if (m->state == MeasurementState::kMismatch || m->state == MeasurementState::kError) {
      out << "  !! " << name_of(m->state) << ' ' << m->implementation << ": " << one_line(m->message) << '\n';
    }
  }
  out << std::flush;
}

void print_conv_table(std::ostream& out, std::vector<ConvResultRow> const& rows, FloorRates const& floor) {
  out << "## Results (conv2d)\n\n";
  out << "speedup = peer ms / tilefuse ms (> 1: tilefuse faster); x floor = time / floor time (1 = at the floor); "
         "check = tilefuse's max error against float64 (see the notes below for anything not ok)\n\n";
  out << "| layer | problem (NxHxWxC -> K, RxS) | dtype | mode | epilogue | tilefuse ms | TFLOP/s | check | peer | "
         "peer ms | peer TFLOP/s | speedup | floor ms | tilefuse x floor | peer x floor |\n";
  out << "|---|---|---|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|\n";
  std::ostringstream notes;
  for (ConvResultRow const& row : rows) {
    print_result_lines(out, notes, problem_cells(row.problem), row_name(row.problem), row.tilefuse, row.peers,
                       conv_floor_ms(row.problem, floor));
  }
  if (!notes.str().empty()) out << "\nNotes:\n\n" << notes.str();

  out << "\nWhat ran per problem (tilefuse: Conv2d::describe; cuDNN: the algorithm its search found fastest):\n\n";
  for (ConvResultRow const& row : rows) {
    out << "- " << row_name(row.problem) << ": tilefuse " << (row.describe.empty() ? "-" : row.describe);
    for (std::size_t i = 0; i < row.peers.size() && i < row.peer_describe.size(); ++i) {
      if (!row.peer_describe[i].empty()) out << "; " << row.peers[i].implementation << ": " << row.peer_describe[i];
    }
    out << '\n';
  }
  if (floor.measured) {
    out << "\nFloor rates: matmul " << fixed(floor.matmul_tflops, 1) << " TFLOP/s (" << floor.matmul_source
        << "), copy " << fixed(floor.copy_gbps, 0) << " GB/s\n";
  }

  std::vector<ConvSpeedupMean> const means = conv_speedup_means(rows);
  out << "\n## Geometric means of the speedups (peer ms / tilefuse ms, > 1: tilefuse faster)\n\n";
  out << "| peer | dtype | mode | geomean speedup | rows in the mean |\n|---|---|---|---:|---:|\n";
  for (ConvSpeedupMean const& m : means) {
    out << "| " << m.peer << " | " << name_of(m.dtype) << " | " << name_of(m.mode) << " | "
        << (m.rows > 0 ? fixed(m.geomean, 3) : "-") << " | " << m.rows << " of " << m.total << " |\n";
  }
  out << std::flush;
}

void write_conv_json(std::string const& path, RunHeader const& h, std::string const& cudnn_version,
                     std::vector<ConvResultRow> const& rows, std::string const& stopped_because) {
  std::ofstream file(path);
  if (!file) throw BenchError("cannot open " + path + " for writing");
  JsonWriter j(file);
  j.begin_object();
  write_json_header(j, h, stopped_because);
  j.field("benchmark", "conv2d").field("cudnn", cudnn_version);
  j.field("flops_formula", "2*N*P*Q*K*R*S*C");
  j.field("floor_formula", "max(flops / matmul rate, (x + w + y [+ residual + bias]) bytes / copy bandwidth)");

  j.key("rows").begin_array();
  for (ConvResultRow const& row : rows) {
    j.begin_object();
    j.key("problem");
    write_conv_problem(j, row.problem);
    j.field("flops", conv_flops(row.problem)).field("minimal_bytes", conv_minimal_bytes(row.problem));
    write_row_results(j, row, conv_floor_ms(row.problem, h.floor));
    j.key("peer_describe").begin_array();
    for (std::string const& d : row.peer_describe) j.value(d);
    j.end_array();
    j.end_object();
  }
  j.end_array();

  j.key("speedup_geomeans").begin_array();
  for (ConvSpeedupMean const& m : conv_speedup_means(rows)) {
    j.begin_object();
    j.field("peer", m.peer).field("dtype", name_of(m.dtype)).field("mode", name_of(m.mode));
    if (m.rows > 0) j.field("geomean_speedup", m.geomean);
    j.field("rows", m.rows).field("total", m.total);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  if (!file) throw BenchError("writing " + path + " failed");
}

}  // namespace tilefuse::bench
