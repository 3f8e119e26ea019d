// The argument sets a tilefuse device operation runs in a benchmark row, one per rotating operand set, checked
// once before timing: shared by the GEMM and conv ops (gemm/tilefuse_op_impl.cuh, conv/conv_tilefuse_impl.cuh).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include <tilefuse/core/status.hpp>

#include "cuda_check.hpp"

namespace tilefuse::bench {

// Op: a device operation with Arguments, can_implement, workspace_size, run and describe.
template <class Op>
class PreparedSets {
 public:
  // make(set) gives each operand set's Arguments; returns "" when Op can run every one, else its refusal.
  template <class Sets, class Make>
  std::string prepare(Sets const& sets, Make&& make) {
    args_.clear();
    workspace_ = 0;
    for (auto const& set : sets) {
      typename Op::Arguments a = make(set);
      Status const status = Op::can_implement(a);
      if (!status.ok()) {
        args_.clear();
        return status.to_string();
      }
      workspace_ = std::max(workspace_, Op::workspace_size(a));
      args_.push_back(std::move(a));
    }
    describe_ = args_.empty() ? std::string() : Op::describe(args_.front());
    return {};
  }

  std::size_t workspace_size() const { return workspace_; }
  std::string describe() const { return describe_; }

  // what: the operation's name in the error a failed run throws.
  void run(int set, void* workspace, cudaStream_t stream, char const* what) const {
    Status const status = Op::run(args_.at(static_cast<std::size_t>(set)), workspace, stream);
    if (!status.ok()) throw BenchError(std::string(what) + ": " + status.to_string());
  }

 private:
  std::vector<typename Op::Arguments> args_;
  std::size_t workspace_ = 0;
  std::string describe_;
};

}  // namespace tilefuse::bench
