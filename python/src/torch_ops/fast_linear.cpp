// FastLinear: tilefuse.ops.linear's checked calls without autograd, from C++.
#include <ATen/MemoryOverlap.h>

#include "fast_ops.hpp"

namespace tilefuse_torch {

std::optional<at::Tensor> FastLinear::run(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias,
                                          at::Tensor const* residual, at::Tensor const* out) {
  if (x.device().type() != c10::DeviceType::CUDA) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  Signature const key = op_signature(x, w, bias, residual);
  Entry entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto const found = entries_.find(key);
    if (found == entries_.end()) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    entry = found->second;
  }
  auto const apart = [&](at::Tensor const* t) {  // out must not share memory with an input
    return t == nullptr || at::get_overlap_status(*out, *t) == at::MemOverlapStatus::No;
  };
  if (out != nullptr && (!entry.warm->fits_out(*out) || !apart(&x) || !apart(&w) || !apart(bias) || !apart(residual))) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  // a = x as (m, k) and b = w.t() as (k, n) share x's and w's storage (Python remembered only such calls)
  return entry.warm->call(x, w, epilogue_tensors(bias, residual), out).view(entry.out_shape);
}

py::object FastLinear::call(py::handle x, py::handle w, py::handle bias, py::handle residual, py::handle out) {
  at::Tensor const* t[4];
  if (!unpack(x, w, bias, residual, t)) return py::none();
  at::Tensor const* into = nullptr;
  if (!out.is_none()) {
    if (!plain(out)) return py::none();
    into = &THPVariable_Unpack(out.ptr());
  }
  if (records_grad({t[0], t[1], t[2], t[3]})) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return py::none();  // autograd: the Python op
  }
  std::optional<at::Tensor> y = run(*t[0], *t[1], t[2], t[3], into);
  return y ? wrap(std::move(*y)) : py::none();
}

bool FastLinear::remember(at::Tensor const& x, at::Tensor const& w, std::optional<at::Tensor> const& bias,
                          std::optional<at::Tensor> const& residual, std::shared_ptr<WarmCall> warm) {
  Signature const key = op_signature(x, w, bias ? &*bias : nullptr, residual ? &*residual : nullptr);
  if (key.full()) return false;
  std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = w.size(0);
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() >= kLimit) return false;
  entries_[key] = Entry{std::move(warm), std::move(shape)};
  return true;
}

py::dict FastLinear::stats() const {
  py::dict d;
  d["hits"] = hits_.load();
  d["misses"] = misses_.load();
  return d;
}

}  // namespace tilefuse_torch
