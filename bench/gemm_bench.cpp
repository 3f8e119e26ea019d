// One benchmark row (see gemm_bench.hpp).
#include "gemm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "elementwise.hpp"
#include "operands.hpp"
#include "tilefuse_op.hpp"

namespace tilefuse::bench {
namespace {

// An implementation under test: what is reported, and the call that runs it on one operand set.
struct Candidate {
  Measurement measurement;
  std::function<void(int)> op;  // empty when it cannot run
  std::vector<float> sampled;   // its D at the check's samples
};

// After a failed call: rethrows as fatal when the CUDA context is gone, so the run stops.
void check_device_alive(std::string const& what) {
  cudaError_t const error = cudaDeviceSynchronize();
  if (is_sticky(error) || is_sticky(cudaPeekAtLastError())) {
    throw FatalDeviceError(what + " left the device unusable: " + cudaGetErrorString(error));
  }
  cudaGetLastError();  // clear a non-sticky error
}

}  // namespace

char const* name_of(MeasurementState s) {
  switch (s) {
    case MeasurementState::kOk: return "ok";
    case MeasurementState::kMismatch: return "MISMATCH";
    case MeasurementState::kRefused: return "refused";
    case MeasurementState::kNotBuilt: return "not built";
    default: return "error";
  }
}

GemmBench::GemmBench(DeviceInfo const& device, BenchSettings const& settings, cudaStream_t stream)
    : device_(device), settings_(settings), stream_(stream), cublas_(stream), cublaslt_(stream) {}

std::size_t GemmBench::memory_budget() const {
  std::size_t free = 0, total = 0;
  BENCH_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  std::size_t constexpr kReserve = std::size_t{512} << 20;  // workspaces, the check's buffers, cuBLAS
  return free > kReserve ? (free - kReserve) / 10 * 9 : 0;
}

ResultRow GemmBench::run(GemmProblem const& p) {
  ResultRow row;
  row.problem = p;
  OperandPool pool(p, device_.l2_bytes, memory_budget(), settings_.seed, stream_);
  row.operand_sets = pool.size();
  row.bytes_per_set = pool.bytes_per_set();
  std::int64_t const elements_d = p.batch * p.m * p.n;

  // ---- the implementations ----
  std::vector<Candidate> candidates;
  Candidate tilefuse;
  tilefuse.measurement.implementation = "tilefuse";
  std::unique_ptr<TilefuseGemmOp> gemm = make_tilefuse_gemm(p.dtype, p.layout, p.epilogue);
  DeviceBuffer workspace;
  if (!gemm) {
    tilefuse.measurement.state = MeasurementState::kNotBuilt;
    tilefuse.measurement.message = "not instantiated (built: bf16 none in tn/nn/nt/tt, fp16 none in tn, "
                                   "bf16 bias_gelu_residual in tn)";
  } else if (std::string why = gemm->prepare(p, pool.sets()); !why.empty()) {
    tilefuse.measurement.state = MeasurementState::kRefused;
    tilefuse.measurement.message = why;
  } else {
    workspace = DeviceBuffer(gemm->workspace_size());
    row.describe = gemm->describe();
    tilefuse.op = [&](int set) { gemm->run(set, workspace.get(), stream_); };
  }
  candidates.push_back(std::move(tilefuse));

  auto pool_op = [&](auto&& body) { return std::function<void(int)>([&pool, body](int set) { body(pool[set]); }); };
  if (p.epilogue == EpilogueKind::kNone) {
    Candidate c;
    c.measurement.implementation = "cuBLAS";
    c.op = pool_op([this, p](GemmOperands const& ops) { cublas_.run(p, ops); });
    candidates.push_back(std::move(c));
  } else {
    Candidate lt;
    lt.measurement.implementation = "cuBLASLt GELU_BIAS + add";
    if (std::string why = cublaslt_.prepare(p, pool[0]); !why.empty()) {
      lt.measurement.state = MeasurementState::kRefused;
      lt.measurement.message = why;
    } else {
      lt.op = pool_op([this, p, elements_d](GemmOperands const& ops) {
        cublaslt_.run(ops);
        residual_add_inplace(ops.d, ops.c, p.dtype, elements_d, stream_);
      });
    }
    candidates.push_back(std::move(lt));

    Candidate unfused;
    unfused.measurement.implementation = "cuBLAS + bias_gelu + add";
    unfused.op = pool_op([this, p, elements_d](GemmOperands const& ops) {
      cublas_.run(p, ops);
      bias_gelu_inplace(ops.d, ops.bias, p.dtype, p.batch * p.m, p.n, stream_);
      residual_add_inplace(ops.d, ops.c, p.dtype, elements_d, stream_);
    });
    candidates.push_back(std::move(unfused));
  }

  // ---- the check: one run each on set 0 with D poisoned, against the float64 sample ----
  SampledReference const reference(p, pool[0], settings_.check_samples, settings_.seed ^ 0x5eed, stream_);
  row.check_samples = reference.size();
  row.reference_rms = reference.rms();
  for (Candidate& c : candidates) {
    if (!c.op) continue;
    try {
      pool.poison_output(0, stream_);
      c.op(0);
      BENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      c.sampled = reference.gather(pool[0].d);
      c.measurement.error = reference.error_of(c.sampled);
      c.measurement.checked = true;
    } catch (BenchError const& e) {
      c.measurement.state = MeasurementState::kError;
      c.measurement.message = e.what();
      c.op = nullptr;
      check_device_alive(c.measurement.implementation);
    }
  }
  // Peers: not timed only when grossly wrong; above the tolerance they are timed and noted. tilefuse:
  // within the dtype's tolerance, or within twice the best peer's own error where that is larger (the
  // peers round intermediates to the output type, and cuBLAS may sum split-K partials in it).
  Tolerance const tolerance = error_tolerance(p.dtype);
  Tolerance best_peer{INFINITY, INFINITY};
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    Measurement& m = candidates[i].measurement;
    if (!m.checked) continue;
    m.tolerance = tolerance;
    if (!(m.error.max_abs_error <= kPeerGrossError)) {
      m.state = MeasurementState::kMismatch;
      m.message = "max abs error " + std::to_string(m.error.max_abs_error) + " x rms > " +
                  std::to_string(kPeerGrossError) + ": the peer computes something else, at " + m.error.worst;
      candidates[i].op = nullptr;
      continue;
    }
    if (m.error.max_error > tolerance.max_error || m.error.max_abs_error > tolerance.max_abs_error) {
      m.warning = "above the " + std::string(name_of(p.dtype)) + " tolerance (max error " +
                  std::to_string(m.error.max_error) + ", max abs error " + std::to_string(m.error.max_abs_error) +
                  "), timed anyway";
    }
    best_peer.max_error = std::min(best_peer.max_error, m.error.max_error);
    best_peer.max_abs_error = std::min(best_peer.max_abs_error, m.error.max_abs_error);
  }
  Measurement& tf = candidates[0].measurement;
  if (tf.checked) {
    tf.tolerance = tolerance;
    if (std::isfinite(best_peer.max_error)) {
      tf.tolerance.max_error = std::max(tolerance.max_error, 2.0 * best_peer.max_error);
      tf.tolerance.max_abs_error = std::max(tolerance.max_abs_error, 2.0 * best_peer.max_abs_error);
    }
    if (!(tf.error.max_error <= tf.tolerance.max_error && tf.error.max_abs_error <= tf.tolerance.max_abs_error)) {
      tf.state = MeasurementState::kMismatch;
      tf.message = "max error " + std::to_string(tf.error.max_error) + " (tolerance " +
                   std::to_string(tf.tolerance.max_error) + "), max abs error " +
                   std::to_string(tf.error.max_abs_error) + " x rms (tolerance " +
                   std::to_string(tf.tolerance.max_abs_error) + "), " + std::to_string(tf.error.nonfinite) +
                   " non-finite; worst " + tf.error.worst;
      candidates[0].op = nullptr;
    }
  }
  if (candidates.size() > 1 && !candidates[0].sampled.empty() && !candidates[1].sampled.empty()) {
    row.has_peer_difference = true;
    row.tilefuse_vs_first_peer = reference.difference(candidates[0].sampled, candidates[1].sampled);
  }

  // ---- timing ----
  for (Candidate& c : candidates) {
    if (!c.op) continue;
    try {
      c.measurement.timing = time_rotating(c.op, pool.size(), settings_.timing, stream_);
      c.measurement.tflops = gemm_flops(p) / (c.measurement.timing.median_ms * 1e-3) / 1e12;
      c.measurement.state = MeasurementState::kOk;
    } catch (BenchError const& e) {
      c.measurement.state = MeasurementState::kError;
      c.measurement.message = e.what();
      check_device_alive(c.measurement.implementation);
    }
  }

  row.tilefuse = std::move(candidates[0].measurement);
  for (std::size_t i = 1; i < candidates.size(); ++i) row.peers.push_back(std::move(candidates[i].measurement));
  return row;
}

}  // namespace tilefuse::bench
