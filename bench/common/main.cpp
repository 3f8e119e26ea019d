// tilefuse-bench: parses the command line, prints the device header, measures the floor, runs every
// problem (check, then time tilefuse and its peers), prints the table and writes the JSON report.
// gemm and info run here; conv2d runs in conv_run.cpp.
// Exit status: 0 all good, 1 a mismatch or an error, 2 a bad command line.
#include <iostream>
#include <variant>

#include "cli.hpp"
#include "conv_run.hpp"
#include "cuda_check.hpp"
#include "device_info.hpp"
#include "elementwise.hpp"
#include "floor.hpp"
#include "gemm_bench.hpp"
#include "report.hpp"
#include "row_loop.hpp"
#include "tilefuse_op.hpp"

namespace tilefuse::bench {
namespace {

bool all_ok(std::vector<ResultRow> const& rows) {
  auto bad = [](Measurement const& m) {
    return m.state == MeasurementState::kMismatch || m.state == MeasurementState::kError;
  };
  for (ResultRow const& row : rows) {
    if (bad(row.tilefuse)) return false;
    for (Measurement const& p : row.peers) {
      if (bad(p)) return false;
    }
  }
  return true;
}

int run(CliOptions const& o) {
  RunHeader header;
  header.command_line = o.command_line;
  header.settings = o.settings;
  for (GemmProblem const& p : o.problems) header.has_tf32_rows = header.has_tf32_rows || p.dtype == DType::kTF32;
  header.device = query_device(o.device);
  for (auto const& op : all_tilefuse_gemms()) {
    for (KernelFacts& f : op->kernel_facts()) header.kernels.push_back(std::move(f));
  }
  elementwise_kernel_facts(header.kernels);
  if (o.command == Command::kInfo) {
    header.floor.note = "info only";
    print_header(std::cout, header);
    return 0;
  }

  cudaStream_t stream = nullptr;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  GemmBench bench(header.device, o.settings, stream);
  if (o.measure_floor) {
    std::cerr << "measuring the floor: 1 GiB device copy, cuBLAS bf16 8192^3 in 4 layouts ...\n";
    try {
      header.floor = measure_floor_rates(bench.cublas(), header.device.l2_bytes, bench.memory_budget(),
                                         o.settings.timing, o.settings.seed, stream);
    } catch (FatalDeviceError const&) {
      throw;
    } catch (BenchError const& e) {
      header.floor = FloorRates{};
      header.floor.note = e.what();
    }
  } else {
    header.floor.note = "--no-floor";
  }
  print_header(std::cout, header);

  std::string stopped;
  int const total = static_cast<int>(o.problems.size());
  std::vector<ResultRow> const rows = run_rows<ResultRow>(
      o.problems, [&](GemmProblem const& p) { return bench.run(p); },
      [&](int i, ResultRow const& row) {
        GemmProblem const& p = row.problem;
        for (Measurement const& peer : row.peers) {
          if (peer.implementation == "cuBLAS" && peer.state == MeasurementState::kOk) {
            consider_matmul_rate(header.floor, p, peer.tflops,
                                 "cuBLAS " + std::string(name_of(p.dtype)) + " 8192^3 " + name_of(p.layout) + " (row)");
          }
        }
        print_progress(std::cerr, i, total, row);
      },
      &stopped);

  print_table(std::cout, rows, header.floor);
  if (!o.json_path.empty()) {
    write_json(o.json_path, header, rows, stopped);
    std::cerr << "wrote " << o.json_path << '\n';
  }
  cudaStreamDestroy(stream);
  return stopped.empty() && all_ok(rows) ? 0 : 1;
}

}  // namespace
}  // namespace tilefuse::bench

int main(int argc, char** argv) {
  using namespace tilefuse::bench;
  auto parsed = parse_cli(argc, argv);
  if (auto const* error = std::get_if<std::string>(&parsed)) {
    std::cerr << "tilefuse-bench: " << *error << '\n';
    return 2;
  }
  CliOptions const& options = std::get<CliOptions>(parsed);
  if (options.command == Command::kHelp) {
    std::cout << usage();
    return 0;
  }
  try {
    if (options.command == Command::kConv2d) return run_conv2d(options);
    return run(options);
  } catch (BenchError const& e) {
    std::cerr << "tilefuse-bench: " << e.what() << '\n';
    return 1;
  }
}
