// Markdown and JSON reports (see report.hpp).
#include "report.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "json_writer.hpp"

namespace tilefuse::bench {
namespace {

std::string scientific(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.1e", value);
  return buffer;
}

// +3.1% / -0.4%: a relative change.
std::string signed_percent(double fraction) {
  return (fraction >= 0 ? "+" : "") + fixed(100.0 * fraction, 1) + "%";
}

std::string mib(double bytes) { return fixed(bytes / double(1 << 20), 0) + " MiB"; }

bool any_tf32(std::vector<ResultRow> const& rows) {
  for (ResultRow const& row : rows) {
    if (row.problem.dtype == DType::kTF32) return true;
  }
  return false;
}

std::string tf32_rate_text(FloorRates const& floor) {
  return fixed(matmul_tflops_for(DType::kTF32, floor), 1) + " TFLOP/s [" + matmul_source_for(DType::kTF32, floor) +
         "]";
}

std::string problem_label(GemmProblem const& p) {
  return shape_name(p) + " | " + name_of(p.dtype) + " | " + name_of(p.layout) + " | " + name_of(p.epilogue) + " | " +
         std::to_string(p.split_k);
}

void write_problem(JsonWriter& j, GemmProblem const& p) {
  j.begin_object();
  j.field("m", p.m).field("n", p.n).field("k", p.k).field("batch", p.batch);
  j.field("dtype", name_of(p.dtype)).field("layout", name_of(p.layout)).field("epilogue", name_of(p.epilogue));
  j.field("split_k", p.split_k);
  j.end_object();
}

void write_facts(JsonWriter& j, KernelFacts const& f) {
  j.begin_object();
  j.field("name", f.name).field("available", f.available);
  if (f.available) {
    j.field("registers", f.registers).field("local_bytes_per_thread", static_cast<std::uint64_t>(f.local_bytes));
    j.field("static_shared_bytes", static_cast<std::uint64_t>(f.static_shared_bytes));
    j.field("dynamic_shared_bytes", static_cast<std::uint64_t>(f.dynamic_shared_bytes));
    j.field("max_threads_per_block", f.max_threads_per_block).field("binary_version", f.binary_version);
  } else {
    j.field("note", f.note);
  }
  j.end_object();
}

}  // namespace

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

// Messages go into one table note each: no line breaks.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

bool timed(Measurement const& m) { return m.state == MeasurementState::kOk; }

std::string check_cell(Measurement const& m) {
  if (m.checked) return std::string(m.state == MeasurementState::kMismatch ? "MISMATCH " : "ok ") +
                        scientific(m.error.max_error);
  return name_of(m.state);
}

void write_error(JsonWriter& j, SampleError const& e) {
  j.begin_object();
  j.field("max_error", e.max_error).field("max_abs_error", e.max_abs_error);
  j.field("nonfinite", e.nonfinite).field("worst", e.worst);
  j.end_object();
}

void write_measurement(JsonWriter& j, Measurement const& m, double floor, double tilefuse_ms) {
  j.begin_object();
  j.field("implementation", m.implementation).field("state", name_of(m.state)).field("message", m.message);
  j.field("checked", m.checked);
  if (m.checked) {
    j.key("error");
    write_error(j, m.error);
    j.key("tolerance").begin_object();
    j.field("max_error", m.tolerance.max_error).field("max_abs_error", m.tolerance.max_abs_error);
    j.end_object();
    if (!m.warning.empty()) j.field("warning", m.warning);
  }
  if (timed(m)) {
    Timing const& t = m.timing;
    j.field("median_ms", t.median_ms).field("min_ms", t.min_ms).field("max_ms", t.max_ms);
    j.field("mean_ms", t.mean_ms).field("p10_ms", t.p10_ms).field("p90_ms", t.p90_ms);
    j.field("reps", t.reps).field("warmup_calls", t.warmup_calls).field("host_us_per_call", t.host_us_per_call);
    j.field("tflops", m.tflops);
    if (floor > 0) j.field("time_over_floor", t.median_ms / floor);
    if (tilefuse_ms > 0) j.field("tilefuse_speedup", t.median_ms / tilefuse_ms);
  }
  j.end_object();
}

void print_header(std::ostream& out, RunHeader const& h) {
  DeviceInfo const& d = h.device;
  out << "# tilefuse-bench\n\n";
  out << "`" << h.command_line << "`\n\n";
  out << "- device " << d.device << ": **" << d.name << "** (sm_" << d.cc_major << d.cc_minor << ", " << d.sm_count
      << " SMs, PCI " << d.pci_bus_id << ")\n";
  out << "- clocks (peak): SM " << d.sm_clock_khz / 1000 << " MHz, memory " << d.memory_clock_khz / 1000 << " MHz x "
      << d.memory_bus_bits << "-bit; L2 " << mib(double(d.l2_bytes)) << "; memory "
      << fixed(double(d.total_memory_bytes) / double(1 << 30), 1) << " GiB\n";
  out << "- driver " << cuda_version_string(d.driver_version) << ", runtime " << cuda_version_string(d.runtime_version)
      << ", cuBLAS " << d.cublas_version << ", cuBLASLt " << d.cublaslt_version << "; tilefuse built for "
      << d.built_archs << "\n";
  TimingOptions const& t = h.settings.timing;
  out << "- timing: CUDA events around each call, >= " << t.min_warmup_calls << " warm-up calls and >= "
      << t.min_warmup_ms << " ms first, median of " << t.reps
      << " calls, each on the next of N rotating operand sets (N x set > 2 x L2), random normal inputs\n";
  out << "- check: D against a float64 reference at " << h.settings.check_samples
      << "+ sampled elements (output poisoned with NaN first); error = |x - ref| / (|ref| + 0.01 rms(ref))\n";
  if (h.floor.measured) {
    out << "- floor = max(FLOPs / " << fixed(h.floor.matmul_tflops, 1) << " TFLOP/s [" << h.floor.matmul_source
        << "], minimal bytes / " << fixed(h.floor.copy_gbps, 0) << " GB/s [1 GiB cudaMemcpy D2D, read + write])\n";
    if (h.has_tf32_rows) out << "- tf32 rows: matmul rate " << tf32_rate_text(h.floor) << "\n";
  } else {
    out << "- floor: not measured (" << h.floor.note << ")\n";
  }
  out << "\n## Kernels (cudaFuncGetAttributes)\n\n";
  out << "| kernel | registers | local bytes/thread (spills, stack) | static smem | dynamic smem | SASS |\n";
  out << "|---|---:|---:|---:|---:|---:|\n";
  for (KernelFacts const& f : h.kernels) {
    if (f.available) {
      out << "| " << f.name << " | " << f.registers << " | " << f.local_bytes << " | " << f.static_shared_bytes
          << " | " << f.dynamic_shared_bytes << " | sm_" << f.binary_version << " |\n";
    } else {
      out << "| " << f.name << " | - | - | - | - | " << f.note << " |\n";
    }
  }
  out << '\n' << std::flush;
}

void print_progress(std::ostream& out, int index, int total, ResultRow const& row) {
  out << "[" << index + 1 << "/" << total << "] " << shape_name(row.problem) << ' ' << name_of(row.problem.dtype) << ' '
      << name_of(row.problem.layout) << ' ' << name_of(row.problem.epilogue) << ": ";
  auto one = [&](Measurement const& m) {
    out << m.implementation << ' ';
    if (timed(m)) {
      out << fixed(m.timing.median_ms, 4) << " ms (" << fixed(m.tflops, 1) << " TFLOP/s)";
    } else {
      out << name_of(m.state);
    }
  };
  one(row.tilefuse);
  for (Measurement const& p : row.peers) {
    out << ", ";
    one(p);
  }
  out << '\n' << std::flush;
}

void print_result_lines(std::ostream& out, std::ostream& notes, std::string const& label, std::string const& name,
                        Measurement const& tf, std::vector<Measurement> const& peers, double floor_time) {
  auto note = [&](std::string const& who, std::string const& text) {
    notes << "- " << name << ", " << who << ": " << one_line(text) << '\n';
  };
  std::string const tf_cells = (timed(tf) ? fixed(tf.timing.median_ms, 4) : "-") + " | " +
                               (timed(tf) ? fixed(tf.tflops, 1) : "-") + " | " + check_cell(tf);
  std::string const tf_floor = timed(tf) && floor_time > 0 ? fixed(tf.timing.median_ms / floor_time, 2) : "-";
  std::string const floor_cell = floor_time > 0 ? fixed(floor_time, 4) : "-";
  if (tf.state != MeasurementState::kOk) note("tilefuse", std::string(name_of(tf.state)) + ": " + tf.message);
  if (peers.empty()) {  // the row failed before its peers were set up
    out << "| " << label << " | " << tf_cells << " | - | - | - | - | " << floor_cell << " | " << tf_floor << " | - |\n";
    return;
  }
  for (Measurement const& peer : peers) {
    std::string peer_name = peer.implementation;
    if (peer.state != MeasurementState::kOk) peer_name += std::string(" (") + name_of(peer.state) + ")";
    if (!peer.warning.empty()) peer_name += " (!)";
    bool const both = timed(tf) && timed(peer);
    out << "| " << label << " | " << tf_cells << " | " << peer_name << " | "
        << (timed(peer) ? fixed(peer.timing.median_ms, 4) : "-") << " | " << (timed(peer) ? fixed(peer.tflops, 1) : "-")
        << " | " << (both ? fixed(peer.timing.median_ms / tf.timing.median_ms, 3) : "-") << " | " << floor_cell
        << " | " << tf_floor << " | "
        << (timed(peer) && floor_time > 0 ? fixed(peer.timing.median_ms / floor_time, 2) : "-") << " |\n";
    if (peer.state != MeasurementState::kOk) {
      note(peer.implementation, std::string(name_of(peer.state)) + ": " + peer.message);
    }
    if (!peer.warning.empty()) note(peer.implementation + " (!)", peer.warning);
  }
}

void print_table(std::ostream& out, std::vector<ResultRow> const& rows, FloorRates const& floor) {
  out << "## Results\n\n";
  out << "speedup = peer ms / tilefuse ms (> 1: tilefuse faster); x floor = time / floor time (1 = at the floor); "
         "check = tilefuse's max error against float64 (see the notes below for anything not ok); in a fused row, "
         "peer 'tilefuse, epilogue none' is the same kernel with the plain epilogue on the same operands, timed "
         "in the same run: the fusion costs 1 / speedup - 1\n\n";
  out << "| problem | dtype | layout | epilogue | split-k | tilefuse ms | TFLOP/s | check | peer | peer ms | "
         "peer TFLOP/s | speedup | floor ms | tilefuse x floor | peer x floor |\n";
  out << "|---|---|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|\n";
  std::ostringstream notes;
  for (ResultRow const& row : rows) {
    GemmProblem const& p = row.problem;
    std::string const name = shape_name(p) + ' ' + name_of(p.dtype) + ' ' + name_of(p.layout) + ' ' + name_of(p.epilogue);
    print_result_lines(out, notes, problem_label(p), name, row.tilefuse, row.peers, floor_ms(p, floor));
  }
  if (!notes.str().empty()) out << "\nNotes:\n\n" << notes.str();
  bool any_pairs = false;
  for (ResultRow const& row : rows) {
    if (!row.has_fusion_pairs) continue;
    if (!any_pairs) {
      out << "\nFusion cost from interleaved pairs (the fused kernel and its plain-epilogue twin called in turn, "
             "each pair at the same clocks; cost = median of the per-pair ratios - 1):\n\n";
    }
    any_pairs = true;
    PairedTiming const& t = row.fusion_pairs;
    out << "- " << shape_name(row.problem) << ' ' << name_of(row.problem.dtype) << ' ' << name_of(row.problem.layout)
        << ' ' << name_of(row.problem.epilogue) << ": **" << signed_percent(t.ratio_median - 1.0) << "** over "
        << t.pairs << " pairs (p10 " << signed_percent(t.ratio_p10 - 1.0) << ", p90 "
        << signed_percent(t.ratio_p90 - 1.0) << "); medians " << fixed(t.a.median_ms, 4) << " against "
        << fixed(t.b.median_ms, 4) << " ms\n";
  }
  bool any_describe = false;
  for (ResultRow const& row : rows) {
    if (row.describe.empty()) continue;
    if (!any_describe) out << "\ntilefuse kernel per problem (Gemm::describe):\n\n";
    any_describe = true;
    out << "- " << shape_name(row.problem) << ' ' << name_of(row.problem.dtype) << ' ' << name_of(row.problem.layout)
        << ' ' << name_of(row.problem.epilogue) << ": " << row.describe << '\n';
  }
  if (floor.measured) {
    out << "\nFloor rates: matmul " << fixed(floor.matmul_tflops, 1) << " TFLOP/s (" << floor.matmul_source
        << "), copy " << fixed(floor.copy_gbps, 0) << " GB/s";
    if (any_tf32(rows)) out << "; tf32 rows: matmul " << tf32_rate_text(floor);
    out << '\n';
  }
  out << std::flush;
}

void write_json_header(JsonWriter& j, RunHeader const& h, std::string const& stopped_because) {
  DeviceInfo const& d = h.device;
  j.field("tool", "tilefuse-bench").field("format_version", 1).field("command", h.command_line);
  if (!stopped_because.empty()) j.field("stopped_early", stopped_because);

  j.key("device").begin_object();
  j.field("index", d.device).field("name", d.name).field("pci_bus_id", d.pci_bus_id);
  j.field("compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor));
  j.field("sm_count", d.sm_count).field("sm_clock_peak_mhz", d.sm_clock_khz / 1000);
  j.field("memory_clock_peak_mhz", d.memory_clock_khz / 1000).field("memory_bus_bits", d.memory_bus_bits);
  j.field("l2_bytes", d.l2_bytes).field("memory_bytes", d.total_memory_bytes);
  j.field("driver", cuda_version_string(d.driver_version)).field("runtime", cuda_version_string(d.runtime_version));
  j.field("cublas", d.cublas_version).field("cublaslt", d.cublaslt_version).field("built_archs", d.built_archs);
  j.end_object();

  TimingOptions const& t = h.settings.timing;
  j.key("method").begin_object();
  j.field("timing", "CUDA events per call after warm-up; median; rotating operand sets larger than 2 x L2; "
                    "random normal inputs; host enqueue kept out by a delay kernel per group of calls");
  j.field("order", t.interleave ? "interleaved: every implementation call by call in turn (each on its own "
                                  "operand set, the order alternating), one warm-up for all"
                                : "mirrored halves: A B C C B A, each half with its own warm-up");
  j.field("reps", t.reps).field("min_warmup_calls", t.min_warmup_calls).field("min_warmup_ms", t.min_warmup_ms);
  j.field("check_samples", h.settings.check_samples).field("seed", h.settings.seed);
  j.field("error_metric", "max over samples of |x - ref| / (|ref| + 0.01 rms(ref)), ref in float64");
  j.end_object();

  j.key("floor").begin_object();
  j.field("measured", h.floor.measured);
  if (h.floor.measured) {
    j.field("matmul_tflops", h.floor.matmul_tflops).field("matmul_source", h.floor.matmul_source);
    j.key("matmul_startup_by_layout").begin_object();
    for (auto const& [layout, tflops] : h.floor.matmul_by_layout) j.field(layout, tflops);
    j.end_object();
    j.field("tf32_matmul_tflops", matmul_tflops_for(DType::kTF32, h.floor));
    j.field("tf32_matmul_source", matmul_source_for(DType::kTF32, h.floor));
    j.field("copy_gbps", h.floor.copy_gbps).field("copy_1gib_ms", h.floor.copy_ms);
  } else {
    j.field("note", h.floor.note);
  }
  j.end_object();

  j.key("kernels").begin_array();
  for (KernelFacts const& f : h.kernels) write_facts(j, f);
  j.end_array();
}

void write_row_results(JsonWriter& j, RowResults const& row, double floor_time) {
  double const tf_ms = timed(row.tilefuse) ? row.tilefuse.timing.median_ms : 0.0;
  if (floor_time > 0) j.field("floor_ms", floor_time);
  j.field("operand_sets", row.operand_sets).field("bytes_per_set", static_cast<std::uint64_t>(row.bytes_per_set));
  j.field("check_samples", row.check_samples).field("reference_rms", row.reference_rms);
  j.field("tilefuse_describe", row.describe);
  j.key("tilefuse");
  write_measurement(j, row.tilefuse, floor_time, 0.0);
  if (row.has_peer_difference) {
    j.key("tilefuse_vs_first_peer");
    write_error(j, row.tilefuse_vs_first_peer);
  }
  j.key("peers").begin_array();
  for (Measurement const& p : row.peers) write_measurement(j, p, floor_time, tf_ms);
  j.end_array();
  if (row.has_fusion_pairs) {
    PairedTiming const& t = row.fusion_pairs;
    j.key("fusion_cost_paired").begin_object();
    j.field("pairs", t.pairs).field("fused_median_ms", t.a.median_ms).field("plain_median_ms", t.b.median_ms);
    j.field("ratio_median", t.ratio_median).field("ratio_p10", t.ratio_p10).field("ratio_p90", t.ratio_p90);
    j.end_object();
  }
}

void write_json(std::string const& path, RunHeader const& h, std::vector<ResultRow> const& rows,
                std::string const& stopped_because) {
  std::ofstream file(path);
  if (!file) throw BenchError("cannot open " + path + " for writing");
  JsonWriter j(file);
  j.begin_object();
  write_json_header(j, h, stopped_because);

  j.key("rows").begin_array();
  for (ResultRow const& row : rows) {
    double const floor_time = floor_ms(row.problem, h.floor);
    j.begin_object();
    j.key("problem");
    write_problem(j, row.problem);
    j.field("flops", gemm_flops(row.problem)).field("minimal_bytes", minimal_bytes(row.problem));
    write_row_results(j, row, floor_time);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  if (!file) throw BenchError("writing " + path + " failed");
}

}  // namespace tilefuse::bench
