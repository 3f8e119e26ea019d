// The conv2d subcommand's flow (see conv_run.hpp).
#include "conv_run.hpp"

#include <iostream>

#include "conv_bench.hpp"
#include "conv_elementwise.hpp"
#include "conv_report.hpp"
#include "cublas_gemm.hpp"
#include "cuda_check.hpp"
#include "floor.hpp"
#include "row_loop.hpp"

namespace tilefuse::bench {
namespace {

bool failed(Measurement const& m) {
  return m.state == MeasurementState::kMismatch || m.state == MeasurementState::kError;
}

bool all_ok(std::vector<ConvResultRow> const& rows) {
  for (ConvResultRow const& row : rows) {
    if (failed(row.tilefuse)) return false;
    for (Measurement const& p : row.peers) {
      if (failed(p)) return false;
    }
  }
  return true;
}

// The floor's rates, as the gemm subcommand measures them (cuBLAS bf16 8192^3 and a 1 GiB copy).
FloorRates floor_rates(CliOptions const& o, ConvBench const& bench, std::int64_t l2_bytes, cudaStream_t stream) {
  if (!o.measure_floor) {
    FloorRates none;
    none.note = "--no-floor";
    return none;
  }
  std::cerr << "measuring the floor: 1 GiB device copy, cuBLAS bf16 8192^3 in 4 layouts ...\n";
  try {
    CublasGemm const cublas(stream);
    return measure_floor_rates(cublas, l2_bytes, bench.memory_budget(), o.settings.timing, o.settings.seed, stream);
  } catch (FatalDeviceError const&) {
    throw;
  } catch (BenchError const& e) {
    FloorRates none;
    none.note = e.what();
    return none;
  }
}

}  // namespace

int run_conv2d(CliOptions const& o) {
  RunHeader header;
  header.command_line = o.command_line;
  header.settings = o.settings;
  header.device = query_device(o.device);
  conv_elementwise_kernel_facts(header.kernels);

  cudaStream_t stream = nullptr;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ConvBench bench(header.device, o.settings, stream);
  header.floor = floor_rates(o, bench, header.device.l2_bytes, stream);
  print_header(std::cout, header);
  std::string const cudnn_version = CudnnConv::version();
  std::cout << "- conv2d: cuDNN " << cudnn_version << " (compiled against " << CUDNN_MAJOR << "." << CUDNN_MINOR
            << "." << CUDNN_PATCHLEVEL << "); cuDNN's algorithm: the fastest cudnnFind*AlgorithmEx ran on the "
            << "problem; FLOPs 2*N*P*Q*K*R*S*C; floor bytes x + w + y (+ residual + bias)\n\n"
            << std::flush;

  std::string stopped;
  int const total = static_cast<int>(o.conv_problems.size());
  std::vector<ConvResultRow> const rows = run_rows<ConvResultRow>(
      o.conv_problems, [&](ConvProblem const& p) { return bench.run(p); },
      [&](int i, ConvResultRow const& row) { print_conv_progress(std::cerr, i, total, row); }, &stopped);

  print_conv_table(std::cout, rows, header.floor);
  if (!o.json_path.empty()) {
    write_conv_json(o.json_path, header, cudnn_version, rows, stopped);
    std::cerr << "wrote " << o.json_path << '\n';
  }
  cudaStreamDestroy(stream);
  bool const ok = stopped.empty() && all_ok(rows);
  if (!ok) std::cerr << "conv2d: some implementation failed its check or its call (see the notes above)\n";
  return ok ? 0 : 1;
}

}  // namespace tilefuse::bench
