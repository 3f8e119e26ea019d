// One conv2d benchmark row (see conv_bench.hpp).
#include "conv_bench.hpp"

#include <algorithm>
#include <memory>

#include "candidates.hpp"
#include "conv_elementwise.hpp"
#include "conv_operands.hpp"
#include "conv_reference.hpp"
#include "conv_tilefuse.hpp"

namespace tilefuse::bench {
namespace {

// cuDNN's algorithm search may use this much workspace (algorithms that want more are not considered).
constexpr std::size_t kSearchWorkspace = std::size_t{512} << 20;

Candidate refused_candidate(std::string name, MeasurementState state, std::string why) {
  Candidate c;
  c.measurement.implementation = std::move(name);
  c.measurement.state = state;
  c.measurement.message = std::move(why);
  return c;
}

}  // namespace

ConvBench::ConvBench(DeviceInfo const& device, BenchSettings const& settings, cudaStream_t stream)
    : device_(device), settings_(settings), stream_(stream), cudnn_(stream) {}

std::size_t ConvBench::memory_budget() const {
  // cuDNN's search workspace, its chosen workspaces, tilefuse's split-K workspace, the check's buffers
  return operand_memory_budget(kSearchWorkspace + (std::size_t{1} << 30));
}

ConvResultRow ConvBench::run(ConvProblem const& p) {
  ConvResultRow row;
  row.problem = p;
  ConvOperandPool pool(p, device_.l2_bytes, memory_budget(), settings_.seed, stream_);
  row.operand_sets = pool.size();
  row.bytes_per_set = pool.bytes_per_set();
  OutputMatrix const out = output_matrix(p);

  // ---- tilefuse ----
  std::vector<Candidate> candidates;
  std::unique_ptr<TilefuseConvOp> conv = make_tilefuse_conv(p.dtype, p.shape.mode, p.epilogue);
  DeviceBuffer workspace;
  if (!conv) {
    candidates.push_back(refused_candidate("tilefuse", MeasurementState::kNotBuilt,
                                           tilefuse_conv_not_built_reason(p.shape.mode, p.epilogue)));
  } else if (std::string why = conv->prepare(p, pool.sets()); !why.empty()) {
    candidates.push_back(refused_candidate("tilefuse", MeasurementState::kRefused, why));
  } else {
    workspace = DeviceBuffer(conv->workspace_size());
    row.describe = conv->describe();
    Candidate c;
    c.measurement.implementation = "tilefuse";
    c.op = [&](int set) { conv->run(set, workspace.get(), stream_); };
    candidates.push_back(std::move(c));
  }

  // ---- cuDNN: the algorithm search runs on set 0 ----
  std::string const cudnn_refused =
      cudnn_.prepare(p, pool[0], std::min(kSearchWorkspace, memory_budget()));
  auto peer = [&](std::string name, std::string const& refused, std::string describe, auto body) {
    if (!refused.empty()) {
      candidates.push_back(refused_candidate(std::move(name), MeasurementState::kRefused, refused));
      row.peer_describe.emplace_back();
      return;
    }
    Candidate c;
    c.measurement.implementation = std::move(name);
    c.op = [&pool, body](int set) { body(pool[set]); };
    candidates.push_back(std::move(c));
    row.peer_describe.push_back(std::move(describe));
  };
  if (p.epilogue == ConvEpilogue::kNone) {
    peer("cuDNN", cudnn_refused, cudnn_.describe(), [this](ConvOperands const& ops) { cudnn_.run(ops); });
  } else {
    std::string const fused_refused = cudnn_refused.empty() ? cudnn_.prepare_fused(pool[0]) : cudnn_refused;
    peer("cuDNN fused", fused_refused, cudnn_.describe_fused(),
         [this](ConvOperands const& ops) { cudnn_.run_fused(ops); });
    peer("cuDNN + elementwise", cudnn_refused, cudnn_.describe() + ", then bias_residual_relu",
         [this, p, out](ConvOperands const& ops) {
           cudnn_.run(ops);
           bias_residual_relu_inplace(ops.out, ops.bias, ops.residual, p.dtype, out.rows, out.cols, stream_);
         });
  }

  // ---- the check: one run each on set 0 with the output poisoned, against the float64 sample ----
  SampledReference const reference =
      conv_sampled_reference(p, pool[0], settings_.check_samples, settings_.seed ^ 0x5eed, stream_);
  check_row(row, candidates, reference, [&] { pool.poison_output(0, stream_); }, pool[0].out, p.dtype, stream_);

  // ---- timing ----
  time_candidates(candidates, pool.size(), settings_.timing, conv_flops(p), stream_);

  record_measurements(row, candidates);
  return row;
}

}  // namespace tilefuse::bench
