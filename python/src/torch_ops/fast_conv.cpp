// tilefuse._torch_ops: the warm path of tilefuse.nn.Conv2d / tilefuse.ops.conv2d in C++ against libtorch.
// FastConv(x, weight, bias, residual) looks the call's signature up among the calls Python checked and
// planned (remember); a hit allocates, launches and, where autograd records the call, attaches a C++
// backward node whose dgrad and wgrad are warm calls too. A miss returns None and Python takes the call.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "warm_call.hpp"

namespace py = pybind11;
using namespace tilefuse_torch;

namespace {

// One checked forward signature of a FastConv: its warm call and, once a backward ran (activation "none"),
// the grad's signature and the dgrad's and wgrad's warm calls.
struct Entry {
  std::shared_ptr<WarmCall> forward;
  int arguments = 0;  // bias, residual present: the epilogue's tensors, in that order
  bool has_grads = false;
  Signature grad;
  Dgrad dgrad;
  std::shared_ptr<WarmCall> wgrad;
};

class FastConv;

// A torch.Tensor or Parameter itself (subclasses keep their own dispatch: the Python path).
bool plain(py::handle h) {
  static PyObject* const parameter = py::object(py::module_::import("torch.nn").attr("Parameter")).release().ptr();
  PyTypeObject* const type = Py_TYPE(h.ptr());
  return type == reinterpret_cast<PyTypeObject*>(THPVariableClass) || type == reinterpret_cast<PyTypeObject*>(parameter);
}

// What op_common.eager_path refuses, and autocast (whose cast the Python op makes).
bool transformed() {
  return c10::impl::TorchDispatchModeTLS::stack_len() > 0 ||
         c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
         at::autocast::is_autocast_enabled(at::kCUDA);
}

// The autograd node of a fast forward: grad_x by the dgrad, grad_w by the wgrad, grad_bias a sum, grad_residual
// grad_y (activation "none": grad_z is grad_y). A grad_y of another signature goes to Python (fallback).
struct ConvFunction : torch::autograd::Function<ConvFunction> {
  // bias and residual are optional (an absent one is no input of the node; the edges of those present follow
  // x's and w's in order).
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor const& x, at::Tensor const& w,
                            std::optional<at::Tensor> const& bias, std::optional<at::Tensor> const& residual,
                            std::int64_t entry, std::int64_t owner);
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads);
};

class FastConv {
 public:
  static constexpr std::size_t kLimit = 4096;

  FastConv(std::string activation, py::object fallback) : activation_(std::move(activation)), fallback_(std::move(fallback)) {}

  // The call's output, or None where Python must take it.
  py::object call(py::handle x, py::handle w, py::handle bias, py::handle residual) {
    at::Tensor const* tensors[4] = {nullptr, nullptr, nullptr, nullptr};
    py::handle const handles[4] = {x, w, bias, residual};
    for (int i = 0; i < 4; ++i) {
      if (handles[i].is_none() && i >= 2) continue;
      if (!plain(handles[i])) return py::none();
      tensors[i] = &THPVariable_Unpack(handles[i].ptr());
    }
    if (transformed()) return py::none();
    Entry const* e = find(*tensors[0], *tensors[1], tensors[2], tensors[3]);
    if (e == nullptr) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return py::none();
    }
    at::Tensor const none;
    at::Tensor const& b = tensors[2] ? *tensors[2] : none;
    at::Tensor const& r = tensors[3] ? *tensors[3] : none;
    bool const record = torch::autograd::GradMode::is_enabled() &&
                        (tensors[0]->requires_grad() || tensors[1]->requires_grad() || (b.defined() && b.requires_grad()) ||
                         (r.defined() && r.requires_grad()));
    at::Tensor y;
    if (!record) {
      y = e->forward->call(*tensors[0], *tensors[1], arguments(b, r));
    } else {
      if (activation_ != "none") {  // the Python op's backward recomputes or masks
        misses_.fetch_add(1, std::memory_order_relaxed);
        return py::none();
      }
      y = ConvFunction::apply(*tensors[0], *tensors[1], tensors[2] ? std::optional<at::Tensor>(b) : std::nullopt,
                              tensors[3] ? std::optional<at::Tensor>(r) : std::nullopt,
                              reinterpret_cast<std::int64_t>(e), reinterpret_cast<std::int64_t>(this));
    }
    forwards_.fetch_add(1, std::memory_order_relaxed);
    return py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(y)));
  }

  // How many calls this path took (forwards, backwards by warm calls, backwards through Python) and left to
  // Python (misses: no entry for the signature, or autograd with an activation).
  py::dict stats() const {
    py::dict d;
    d["forwards"] = forwards_.load();
    d["misses"] = misses_.load();
    d["backwards"] = backwards_.load();
    d["backward_fallbacks"] = fallbacks_.load();
    return d;
  }

  // Python's first call of this signature checked and planned it: later ones go to `forward` here. Returns
  // the entry's handle (for remember_grads), or 0 when the table is full.
  std::int64_t remember(at::Tensor const& x, at::Tensor const& w, std::optional<at::Tensor> const& bias,
                        std::optional<at::Tensor> const& residual, std::shared_ptr<WarmCall> forward) {
    Signature key = signature(x, w, bias ? &*bias : nullptr, residual ? &*residual : nullptr);
    if (key.full()) return 0;
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(key);
    if (found == entries_.end()) {
      if (entries_.size() >= kLimit) return 0;
      found = entries_.emplace(key, std::make_unique<Entry>()).first;
    }
    found->second->forward = std::move(forward);
    found->second->arguments = (bias ? 1 : 0) + (residual ? 1 : 0);
    return reinterpret_cast<std::int64_t>(found->second.get());
  }

  py::object const& fallback() const { return fallback_; }

 private:
  static Signature signature(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias, at::Tensor const* residual) {
    Signature s;
    s.add(x);
    s.add(w);
    s.add(bias ? *bias : at::Tensor());
    s.add(residual ? *residual : at::Tensor());
    return s;
  }

  Entry const* find(at::Tensor const& x, at::Tensor const& w, at::Tensor const* bias, at::Tensor const* residual) {
    if (x.device().type() != c10::DeviceType::CUDA) return nullptr;
    Signature const key = signature(x, w, bias, residual);
    std::lock_guard<std::mutex> lock(mutex_);
    auto const found = entries_.find(key);
    return found == entries_.end() || !found->second->forward ? nullptr : found->second.get();
  }

  static std::vector<at::Tensor const*> arguments(at::Tensor const& bias, at::Tensor const& residual) {
    std::vector<at::Tensor const*> out;
    if (bias.defined()) out.push_back(&bias);
    if (residual.defined()) out.push_back(&residual);
    return out;
  }

  friend struct ConvFunction;
  std::string activation_;
  std::atomic<std::int64_t> forwards_{0}, misses_{0}, backwards_{0}, fallbacks_{0};
  py::object fallback_;  // fallback(grad_y, x, w, needs_x, needs_w, entry) -> (grad_x, grad_w)
  std::mutex mutex_;
  std::unordered_map<Signature, std::unique_ptr<Entry>, SignatureHash> entries_;  // never erased: nodes point in
};

at::Tensor ConvFunction::forward(torch::autograd::AutogradContext* ctx, at::Tensor const& x, at::Tensor const& w,
                                 std::optional<at::Tensor> const& bias, std::optional<at::Tensor> const& residual,
                                 std::int64_t entry, std::int64_t owner) {
  auto const* e = reinterpret_cast<Entry const*>(entry);
  at::Tensor y = e->forward->call(x, w, FastConv::arguments(bias.value_or(at::Tensor()), residual.value_or(at::Tensor())));
  ctx->save_for_backward({x, w});
  ctx->saved_data["entry"] = entry;
  ctx->saved_data["owner"] = owner;
  ctx->saved_data["bias"] = bias.has_value();
  ctx->saved_data["residual"] = residual.has_value();
  return y;
}

torch::autograd::variable_list ConvFunction::backward(torch::autograd::AutogradContext* ctx,
                                                      torch::autograd::variable_list grads) {
  TORCH_CHECK(!torch::autograd::GradMode::is_enabled(),
              "tilefuse.nn.Conv2d: a backward that builds a graph (create_graph=True, double backward) is not "
              "supported by tilefuse's convolution; use torch.nn.Conv2d for it");
  auto* e = reinterpret_cast<Entry*>(ctx->saved_data["entry"].toInt());
  auto* owner = reinterpret_cast<FastConv*>(ctx->saved_data["owner"].toInt());
  torch::autograd::variable_list const saved = ctx->get_saved_variables();
  at::Tensor const& x = saved[0];
  at::Tensor const& w = saved[1];
  at::Tensor const& grad_y = grads[0];
  if (!grad_y.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  bool const needs_x = ctx->needs_input_grad(0), needs_w = ctx->needs_input_grad(1);
  at::Tensor grad_x, grad_w;
  Signature key;
  key.add(grad_y);
  if (e->has_grads && key == e->grad) {
    owner->backwards_.fetch_add(1, std::memory_order_relaxed);
    if (needs_x) grad_x = e->dgrad.call(grad_y, w);
    if (needs_w) grad_w = e->wgrad->call(grad_y, x, {});
  } else if (needs_x || needs_w) {
    owner->fallbacks_.fetch_add(1, std::memory_order_relaxed);
    py::gil_scoped_acquire gil;
    py::tuple const out = owner->fallback()(grad_y, x, w, needs_x, needs_w, reinterpret_cast<std::int64_t>(e));
    if (needs_x) grad_x = THPVariable_Unpack(out[0].ptr());
    if (needs_w) grad_w = THPVariable_Unpack(out[1].ptr());
  }
  bool const has_bias = ctx->saved_data["bias"].toBool(), has_residual = ctx->saved_data["residual"].toBool();
  at::Tensor grad_bias, grad_residual;
  if (has_bias && ctx->needs_input_grad(2)) grad_bias = grad_y.sum({0, 2, 3});
  if (has_residual && ctx->needs_input_grad(has_bias ? 3 : 2)) grad_residual = grad_y;
  return {grad_x, grad_w, grad_bias, grad_residual, at::Tensor(), at::Tensor()};
}

// `keep` (the Python WarmCall, which owns the PreparedLaunch objects) is kept alive for good: entries are never
// erased, and a node of an autograd graph may point at them.
// The warm calls of one tilefuse.Conv2d or Gemm (their run()): by the signature of a, b, the epilogue's
// argument names (an id Python keeps) and its tensors. A miss returns None: Python's run() takes the call.
class WarmTable {
 public:
  static constexpr std::size_t kLimit = 4096;

  py::object call(py::handle a, py::handle b, std::int64_t names, py::args values) {
    Signature key;
    std::vector<at::Tensor const*> tensors;
    if (!key_of(a, b, names, values, key, tensors)) return py::none();
    std::shared_ptr<WarmCall> warm;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto const found = calls_.find(key);
      if (found == calls_.end()) return py::none();
      warm = found->second;
    }
    at::Tensor y = warm->call(*tensors[0], *tensors[1], {tensors.begin() + 2, tensors.end()});
    return py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(y)));
  }

  bool remember(py::handle a, py::handle b, std::int64_t names, py::args values, std::shared_ptr<WarmCall> warm) {
    Signature key;
    std::vector<at::Tensor const*> tensors;
    if (!key_of(a, b, names, values, key, tensors)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (calls_.size() >= kLimit) return false;
    calls_[key] = std::move(warm);
    return true;
  }

 private:
  static bool key_of(py::handle a, py::handle b, std::int64_t names, py::args const& values, Signature& key,
                     std::vector<at::Tensor const*>& tensors) {
    if (transformed()) return false;
    for (py::handle h : {a, b}) {
      if (!plain(h)) return false;
      tensors.push_back(&THPVariable_Unpack(h.ptr()));
    }
    for (py::handle h : values) {
      if (!plain(h)) return false;
      tensors.push_back(&THPVariable_Unpack(h.ptr()));
    }
    if (tensors[0]->device().type() != c10::DeviceType::CUDA) return false;
    key.add_word(names);
    for (at::Tensor const* t : tensors) key.add(*t);
    return !key.full();
  }

  std::mutex mutex_;
  std::unordered_map<Signature, std::shared_ptr<WarmCall>, SignatureHash> calls_;
};

std::shared_ptr<WarmCall> make_warm_call(int device, std::vector<std::pair<std::uintptr_t, std::vector<int>>> const& launches,
                                         std::vector<std::int64_t> out_sizes, std::string const& out_dtype,
                                         std::int64_t partials_numel, bool zeroed, std::int64_t tickets_offset,
                                         int arguments, py::object keep) {
  keep.inc_ref();
  std::vector<WarmCall::Launch> native;
  for (auto const& [address, slots] : launches) native.push_back({reinterpret_cast<void*>(address), slots});
  return std::make_shared<WarmCall>(device, std::move(native), std::move(out_sizes), scalar_type_named(out_dtype),
                                    partials_numel, zeroed, tickets_offset, arguments);
}

}  // namespace

PYBIND11_MODULE(_torch_ops, m) {
  m.doc() = "tilefuse's warm torch-op calls in C++ against libtorch (the Python path plans the first call)";
  m.def("set_run_prepared_launch", &set_run_prepared_launch, py::arg("address"),
        "Where tilefuse._C's run_prepared_launch is (_C.run_prepared_launch_address).");
  py::class_<WarmCall, std::shared_ptr<WarmCall>>(m, "WarmCall",
                                                  "A checked call's launches (kernel_params.WarmCall), replayed in C++.")
      .def(py::init(&make_warm_call), py::arg("device"), py::arg("launches"), py::arg("out_sizes"),
           py::arg("out_dtype"), py::arg("partials_numel"), py::arg("zeroed"), py::arg("tickets_offset"),
           py::arg("arguments"), py::arg("keep"))
      .def("__call__", [](WarmCall const& self, at::Tensor const& a, at::Tensor const& b, std::vector<at::Tensor> const& args) {
             std::vector<at::Tensor const*> pointers;
             for (at::Tensor const& t : args) pointers.push_back(&t);
             return self.call(a, b, pointers);
           }, py::arg("a"), py::arg("b"), py::arg("arguments"));
  py::class_<PhasedDgrad, std::shared_ptr<PhasedDgrad>>(m, "PhasedDgrad", "A strided dgrad by phases, in C++.")
      .def(py::init([](std::vector<std::int64_t> out_size, std::vector<std::int64_t> filter_size, std::int64_t sh,
                       std::int64_t sw, bool zero_fill, at::Tensor index, py::list phases) {
             std::vector<PhasedDgrad::Phase> list;
             for (py::handle p : phases) {
               py::tuple const t = py::cast<py::tuple>(p);
               list.push_back({py::cast<std::shared_ptr<WarmCall>>(t[0]), py::cast<std::int64_t>(t[1]),
                               py::cast<std::int64_t>(t[2]), py::cast<std::int64_t>(t[3]), py::cast<std::int64_t>(t[4]),
                               py::cast<std::int64_t>(t[5]), py::cast<std::int64_t>(t[6]), py::cast<std::int64_t>(t[7]),
                               py::cast<std::int64_t>(t[8]), py::cast<std::int64_t>(t[9])});
             }
             return std::make_shared<PhasedDgrad>(std::move(out_size), std::move(filter_size), sh, sw, zero_fill,
                                                  std::move(index), std::move(list));
           }), py::arg("out_size"), py::arg("filter_size"), py::arg("stride_h"), py::arg("stride_w"),
           py::arg("zero_fill"), py::arg("index"), py::arg("phases"))
      .def("__call__", &PhasedDgrad::call, py::arg("dy"), py::arg("w"));
  py::class_<WarmTable>(m, "WarmTable", "The warm calls of one tilefuse.Conv2d or Gemm, by signature.")
      .def(py::init<>())
      .def("__call__", &WarmTable::call, py::arg("a"), py::arg("b"), py::arg("names"))
      .def("remember", &WarmTable::remember, py::arg("a"), py::arg("b"), py::arg("names"), py::arg("warm"));
  py::class_<FastConv>(m, "FastConv", "The warm path of one conv op configuration (stride, padding, ...).")
      .def(py::init<std::string, py::object>(), py::arg("activation"), py::arg("fallback"))
      .def("__call__", &FastConv::call, py::arg("x"), py::arg("weight"), py::arg("bias").none(true),
           py::arg("residual").none(true))
      .def("stats", &FastConv::stats)
      .def("remember", &FastConv::remember, py::arg("x"), py::arg("weight"), py::arg("bias").none(true),
           py::arg("residual").none(true), py::arg("forward"))
      .def_static("remember_grads", [](std::int64_t entry, at::Tensor const& grad_y, py::object dgrad, std::shared_ptr<WarmCall> wgrad) {
             auto* e = reinterpret_cast<Entry*>(entry);
             Dgrad d;
             if (py::isinstance<WarmCall>(dgrad)) d.direct = py::cast<std::shared_ptr<WarmCall>>(dgrad);
             else d.phased = py::cast<std::shared_ptr<PhasedDgrad>>(dgrad);
             Signature key;
             key.add(grad_y);
             e->dgrad = std::move(d);
             e->wgrad = std::move(wgrad);
             e->grad = key;
             e->has_grads = true;
           }, py::arg("entry"), py::arg("grad_y"), py::arg("dgrad"), py::arg("wgrad"),
           "The dgrad and wgrad warm calls a backward of this entry takes for grad_y's signature.");
}
