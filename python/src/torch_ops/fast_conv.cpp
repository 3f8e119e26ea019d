// FastConv: tilefuse.nn.Conv2d's and tilefuse.ops.conv2d's checked calls from C++, with a C++ autograd node
// whose dgrad and wgrad are warm calls too.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "fast_ops.hpp"

namespace tilefuse_torch {

Signature op_signature(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias, at::Tensor const* residual) {
  Signature s;
  s.add(x);
  s.add(w);
  s.add(bias ? *bias : at::Tensor());
  s.add(residual ? *residual : at::Tensor());
  return s;
}

// The node of a fast forward under autograd: grad_x by the dgrad, grad_w by the wgrad, grad_bias a sum,
// grad_residual grad_y (grad_z is grad_y: no activation, the residual added after it). bias and residual are
// optional: an absent one is no input of the node, and the edges of those present follow x's and w's.
struct ConvFunction : torch::autograd::Function<ConvFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor const& x, at::Tensor const& w,
                            std::optional<at::Tensor> const& bias, std::optional<at::Tensor> const& residual,
                            std::int64_t entry, std::int64_t owner) {
    auto const* e = reinterpret_cast<ConvEntry const*>(entry);
    at::Tensor y = e->forward->call(x, w, epilogue_tensors(bias ? &*bias : nullptr, residual ? &*residual : nullptr));
    ctx->save_for_backward({x, w});
    ctx->saved_data["entry"] = entry;
    ctx->saved_data["owner"] = owner;
    ctx->saved_data["bias"] = bias.has_value();
    ctx->saved_data["residual"] = residual.has_value();
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(!torch::autograd::GradMode::is_enabled(),
                "tilefuse.nn.Conv2d: a backward that builds a graph (create_graph=True, double backward) is not "
                "supported by tilefuse's convolution; use torch.nn.Conv2d for it");
    torch::autograd::variable_list out(6);
    at::Tensor const& grad_y = grads[0];
    if (!grad_y.defined()) return out;
    auto* e = reinterpret_cast<ConvEntry*>(ctx->saved_data["entry"].toInt());
    auto* owner = reinterpret_cast<FastConv*>(ctx->saved_data["owner"].toInt());
    torch::autograd::variable_list const saved = ctx->get_saved_variables();
    at::Tensor const& x = saved[0];
    at::Tensor const& w = saved[1];
    bool const needs_x = ctx->needs_input_grad(0), needs_w = ctx->needs_input_grad(1);
    Signature key;
    key.add(grad_y);
    if (e->has_grads.load(std::memory_order_acquire) && key == e->grad) {
      owner->backwards_.fetch_add(1, std::memory_order_relaxed);
      if (needs_x) out[0] = e->dgrad.call(grad_y, w);
      if (needs_w) out[1] = e->wgrad->call(grad_y, x, {});
    } else if (needs_x || needs_w) {
      owner->fallbacks_.fetch_add(1, std::memory_order_relaxed);
      py::gil_scoped_acquire gil;
      py::tuple const result = owner->backward_fallback_(grad_y, x, w, needs_x, needs_w, reinterpret_cast<std::int64_t>(e));
      if (needs_x) out[0] = THPVariable_Unpack(result[0].ptr());
      if (needs_w) out[1] = THPVariable_Unpack(result[1].ptr());
    }
    bool const has_bias = ctx->saved_data["bias"].toBool(), has_residual = ctx->saved_data["residual"].toBool();
    if (has_bias && ctx->needs_input_grad(2)) out[2] = grad_y.sum({0, 2, 3});
    if (has_residual && ctx->needs_input_grad(has_bias ? 3 : 2)) out[3] = grad_y;
    return out;
  }
};

ConvEntry const* FastConv::find(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias,
                                at::Tensor const* residual) {
  if (x.device().type() != c10::DeviceType::CUDA) return nullptr;
  Signature const key = op_signature(x, w, bias, residual);
  std::lock_guard<std::mutex> lock(mutex_);
  auto const found = entries_.find(key);
  return found == entries_.end() || !found->second->forward ? nullptr : found->second.get();
}

py::object FastConv::call(py::handle x, py::handle w, py::handle bias, py::handle residual) {
  at::Tensor const* t[4];
  if (!unpack(x, w, bias, residual, t)) return py::none();
  ConvEntry const* e = find(*t[0], *t[1], t[2], t[3]);
  bool const record = e != nullptr && records_grad({t[0], t[1], t[2], t[3]});
  if (e == nullptr || (record && !trainable_)) {  // the Python op's backward recomputes or masks
    misses_.fetch_add(1, std::memory_order_relaxed);
    return py::none();
  }
  forwards_.fetch_add(1, std::memory_order_relaxed);
  if (!record) return wrap(e->forward->call(*t[0], *t[1], epilogue_tensors(t[2], t[3])));
  return wrap(ConvFunction::apply(*t[0], *t[1], t[2] ? std::optional<at::Tensor>(*t[2]) : std::nullopt,
                                  t[3] ? std::optional<at::Tensor>(*t[3]) : std::nullopt,
                                  reinterpret_cast<std::int64_t>(e), reinterpret_cast<std::int64_t>(this)));
}

std::optional<at::Tensor> FastConv::run(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias,
                                        at::Tensor const* residual) {
  ConvEntry const* e = find(x, w, bias, residual);
  if (e == nullptr) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  forwards_.fetch_add(1, std::memory_order_relaxed);
  return e->forward->call(x, w, epilogue_tensors(bias, residual));
}

std::int64_t FastConv::remember(at::Tensor const& x, at::Tensor const& w, std::optional<at::Tensor> const& bias,
                                std::optional<at::Tensor> const& residual, std::shared_ptr<WarmCall> forward) {
  Signature const key = op_signature(x, w, bias ? &*bias : nullptr, residual ? &*residual : nullptr);
  if (key.full()) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = entries_.find(key);
  if (found == entries_.end()) {
    if (entries_.size() >= kLimit) return 0;
    found = entries_.emplace(key, std::make_unique<ConvEntry>()).first;
  }
  // Set once: a call on another thread may be running the entry's warm call (the same launches either way).
  if (!found->second->forward) found->second->forward = std::move(forward);
  return reinterpret_cast<std::int64_t>(found->second.get());
}

void FastConv::remember_grads(std::int64_t entry, at::Tensor const& grad_y, Dgrad dgrad, std::shared_ptr<WarmCall> wgrad) {
  auto* e = reinterpret_cast<ConvEntry*>(entry);
  if (e->has_grads.load(std::memory_order_acquire)) return;  // set once: a running backward may read them
  e->grad = Signature();
  e->grad.add(grad_y);
  e->dgrad = std::move(dgrad);
  e->wgrad = std::move(wgrad);
  e->has_grads.store(true, std::memory_order_release);
}

py::dict FastConv::stats() const {
  py::dict d;
  d["forwards"] = forwards_.load();
  d["misses"] = misses_.load();
  d["backwards"] = backwards_.load();
  d["backward_fallbacks"] = fallbacks_.load();
  return d;
}

}  // namespace tilefuse_torch
