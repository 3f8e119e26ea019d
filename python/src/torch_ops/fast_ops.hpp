// The op fast paths of tilefuse._torch_ops: FastConv (tilefuse.ops.conv2d, tilefuse.nn.Conv2d, the frozen graphs'
// conv2d_inference) and FastLinear (tilefuse.ops.linear without autograd, linear_inference). Each holds the
// calls Python checked and planned, by signature; a miss hands the call back to Python.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common.hpp"
#include "warm_call.hpp"

namespace tilefuse_torch {

// One checked forward signature of a FastConv: its warm call and, once a backward ran (a trainable FastConv),
// the grad's signature and the dgrad's and wgrad's warm calls.
struct ConvEntry {
  std::shared_ptr<WarmCall> forward;
  std::atomic<bool> has_grads{false};
  Signature grad;
  Dgrad dgrad;
  std::shared_ptr<WarmCall> wgrad;
};

class FastConv {
 public:
  static constexpr std::size_t kLimit = 4096;

  // trainable: autograd through it takes the C++ node (activation "none", the residual after it: grad_z is
  // grad_y); other forms under autograd go to Python. backward_fallback(grad_y, x, w, needs_x, needs_w, entry)
  // -> (grad_x, grad_w) runs the node's backward through Python where the entry has no warm calls for grad_y.
  FastConv(bool trainable, py::object backward_fallback)
      : trainable_(trainable), backward_fallback_(std::move(backward_fallback)) {}

  py::object call(py::handle x, py::handle w, py::handle bias, py::handle residual);  // the output, or None
  std::optional<at::Tensor> run(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias,
                                at::Tensor const* residual);  // without autograd; nullopt on a miss
  std::int64_t remember(at::Tensor const& x, at::Tensor const& w, std::optional<at::Tensor> const& bias,
                        std::optional<at::Tensor> const& residual, std::shared_ptr<WarmCall> forward);
  static void remember_grads(std::int64_t entry, at::Tensor const& grad_y, Dgrad dgrad, std::shared_ptr<WarmCall> wgrad);
  py::dict stats() const;

 private:
  friend struct ConvFunction;
  ConvEntry const* find(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias, at::Tensor const* residual);

  bool trainable_;
  py::object backward_fallback_;
  std::atomic<std::int64_t> forwards_{0}, misses_{0}, backwards_{0}, fallbacks_{0};
  std::mutex mutex_;
  std::unordered_map<Signature, std::unique_ptr<ConvEntry>, SignatureHash> entries_;  // never erased: nodes point in
};

// tilefuse.ops.linear's checked calls without autograd: x (..., k), weight (n, k) read in place, bias (n,),
// residual y's shape; y (..., n).
class FastLinear {
 public:
  static constexpr std::size_t kLimit = 4096;

  // The output (stored into `out` where one is given: a (rows, n) tensor, e.g. a block of rows of a larger
  // one, sharing no memory with the inputs), or None where Python must take the call (also an `out` that
  // does not fit: Python says why).
  py::object call(py::handle x, py::handle w, py::handle bias, py::handle residual, py::handle out);
  std::optional<at::Tensor> run(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias,
                                at::Tensor const* residual, at::Tensor const* out = nullptr);
  bool remember(at::Tensor const& x, at::Tensor const& w, std::optional<at::Tensor> const& bias,
                std::optional<at::Tensor> const& residual, std::shared_ptr<WarmCall> warm);
  py::dict stats() const;

 private:
  struct Entry {
    std::shared_ptr<WarmCall> warm;
    std::vector<std::int64_t> out_shape;
  };
  std::atomic<std::int64_t> hits_{0}, misses_{0};
  std::mutex mutex_;
  std::unordered_map<Signature, Entry, SignatureHash> entries_;
};

// The signature of an op's four tensors (absent ones included as such).
Signature op_signature(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias, at::Tensor const* residual);

}  // namespace tilefuse_torch
