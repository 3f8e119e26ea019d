// What the fast paths of tilefuse._torch_ops share: which Python arguments they may take, and the wrapping of
// results.
#pragma once

#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <initializer_list>
#include <vector>

namespace tilefuse_torch {

namespace py = pybind11;

// A torch.Tensor or Parameter itself (subclasses keep their own dispatch: the Python path).
inline bool plain(py::handle h) {
  static PyObject* const parameter = py::object(py::module_::import("torch.nn").attr("Parameter")).release().ptr();
  PyTypeObject* const type = Py_TYPE(h.ptr());
  return type == reinterpret_cast<PyTypeObject*>(THPVariableClass) || type == reinterpret_cast<PyTypeObject*>(parameter);
}

// What op_common.eager_path refuses (dispatch modes, torch.func transforms), and autocast (whose cast the
// Python op makes).
inline bool transformed() {
  return c10::impl::TorchDispatchModeTLS::stack_len() > 0 ||
         c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
         at::autocast::is_autocast_enabled(at::kCUDA);
}

// The tensors of an op's Python call (x, weight, bias or None, residual or None), or false where the Python
// path must take it.
inline bool unpack(py::handle x, py::handle w, py::handle bias, py::handle residual, at::Tensor const* (&out)[4]) {
  py::handle const handles[4] = {x, w, bias, residual};
  for (int i = 0; i < 4; ++i) {
    out[i] = nullptr;
    if (i >= 2 && handles[i].is_none()) continue;
    if (!plain(handles[i])) return false;
    out[i] = &THPVariable_Unpack(handles[i].ptr());
  }
  return !transformed();
}

// Whether autograd records a call on these tensors (grad mode on, one of them requiring grad; null: absent).
inline bool records_grad(std::initializer_list<at::Tensor const*> tensors) {
  if (!torch::autograd::GradMode::is_enabled()) return false;
  for (at::Tensor const* t : tensors) {
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  }
  return false;
}

inline py::object wrap(at::Tensor t) { return py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(t))); }

// The epilogue's tensors in slot order: the bias, then the residual, those present.
inline std::vector<at::Tensor const*> epilogue_tensors(at::Tensor const* bias, at::Tensor const* residual) {
  std::vector<at::Tensor const*> out;
  if (bias != nullptr) out.push_back(bias);
  if (residual != nullptr) out.push_back(residual);
  return out;
}

}  // namespace tilefuse_torch
