// One benchmark row (see gemm_bench.hpp).
#include "gemm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "candidates.hpp"
#include "elementwise.hpp"
#include "operands.hpp"
#include "tilefuse_op.hpp"

namespace tilefuse::bench {
GemmBench::GemmBench(DeviceInfo const& device, BenchSettings const& settings, cudaStream_t stream)
    : device_(device), settings_(settings), stream_(stream), cublas_(stream), cublaslt_(stream) {}

std::size_t GemmBench::memory_budget() const {
  return operand_memory_budget(std::size_t{512} << 20);  // workspaces, the check's buffers, cuBLAS
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
  std::unique_ptr<TilefuseGemmOp> gemm = make_tilefuse_gemm(p.dtype, p.layout, p.epilogue, settings_.kernel);
  DeviceBuffer workspace;
  std::unique_ptr<TilefuseGemmOp> plain_gemm;  // fused rows: the plain epilogue, timed beside
  DeviceBuffer plain_workspace;
  if (!gemm) {
    tilefuse.measurement.state = MeasurementState::kNotBuilt;
    tilefuse.measurement.message = "not instantiated (built: bf16 none in tn/nn/nt/tt, fp16 none in tn, "
                                   "bf16 bias_gelu_residual in tn, tf32 none in tn)";
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
  if (!settings_.peers) {
    // --peers none: tilefuse alone.
  } else if (p.epilogue == EpilogueKind::kNone) {
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

    // The same kernel with the plain epilogue on the same operands, timed in the same mirrored run:
    // the fused row's cost over it is the fusion's cost, free of the clock drift between two rows.
    GemmProblem plain_problem = p;
    plain_problem.epilogue = EpilogueKind::kNone;
    plain_gemm = make_tilefuse_gemm(p.dtype, p.layout, EpilogueKind::kNone, settings_.kernel);
    if (plain_gemm && plain_gemm->prepare(plain_problem, pool.sets()).empty()) {
      Candidate plain;
      plain.measurement.implementation = "tilefuse, epilogue none";
      plain.measurement.message = "computes A*B only: checked in its own row, not against this one";
      plain.checked_elsewhere = true;
      plain_workspace = DeviceBuffer(plain_gemm->workspace_size());
      plain.op = [&](int set) { plain_gemm->run(set, plain_workspace.get(), stream_); };
      candidates.push_back(std::move(plain));
    }
  }

  // ---- the check: one run each on set 0 with D poisoned, against the float64 sample ----
  SampledReference const reference(p, pool[0], settings_.check_samples, settings_.seed ^ 0x5eed, stream_);
  check_row(row, candidates, reference, [&] { pool.poison_output(0, stream_); }, pool[0].d, p.dtype, stream_);

  // ---- timing ----
  time_candidates(candidates, pool.size(), settings_.timing, gemm_flops(p), stream_);
  Candidate const* const plain_twin = candidates.back().checked_elsewhere ? &candidates.back() : nullptr;
  if (plain_twin != nullptr && candidates[0].op && plain_twin->op) {
    TimingOptions paired = settings_.timing;
    paired.reps = 2 * settings_.timing.reps;
    row.fusion_pairs = time_paired(candidates[0].op, plain_twin->op, pool.size(), paired, stream_);
    row.has_fusion_pairs = true;
  }

  record_measurements(row, candidates);
  return row;
}

}  // namespace tilefuse::bench
