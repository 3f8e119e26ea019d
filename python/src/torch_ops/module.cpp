// tilefuse._torch_ops: the warm calls of tilefuse's torch ops and run() methods in C++ against libtorch
// (docs/python.md, "The C++ warm path"). Python checks, plans and makes the first call of every signature
// and hands its launches over (tilefuse.fast_path); later calls of the signature never enter Python:
//   FastConv    tilefuse.nn.Conv2d / ops.conv2d, with a C++ autograd node (warm dgrad and wgrad)
//   FastLinear  tilefuse.ops.linear without autograd
//   WarmTable   tilefuse.Conv2d.run / Gemm.run
// and the ops torch.compile's graphs call (tilefuse::conv2d, conv2d_add_act, conv2d_dgrad, conv2d_wgrad, and the
// frozen graphs' conv2d_inference, linear_inference) get C++ CUDA kernels that take the same fast paths and
// call their Python implementation on a miss.
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/library.h>

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "fast_ops.hpp"

using namespace tilefuse_torch;

namespace {

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
    return wrap(warm->call(*tensors[0], *tensors[1], {tensors.begin() + 2, tensors.end()}));
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

// A dgrad's warm call from Python: a WarmCall, or a PhasedDgrad.
Dgrad dgrad_of(py::handle native) {
  Dgrad d;
  if (py::isinstance<WarmCall>(native)) d.direct = py::cast<std::shared_ptr<WarmCall>>(native);
  else d.phased = py::cast<std::shared_ptr<PhasedDgrad>>(native);
  return d;
}

// `keep` (the Python WarmCall, which owns the PreparedLaunch objects, with the packing launches of a copied
// call) is kept alive for good: entries are never erased, and a node of an autograd graph may point at them.
std::shared_ptr<WarmCall> make_warm_call(int device, std::vector<std::pair<std::uintptr_t, std::vector<int>>> const& launches,
                                         std::vector<std::int64_t> out_sizes, std::string const& out_dtype,
                                         std::int64_t partials_numel, bool zeroed, std::int64_t tickets_offset,
                                         int arguments, py::object keep,
                                         std::vector<std::tuple<std::uintptr_t, int, std::int64_t, std::string>> const& packs) {
  keep.inc_ref();
  std::vector<WarmCall::Launch> native;
  for (auto const& [address, slots] : launches) native.push_back({reinterpret_cast<void*>(address), slots});
  std::vector<WarmCall::Pack> copies;
  for (auto const& [address, operand, numel, dtype] : packs) {
    copies.push_back({reinterpret_cast<void*>(address), operand, numel, scalar_type_named(dtype)});
  }
  return std::make_shared<WarmCall>(device, std::move(native), std::move(out_sizes), scalar_type_named(out_dtype),
                                    partials_numel, zeroed, tickets_offset, arguments, std::move(copies));
}

// ---- the frozen graphs' ops: C++ CUDA kernels over the fast paths ----

using ConvKey = std::tuple<std::array<std::int64_t, 6>, std::string, bool>;  // geometry, activation, residual first

struct InferenceOps {
  std::mutex mutex;
  std::map<ConvKey, FastConv*> convs;        // the FastConv objects Python made (it keeps them alive)
  std::map<std::string, FastLinear*> linears;
  py::object conv_python, linear_python;     // the ops' Python implementations, for a miss
};

InferenceOps& inference_ops() {
  static auto* ops = new InferenceOps();  // never destroyed: kernels may run until the process ends
  return *ops;
}

// The library every C++ CUDA kernel of a tilefuse op is registered in (never destroyed, as the kernels' state).
torch::Library& cuda_library() {
  static auto* library = new torch::Library(torch::Library::IMPL, "tilefuse", c10::DispatchKey::CUDA, __FILE__, __LINE__);
  return *library;
}

std::optional<ConvKey> conv_key(c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                std::string activation, bool residual_first) {
  if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2) return std::nullopt;
  return ConvKey{{stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1]}, std::move(activation),
                 residual_first};
}

// The FastConv Python registered for these arguments (register_inference_conv), or null.
FastConv* inference_conv(c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                         c10::string_view activation, bool add_act) {
  auto const key = conv_key(stride, padding, dilation, std::string(activation), add_act);
  if (!key) return nullptr;
  InferenceOps& ops = inference_ops();
  std::lock_guard<std::mutex> lock(ops.mutex);
  auto const found = ops.convs.find(*key);
  return found == ops.convs.end() ? nullptr : found->second;
}

at::Tensor conv2d_inference_cuda(at::Tensor const& x, at::Tensor const& weight, std::optional<at::Tensor> const& bias,
                                 std::optional<at::Tensor> const& residual, c10::IntArrayRef stride,
                                 c10::IntArrayRef padding, c10::IntArrayRef dilation, c10::string_view activation,
                                 bool residual_first) {
  if (FastConv* fast = inference_conv(stride, padding, dilation, activation, residual_first)) {
    std::optional<at::Tensor> y = fast->run(x, weight, bias ? &*bias : nullptr, residual ? &*residual : nullptr);
    if (y) return std::move(*y);
  }
  py::gil_scoped_acquire gil;
  return inference_ops().conv_python(x, weight, bias, residual, stride.vec(), padding.vec(), dilation.vec(), std::string(activation),
                         residual_first).cast<at::Tensor>();
}

at::Tensor linear_inference_cuda(at::Tensor const& x, at::Tensor const& weight, std::optional<at::Tensor> const& bias,
                                 std::optional<at::Tensor> const& residual, c10::string_view activation) {
  InferenceOps& ops = inference_ops();
  FastLinear* fast = nullptr;
  {
    std::lock_guard<std::mutex> lock(ops.mutex);
    auto const found = ops.linears.find(std::string(activation));
    if (found != ops.linears.end()) fast = found->second;
  }
  if (fast != nullptr) {
    std::optional<at::Tensor> y = fast->run(x, weight, bias ? &*bias : nullptr, residual ? &*residual : nullptr);
    if (y) return std::move(*y);
  }
  py::gil_scoped_acquire gil;
  return ops.linear_python(x, weight, bias, residual, std::string(activation)).cast<at::Tensor>();
}

// ---- the training ops' kernels (what torch.compile's graphs call): tilefuse::conv2d, conv2d_add_act, and the
// backward ops conv2d_dgrad / conv2d_wgrad, over the same fast paths; their Python implementations on a miss ----

// The dgrad's and wgrad's warm calls of one geometry, by the signature of their tensors and the size asked for.
struct GradTable {
  std::mutex mutex;
  std::unordered_map<Signature, Dgrad, SignatureHash> dgrads;
  std::unordered_map<Signature, std::shared_ptr<WarmCall>, SignatureHash> wgrads;
};

struct TrainingOps {
  std::mutex mutex;
  std::map<std::array<std::int64_t, 6>, std::unique_ptr<GradTable>> grads;
  py::object conv_python, add_act_python, dgrad_python, wgrad_python;
  std::atomic<std::int64_t> dgrad_hits{0}, wgrad_hits{0}, fallbacks{0};  // what the backward kernels took
};

TrainingOps& training_ops() {
  static auto* ops = new TrainingOps();  // never destroyed, as inference_ops()
  return *ops;
}

GradTable* grad_table(c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool make) {
  auto const key = conv_key(stride, padding, dilation, "", false);
  if (!key) return nullptr;
  TrainingOps& ops = training_ops();
  std::lock_guard<std::mutex> lock(ops.mutex);
  auto found = ops.grads.find(std::get<0>(*key));
  if (found == ops.grads.end()) {
    if (!make) return nullptr;
    found = ops.grads.emplace(std::get<0>(*key), std::make_unique<GradTable>()).first;
  }
  return found->second.get();
}

Signature grad_signature(at::Tensor const& a, at::Tensor const& b, c10::IntArrayRef size) {
  Signature s;
  s.add(a);
  s.add(b);
  for (std::int64_t v : size) s.add_word(v);
  return s;
}


at::Tensor conv2d_cuda(at::Tensor const& x, at::Tensor const& weight, std::optional<at::Tensor> const& bias,
                       std::optional<at::Tensor> const& residual, c10::IntArrayRef stride, c10::IntArrayRef padding,
                       c10::IntArrayRef dilation, c10::string_view activation, c10::string_view layout) {
  if (layout == "require") {
    if (FastConv* fast = inference_conv(stride, padding, dilation, activation, false)) {
      std::optional<at::Tensor> y = fast->run(x, weight, bias ? &*bias : nullptr, residual ? &*residual : nullptr);
      if (y) return std::move(*y);
    }
  }
  py::gil_scoped_acquire gil;
  return training_ops().conv_python(x, weight, bias, residual, stride.vec(), padding.vec(), dilation.vec(),
                                    std::string(activation), std::string(layout)).cast<at::Tensor>();
}

at::Tensor conv2d_add_act_cuda(at::Tensor const& x, at::Tensor const& weight, std::optional<at::Tensor> const& bias,
                               at::Tensor const& residual, c10::IntArrayRef stride, c10::IntArrayRef padding,
                               c10::IntArrayRef dilation, c10::string_view activation) {
  if (FastConv* fast = inference_conv(stride, padding, dilation, activation, true)) {
    std::optional<at::Tensor> y = fast->run(x, weight, bias ? &*bias : nullptr, &residual);
    if (y) return std::move(*y);
  }
  py::gil_scoped_acquire gil;
  return training_ops().add_act_python(x, weight, bias, residual, stride.vec(), padding.vec(), dilation.vec(),
                                       std::string(activation)).cast<at::Tensor>();
}

at::Tensor conv2d_dgrad_cuda(at::Tensor const& grad_y, at::Tensor const& weight, c10::IntArrayRef input_size,
                             c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation) {
  if (GradTable* table = grad_table(stride, padding, dilation, false)) {
    Signature const key = grad_signature(grad_y, weight, input_size);
    Dgrad dgrad;
    {
      std::lock_guard<std::mutex> lock(table->mutex);
      auto const found = table->dgrads.find(key);
      if (found != table->dgrads.end()) dgrad = found->second;
    }
    if (dgrad.direct || dgrad.phased) {
      training_ops().dgrad_hits.fetch_add(1, std::memory_order_relaxed);
      return dgrad.call(grad_y, weight);
    }
  }
  training_ops().fallbacks.fetch_add(1, std::memory_order_relaxed);
  py::gil_scoped_acquire gil;
  return training_ops().dgrad_python(grad_y, weight, input_size.vec(), stride.vec(), padding.vec(), dilation.vec())
      .cast<at::Tensor>();
}

at::Tensor conv2d_wgrad_cuda(at::Tensor const& grad_y, at::Tensor const& x, c10::IntArrayRef weight_size,
                             c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation) {
  if (GradTable* table = grad_table(stride, padding, dilation, false)) {
    Signature const key = grad_signature(grad_y, x, weight_size);
    std::shared_ptr<WarmCall> wgrad;
    {
      std::lock_guard<std::mutex> lock(table->mutex);
      auto const found = table->wgrads.find(key);
      if (found != table->wgrads.end()) wgrad = found->second;
    }
    if (wgrad) {
      training_ops().wgrad_hits.fetch_add(1, std::memory_order_relaxed);
      return wgrad->call(grad_y, x, {});
    }
  }
  training_ops().fallbacks.fetch_add(1, std::memory_order_relaxed);
  py::gil_scoped_acquire gil;
  return training_ops().wgrad_python(grad_y, x, weight_size.vec(), stride.vec(), padding.vec(), dilation.vec())
      .cast<at::Tensor>();
}

void register_training_kernels(py::object conv_python, py::object add_act_python, py::object dgrad_python,
                               py::object wgrad_python) {
  TrainingOps& ops = training_ops();
  ops.conv_python = std::move(conv_python);
  ops.add_act_python = std::move(add_act_python);
  ops.dgrad_python = std::move(dgrad_python);
  ops.wgrad_python = std::move(wgrad_python);
  cuda_library().impl("conv2d", TORCH_FN(conv2d_cuda));
  cuda_library().impl("conv2d_add_act", TORCH_FN(conv2d_add_act_cuda));
  cuda_library().impl("conv2d_dgrad", TORCH_FN(conv2d_dgrad_cuda));
  cuda_library().impl("conv2d_wgrad", TORCH_FN(conv2d_wgrad_cuda));
}

// ---- the Autograd kernels of tilefuse::conv2d and linear: without grad, straight below autograd (what
// torch.library.custom_op's Python autograd kernel does then, at about 20 us of host time); with grad, the op's
// Python autograd formula (an autograd.Function, which AOTAutograd traces with fake tensors) ----

struct AutogradOps {
  py::object conv2d_python, add_act_python, linear_python;  // (args...) -> output, recording the Python formula
};

AutogradOps& autograd_ops() {
  static auto* ops = new AutogradOps();
  return *ops;
}


at::Tensor conv2d_autograd(c10::DispatchKeySet ks, at::Tensor const& x, at::Tensor const& weight,
                           std::optional<at::Tensor> const& bias, std::optional<at::Tensor> const& residual,
                           c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                           c10::string_view activation, c10::string_view layout) {
  if (!records_grad({&x, &weight, bias ? &*bias : nullptr, residual ? &*residual : nullptr})) {
    static auto const op = c10::Dispatcher::singleton().findSchemaOrThrow("tilefuse::conv2d", "")
        .typed<at::Tensor(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&,
                          std::optional<at::Tensor> const&, c10::IntArrayRef, c10::IntArrayRef, c10::IntArrayRef,
                          c10::string_view, c10::string_view)>();
    at::AutoDispatchBelowAutograd guard;
    return op.redispatch(ks & c10::after_autograd_keyset, x, weight, bias, residual, stride, padding, dilation,
                         activation, layout);
  }
  py::gil_scoped_acquire gil;
  return autograd_ops().conv2d_python(x, weight, bias, residual, stride.vec(), padding.vec(), dilation.vec(),
                                      std::string(activation), std::string(layout)).cast<at::Tensor>();
}

at::Tensor conv2d_add_act_autograd(c10::DispatchKeySet ks, at::Tensor const& x, at::Tensor const& weight,
                                   std::optional<at::Tensor> const& bias, at::Tensor const& residual,
                                   c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                   c10::string_view activation) {
  if (!records_grad({&x, &weight, bias ? &*bias : nullptr, &residual})) {
    static auto const op = c10::Dispatcher::singleton().findSchemaOrThrow("tilefuse::conv2d_add_act", "")
        .typed<at::Tensor(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, at::Tensor const&,
                          c10::IntArrayRef, c10::IntArrayRef, c10::IntArrayRef, c10::string_view)>();
    at::AutoDispatchBelowAutograd guard;
    return op.redispatch(ks & c10::after_autograd_keyset, x, weight, bias, residual, stride, padding, dilation,
                         activation);
  }
  py::gil_scoped_acquire gil;
  return autograd_ops().add_act_python(x, weight, bias, residual, stride.vec(), padding.vec(), dilation.vec(),
                                       std::string(activation)).cast<at::Tensor>();
}

at::Tensor linear_autograd(c10::DispatchKeySet ks, at::Tensor const& x, at::Tensor const& weight,
                           std::optional<at::Tensor> const& bias, std::optional<at::Tensor> const& residual,
                           c10::string_view activation) {
  if (!records_grad({&x, &weight, bias ? &*bias : nullptr, residual ? &*residual : nullptr})) {
    static auto const op = c10::Dispatcher::singleton().findSchemaOrThrow("tilefuse::linear", "")
        .typed<at::Tensor(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&,
                          std::optional<at::Tensor> const&, c10::string_view)>();
    at::AutoDispatchBelowAutograd guard;
    return op.redispatch(ks & c10::after_autograd_keyset, x, weight, bias, residual, activation);
  }
  py::gil_scoped_acquire gil;
  return autograd_ops().linear_python(x, weight, bias, residual, std::string(activation)).cast<at::Tensor>();
}

// Replacing custom_op's Python Autograd kernel is intended: the dispatcher's warning about it is not shown.
struct QuietOverride : c10::WarningHandler {
  void process(c10::Warning const&) override {}
};

torch::Library& autograd_library() {
  static auto* library = new torch::Library(torch::Library::IMPL, "tilefuse", c10::DispatchKey::Autograd, __FILE__, __LINE__);
  return *library;
}

// The C++ Autograd kernels of tilefuse::conv2d and conv2d_add_act (`conv2d`, `add_act`: their formulas, for
// calls with grad).
void register_conv2d_autograd(py::object conv2d, py::object add_act) {
  autograd_ops().conv2d_python = std::move(conv2d);
  autograd_ops().add_act_python = std::move(add_act);
  QuietOverride quiet;
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  autograd_library().impl("conv2d", TORCH_FN(conv2d_autograd));
  autograd_library().impl("conv2d_add_act", TORCH_FN(conv2d_add_act_autograd));
}

// The C++ Autograd kernel of tilefuse::linear (`python`: its formula, for calls with grad).
void register_linear_autograd(py::object python) {
  autograd_ops().linear_python = std::move(python);
  QuietOverride quiet;
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  autograd_library().impl("linear", TORCH_FN(linear_autograd));
}

// tilefuse::linear's CUDA kernel (under its Python autograd kernel): linear_inference's, which it matches.
void register_linear_kernel(py::object linear_python) {
  inference_ops().linear_python = std::move(linear_python);
  cuda_library().impl("linear", TORCH_FN(linear_inference_cuda));
}

void register_inference_kernels(py::object conv_python, py::object linear_python) {
  InferenceOps& ops = inference_ops();
  ops.conv_python = std::move(conv_python);
  ops.linear_python = std::move(linear_python);
  cuda_library().impl("conv2d_inference", TORCH_FN(conv2d_inference_cuda));
  cuda_library().impl("linear_inference", TORCH_FN(linear_inference_cuda));
}

}  // namespace

PYBIND11_MODULE(_torch_ops, m) {
  m.doc() = "tilefuse's warm torch-op and run() calls in C++ against libtorch (Python plans each first call)";
  m.def("set_zero_async", &set_zero_async, py::arg("address"),
        "Where tilefuse._C's zero_async is (_C.zero_async_address).");
  m.def("set_run_prepared_launch", &set_run_prepared_launch, py::arg("address"),
        "Where tilefuse._C's run_prepared_launch is (_C.run_prepared_launch_address).");
  py::class_<WarmCall, std::shared_ptr<WarmCall>>(m, "WarmCall",
                                                  "A checked call's launches (kernel_params.WarmCall), replayed in C++.")
      .def(py::init(&make_warm_call), py::arg("device"), py::arg("launches"), py::arg("out_sizes"),
           py::arg("out_dtype"), py::arg("partials_numel"), py::arg("zeroed"), py::arg("tickets_offset"),
           py::arg("arguments"), py::arg("keep"),
           py::arg("packs") = std::vector<std::tuple<std::uintptr_t, int, std::int64_t, std::string>>{})
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
                               py::cast<std::int64_t>(t[8]), py::cast<std::int64_t>(t[9]), py::cast<bool>(t[10])});
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
      .def(py::init<bool, py::object>(), py::arg("trainable"), py::arg("backward_fallback"))
      .def("__call__", &FastConv::call, py::arg("x"), py::arg("weight"), py::arg("bias").none(true),
           py::arg("residual").none(true))
      .def("stats", &FastConv::stats)
      .def("remember", &FastConv::remember, py::arg("x"), py::arg("weight"), py::arg("bias").none(true),
           py::arg("residual").none(true), py::arg("forward"))
      .def_static("remember_grads", [](std::int64_t entry, at::Tensor const& grad_y, py::object dgrad,
                                       std::shared_ptr<WarmCall> wgrad) {
             FastConv::remember_grads(entry, grad_y, dgrad_of(dgrad), std::move(wgrad));
           }, py::arg("entry"), py::arg("grad_y"), py::arg("dgrad"), py::arg("wgrad"),
           "The dgrad and wgrad warm calls a backward of this entry takes for grad_y's signature.");
  py::class_<FastLinear>(m, "FastLinear", "The warm path of tilefuse.ops.linear with one activation, without autograd.")
      .def(py::init<>())
      .def("__call__", &FastLinear::call, py::arg("x"), py::arg("weight"), py::arg("bias").none(true),
           py::arg("residual").none(true), py::arg("out").none(true) = py::none())
      .def("stats", &FastLinear::stats)
      .def("remember", &FastLinear::remember, py::arg("x"), py::arg("weight"), py::arg("bias").none(true),
           py::arg("residual").none(true), py::arg("warm"));
  m.def("register_inference_conv", [](std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                                      std::vector<std::int64_t> dilation, std::string activation, bool residual_first,
                                      FastConv* fast) {
          auto const key = conv_key(stride, padding, dilation, std::move(activation), residual_first);
          if (!key) throw std::invalid_argument("tilefuse._torch_ops: stride, padding and dilation are pairs");
          std::lock_guard<std::mutex> lock(inference_ops().mutex);
          inference_ops().convs[*key] = fast;
        }, py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("activation"),
        py::arg("residual_first"), py::arg("fast"), "The FastConv conv2d_inference's kernel takes for these arguments.");
  m.def("register_inference_linear", [](std::string activation, FastLinear* fast) {
          std::lock_guard<std::mutex> lock(inference_ops().mutex);
          inference_ops().linears[std::move(activation)] = fast;
        }, py::arg("activation"), py::arg("fast"), "The FastLinear linear_inference's kernel takes for an activation.");
  m.def("register_training_kernels", &register_training_kernels, py::arg("conv_python"), py::arg("add_act_python"),
        py::arg("dgrad_python"), py::arg("wgrad_python"),
        "Registers C++ CUDA kernels of tilefuse::conv2d, conv2d_add_act, conv2d_dgrad and conv2d_wgrad over the fast "
        "paths, with the Python implementations they call on a miss.");
  m.def("backward_kernel_stats", [] {
          py::dict d;
          d["dgrad_hits"] = training_ops().dgrad_hits.load();
          d["wgrad_hits"] = training_ops().wgrad_hits.load();
          d["fallbacks"] = training_ops().fallbacks.load();
          return d;
        }, "How many calls the C++ kernels of conv2d_dgrad / conv2d_wgrad took from their tables, and sent to Python.");
  m.def("remember_dgrad", [](std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                             std::vector<std::int64_t> dilation, at::Tensor const& grad_y, at::Tensor const& weight,
                             std::vector<std::int64_t> input_size, py::object native) {
          GradTable* table = grad_table(stride, padding, dilation, true);
          if (table == nullptr) return false;
          Signature const key = grad_signature(grad_y, weight, input_size);
          if (key.full()) return false;
          std::lock_guard<std::mutex> lock(table->mutex);
          table->dgrads[key] = dgrad_of(native);
          return true;
        }, py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("grad_y"), py::arg("weight"),
        py::arg("input_size"), py::arg("native"), "The warm call tilefuse::conv2d_dgrad's kernel takes for these.");
  m.def("remember_wgrad", [](std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                             std::vector<std::int64_t> dilation, at::Tensor const& grad_y, at::Tensor const& x,
                             std::vector<std::int64_t> weight_size, std::shared_ptr<WarmCall> native) {
          GradTable* table = grad_table(stride, padding, dilation, true);
          if (table == nullptr) return false;
          Signature const key = grad_signature(grad_y, x, weight_size);
          if (key.full()) return false;
          std::lock_guard<std::mutex> lock(table->mutex);
          table->wgrads[key] = std::move(native);
          return true;
        }, py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("grad_y"), py::arg("x"),
        py::arg("weight_size"), py::arg("native"), "The warm call tilefuse::conv2d_wgrad's kernel takes for these.");
  m.def("register_conv2d_autograd", &register_conv2d_autograd, py::arg("conv2d"), py::arg("add_act"),
        "Registers the C++ Autograd kernels of tilefuse::conv2d and conv2d_add_act: below autograd without grad, "
        "the given callables (each op's autograd formula) with it.");
  m.def("register_linear_autograd", &register_linear_autograd, py::arg("python"),
        "Registers the C++ Autograd kernel of tilefuse::linear, as register_conv2d_autograd.");
  m.def("register_linear_kernel", &register_linear_kernel, py::arg("linear_python"),
        "Registers the C++ CUDA kernel of tilefuse::linear (FastLinear; the Python implementation on a miss).");
  m.def("register_inference_kernels", &register_inference_kernels, py::arg("conv_python"), py::arg("linear_python"),
        "Registers the C++ CUDA kernels of tilefuse::conv2d_inference and linear_inference (defined by Python first), "
        "with the Python implementations they call on a miss.");
}
