"""pytorch(spec, name, out_dir): a standalone PyTorch extension for one GEMM or conv2d fprop with its epilogue.

Written into out_dir:
  <name>.cu             the tilefuse operation (tree type, Gemm or Conv2d) and `run` / `describe`, which take
                        torch tensors, check dtypes, devices, memory formats and alignment, allocate the
                        outputs (conv: channels-last) and launch on the current CUDA stream
  <name>_binding.cpp    PYBIND11_MODULE: the module <name> with run(...), describe(...) and `outputs`
  tilefuse_runtime/     copies of tilefuse's runtime sources (src/: Status, the host adapter, tensor maps)
  tilefuse_include/     a copy of tilefuse's C++ headers: the folder builds anywhere, without tilefuse
  setup.py              torch.utils.cpp_extension.CUDAExtension (python setup.py build_ext --inplace), and
                        load() for torch.utils.cpp_extension.load
  README.txt            how to build and call it
Nothing here imports torch: emitting works on a machine without it.
"""
import os
import re
import shutil
from dataclasses import dataclass

from ..dtypes import element_type
from ..epilogue import to_cpp, trace
from .spec import CPP_KEYWORDS, OPERANDS, EmitError, OpSpec, check_name, spec_of

# Epilogue element types -> the torch dtype an extension checks for (tfloat32 has none).
TORCH_DTYPES = {
    "bfloat16": ("at::kBFloat16", "torch.bfloat16"),
    "float16": ("at::kHalf", "torch.float16"),
    "float32": ("at::kFloat", "torch.float32"),
    "float64": ("at::kDouble", "torch.float64"),
    "float8_e4m3": ("at::kFloat8_e4m3fn", "torch.float8_e4m3fn"),
    "float8_e5m2": ("at::kFloat8_e5m2", "torch.float8_e5m2"),
}
DEFAULT_ARCHS = ("90a", "80")
# tilefuse's runtime library (CMakeLists.txt's `tilefuse` target): the extension compiles its own copy.
RUNTIME_SOURCES = ("core/status.cpp", "runtime/host_adapter.cpp", "runtime/default_host_adapter.cpp",
                   "runtime/tensor_map.cpp")
_HEADER = os.path.join("tilefuse", "gemm", "device", "gemm.hpp")
INCLUDE_COPY = "tilefuse_include"  # the headers' copy in an emitted folder


@dataclass(frozen=True)
class EmittedExtension:
    """What pytorch() wrote: the folder, the module name, the paths of its files, and the call's shape."""

    out_dir: str
    name: str
    files: tuple  # paths relative to out_dir
    parameters: tuple  # run()'s parameter names, in order
    outputs: tuple  # the names of what run() returns, in order
    epilogue: str  # the C++ tree type


def _identity(acc):
    return acc


def pytorch(spec, name, out_dir, *, archs=DEFAULT_ARCHS, source_root=None, element=None,
            epilogue_specs=None) -> EmittedExtension:
    """Writes the extension `name` for `spec` into out_dir (created if missing) and returns what it wrote.

    spec: an OpSpec, or an op object (a tilefuse.Gemm, or a tilefuse.Conv2d in fprop mode), which then takes
    `element` (the operand type, default bfloat16) and `epilogue_specs` (the shapes or numbers that say
    which kind each epilogue argument is; spec_of).

    archs: the GPU architectures compiled (-gencode arch=compute_X,code=sm_X each): "90a" runs the Hopper
    kernels, "80" the sm_80 path (also on sm_89 and sm_90). source_root: a tilefuse checkout (its include/
    and src/); by default the headers and runtime sources installed with the package (or this checkout's,
    or $TILEFUSE_SOURCE_DIR's). Both are copied into out_dir, so the folder builds on any machine with torch
    and nvcc, tilefuse installed or not.
    """
    if not isinstance(spec, OpSpec):
        spec = spec_of(spec, element, epilogue_specs)
    elif element is not None or epilogue_specs is not None:
        raise EmitError("tilefuse.emit.pytorch: element and epilogue_specs go with an op object; an OpSpec "
                        "carries its own")
    element = spec.checked()
    check_name(name, "name")
    archs = _check_archs(archs)
    include, runtime = _locate(source_root)

    graph = trace(spec.epilogue or _identity, **spec.epilogue_specs)
    acc = spec.epilogue_specs.get("acc")
    if len(getattr(acc, "shape", acc) or ()) == 3 or any(
            i.shape is not None and len(i.shape) == 3 for i in graph.inputs.values()):
        raise EmitError("the emitter builds unbatched operations: give epilogue_specs shapes without a batch "
                        "size ((n,), (m, 1), (m, n))")
    tree = to_cpp(graph, element, elements=spec.elements)
    kinds = {a.name: a for a in tree.arguments}
    inputs = [kinds[n] for n in graph.inputs]  # the epilogue function's parameter order
    outputs = [a for a in tree.arguments if a.is_output]
    for a in tree.arguments:
        _check_argument(spec, a)

    op = _Emitter(spec, element, name, tree, inputs, outputs, archs)
    os.makedirs(os.path.join(out_dir, "tilefuse_runtime"), exist_ok=True)
    files = {f"{name}.cu": op.cu(), f"{name}_binding.cpp": op.binding(), "setup.py": op.setup(),
             "README.txt": op.readme()}
    for relative, text in files.items():
        with open(os.path.join(out_dir, relative), "w") as f:
            f.write(text)
    copied = []
    for source in RUNTIME_SOURCES:
        target = os.path.join("tilefuse_runtime", os.path.basename(source))
        shutil.copyfile(os.path.join(runtime, source), os.path.join(out_dir, target))
        copied.append(target)
    headers = os.path.join(out_dir, INCLUDE_COPY, "tilefuse")
    shutil.rmtree(headers, ignore_errors=True)
    shutil.copytree(os.path.join(include, "tilefuse"), headers,
                    ignore=lambda folder, names: [n for n in names if not os.path.isdir(os.path.join(folder, n))
                                                  and not n.endswith((".h", ".hpp"))])
    return EmittedExtension(os.path.abspath(out_dir), name, (*files, *copied), tuple(op.parameters),
                            tuple(a.name for a in outputs), str(tree))


def _check_archs(archs):
    if isinstance(archs, (str, int)) or not archs:
        raise EmitError(f"archs={archs!r} must be a non-empty list such as [\"90a\", \"80\"]")
    out = []
    for arch in archs:
        text = str(arch).removeprefix("sm_")
        if not re.fullmatch(r"[1-9][0-9]{1,2}[af]?", text):
            raise EmitError(f"archs: {arch!r} is not a GPU architecture; write it as nvcc's sm_ suffix: \"90a\", \"80\"")
        out.append(text)
    return out


def _locate(source_root):
    """(include folder, src folder) of tilefuse."""
    from ..jit.headers import include_dir
    from ..jit.errors import JitError

    if source_root is not None:
        include, src = os.path.join(source_root, "include"), os.path.join(source_root, "src")
    else:
        try:
            include = include_dir()
        except JitError as error:
            raise EmitError(str(error)) from None
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        candidates = [os.path.join(package, "src"), os.path.join(os.path.dirname(os.path.dirname(package)), "src")]
        if os.environ.get("TILEFUSE_SOURCE_DIR"):
            candidates.insert(0, os.path.join(os.environ["TILEFUSE_SOURCE_DIR"], "src"))
        src = next((c for c in candidates if os.path.isfile(os.path.join(c, RUNTIME_SOURCES[0]))), candidates[-1])
    if not os.path.isfile(os.path.join(include, _HEADER)):
        raise EmitError(f"tilefuse.emit: the tilefuse headers are not in {include} (no {_HEADER}); pass "
                        "source_root=<a tilefuse checkout>")
    missing = [s for s in RUNTIME_SOURCES if not os.path.isfile(os.path.join(src, s))]
    if missing:
        raise EmitError(f"tilefuse.emit: tilefuse's runtime sources ({', '.join(missing)}) are not in {src}; the "
                        "installed package carries only the headers: pass source_root=<a tilefuse checkout> or set "
                        "TILEFUSE_SOURCE_DIR to one")
    return os.path.abspath(include), os.path.abspath(src)


def _check_argument(spec, a):
    where = f"epilogue argument {a.name!r}" if not a.is_output else f"epilogue output {a.name!r}"
    if a.name in OPERANDS[spec.kind]:
        raise EmitError(f"{where} has the name of the {spec.kind} operand {a.name!r}; rename it "
                        f"(the extension's parameters are {', '.join(OPERANDS[spec.kind])} and then the epilogue's)")
    if a.name in CPP_KEYWORDS or a.name.startswith("tf_") or a.name in ("describe", "run", "outputs"):
        raise EmitError(f"{where}: {a.name!r} is a C++ keyword or a name the generated code uses; rename it")
    if a.dtype is not None and a.dtype not in TORCH_DTYPES:
        raise EmitError(f"{where} is {a.dtype}, which has no torch dtype; use one of: {', '.join(TORCH_DTYPES)}")
    if spec.kind == "conv2d_fprop" and a.kind == "col_broadcast":
        raise EmitError(f"{where} is one value per output pixel (shape (m, 1)); the conv emitter takes per-channel "
                        "vectors (k,), (m, k) matrices of the output's shape and scalars")


def _cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Emitter:
    def __init__(self, spec, element, name, tree, inputs, outputs, archs):
        self.spec, self.element, self.name, self.tree = spec, element, name, tree
        self.inputs, self.outputs, self.archs = inputs, outputs, archs
        self.conv = spec.kind == "conv2d_fprop"
        self.operands = OPERANDS[spec.kind]
        self.parameters = [*self.operands, *(a.name for a in inputs)]
        self.namespace = f"tilefuse_ext_{name}"

    # ---- <name>.cu ----

    def signature(self):
        params = [f"at::Tensor const& {o}" for o in self.operands]
        params += [f"double {a.name}" if a.kind == "scalar" else f"at::Tensor const& {a.name}" for a in self.inputs]
        return ", ".join(params)

    def returns(self):
        return "at::Tensor" if len(self.outputs) == 1 else "std::vector<at::Tensor>"

    def summary(self):
        if self.conv:
            s = self.spec
            return (f"conv2d fprop, {self.element}, stride {tuple(s.stride)}, padding {tuple(s.padding)}, "
                    f"dilation {tuple(s.dilation)}: x (N, C, H, W) and w (K, C, R, S), channels-last")
        return (f"gemm, {self.element}, a (m, k) {self.spec.layout_a}-major, b (k, n) {self.spec.layout_b}-major")

    def cu(self):
        e = element_type(self.element)
        fn = getattr(self.spec.epilogue or _identity, "__name__", "epilogue")
        arguments = "\n".join(f"//   {a.name}: {a.kind}" + (f" <{a.dtype}>" if a.dtype else "") for a in self.tree.arguments)
        include = "tilefuse/conv/device/conv2d.hpp" if self.conv else "tilefuse/gemm/device/gemm.hpp"
        if self.conv:
            op = "tilefuse::conv::Conv2d<Element, tilefuse::ConvMode::kFprop, Epilogue>"
        else:
            layout = {"row": "tilefuse::RowMajor", "column": "tilefuse::ColumnMajor"}
            op = f"tilefuse::gemm::Gemm<Element, {layout[self.spec.layout_a]}, {layout[self.spec.layout_b]}, Epilogue>"
        epilogue = self.tree.pretty
        lines = [
            f"// Generated by tilefuse.emit.pytorch: the extension {self.name}. Do not edit: emit it again instead.",
            f"//   {self.name}.run({', '.join(self.parameters)}) -> {', '.join(a.name for a in self.outputs)}",
            f"//   {self.summary()}",
            f"// Epilogue {fn}, lowered by tilefuse.epilogue.to_cpp; its arguments (EpilogueArguments::set):",
            arguments,
            "#include <ATen/ATen.h>",
            "#include <ATen/cuda/CUDAContext.h>",
            "#include <c10/cuda/CUDAGuard.h>",
            "",
            "#include <cstddef>",
            "#include <cstdint>",
            "#include <string>",
            "#include <vector>",
            "",
            f"#include <{include}>",
            "",
            f"namespace {self.namespace} {{",
            "",
            f"using Element = {e.cpp};",
            f"using Epilogue = {epilogue};",
            f"using Op = {op};",
            "",
            f"constexpr char const* kOp = {_cpp_string(self.name)};",
            "",
            _HELPERS,
            "// The checked arguments of one call and the outputs they write.",
            "struct tf_Call {",
            "  Op::Arguments args;",
            "  std::vector<at::Tensor> outputs;",
            "};",
            "",
            f"tf_Call tf_prepare({self.signature()}) {{",
            *(self.conv_body() if self.conv else self.gemm_body()),
            "}",
            "",
            "}  // namespace",
            "",
            "// Checks every tensor, allocates the outputs and runs the fused operation on the current stream.",
            f"{self.returns()} run({self.signature()}) {{",
            f"  tf_check_cuda({self.operands[0]}, {_cpp_string(self.operands[0])});",
            f"  c10::cuda::CUDAGuard const tf_guard({self.operands[0]}.device());",
            f"  tf_Call call = tf_prepare({', '.join(self.parameters)});",
            "  tilefuse::Status const tf_can = Op::can_implement(call.args);",
            "  TORCH_CHECK(tf_can.ok(), kOp, \": tilefuse cannot run this problem: \", tf_can.message());",
            "  std::size_t const tf_bytes = Op::workspace_size(call.args);",
            "  at::Tensor tf_workspace;",
            "  if (tf_bytes > 0) {",
            f"    tf_workspace = at::empty({{static_cast<std::int64_t>(tf_bytes)}}, {self.operands[0]}.options().dtype(at::kByte));",
            "  }",
            "  tilefuse::Status const tf_ran =",
            "      Op::run(call.args, tf_bytes > 0 ? tf_workspace.data_ptr() : nullptr, at::cuda::getCurrentCUDAStream());",
            "  TORCH_CHECK(tf_ran.ok(), kOp, \": the launch failed: \", tf_ran.message());",
            "  return call.outputs[0];" if len(self.outputs) == 1 else "  return call.outputs;",
            "}",
            "",
            "// Which kernel run() would use for these tensors, and why (Op::describe); checks them the same way.",
            f"std::string describe({self.signature()}) {{",
            f"  tf_check_cuda({self.operands[0]}, {_cpp_string(self.operands[0])});",
            f"  c10::cuda::CUDAGuard const tf_guard({self.operands[0]}.device());",
            f"  return Op::describe(tf_prepare({', '.join(self.parameters)}).args);",
            "}",
            "",
            f"}}  // namespace {self.namespace}",
            "",
        ]
        return "\n".join(lines)

    def tensor_check(self, name, dtype_name):
        cpp, torch = TORCH_DTYPES[dtype_name]
        return f"  tf_check_tensor({name}, {_cpp_string(name)}, {cpp}, \"{torch}\", tf_device);"

    def conv_body(self):
        s = self.spec
        x, w = self.operands
        body = [
            f"  at::Device const tf_device = {x}.device();",
            self.tensor_check(x, self.element),
            self.tensor_check(w, self.element),
            f"  TORCH_CHECK({x}.dim() == 4, kOp, \": x must be 4-D (N, C, H, W), but has sizes \", {x}.sizes());",
            f"  TORCH_CHECK({w}.dim() == 4, kOp, \": w must be 4-D (K, C, R, S), but has sizes \", {w}.sizes());",
            f"  tf_check_channels_last({x}, \"x\", \"NHWC\");",
            f"  tf_check_channels_last({w}, \"w\", \"KRSC\");",
            "  tilefuse::Conv2dProblem tf_problem;",
            "  tf_problem.mode = tilefuse::ConvMode::kFprop;",
            f"  tf_problem.N = {x}.size(0);",
            f"  tf_problem.C = {x}.size(1);",
            f"  tf_problem.H = {x}.size(2);",
            f"  tf_problem.W = {x}.size(3);",
            f"  tf_problem.K = {w}.size(0);",
            f"  tf_problem.R = {w}.size(2);",
            f"  tf_problem.S = {w}.size(3);",
            f"  tf_problem.stride_h = {s.stride[0]};",
            f"  tf_problem.stride_w = {s.stride[1]};",
            f"  tf_problem.pad_h = {s.padding[0]};",
            f"  tf_problem.pad_w = {s.padding[1]};",
            f"  tf_problem.dilation_h = {s.dilation[0]};",
            f"  tf_problem.dilation_w = {s.dilation[1]};",
            f"  TORCH_CHECK({w}.size(1) == tf_problem.C, kOp, \": w has \", {w}.size(1), \" input channels but x has \", "
            "tf_problem.C, \" (groups = 1 only)\");",
            "  std::int64_t const tf_k = tf_problem.K, tf_p = tf_problem.P(), tf_q = tf_problem.Q();",
            "  TORCH_CHECK(tf_p > 0 && tf_q > 0, kOp, \": the dilated \", tf_problem.R, \" x \", tf_problem.S, \" filter does not fit \"",
            "              \"the padded \", tf_problem.H, \" x \", tf_problem.W, \" input\");",
            "  std::int64_t const tf_n = tf_problem.N;",
        ]
        body += self.epilogue_inputs(matrix=("{tf_n, tf_k, tf_p, tf_q}", "(N, K, P, Q)"), cols="tf_k", rows=None)
        body += self.allocate_outputs(f"{x}.options()", store="at::empty({tf_n, tf_k, tf_p, tf_q}, tf_options@DTYPE@"
                                      ".memory_format(at::MemoryFormat::ChannelsLast))",
                                      row_reduce="{tf_n, tf_p, tf_q}", col_reduce="{tf_k}")
        body += [
            "  tf_Call call;",
            "  call.args.problem = tf_problem;",
            f"  call.args.x = reinterpret_cast<Element const*>({x}.data_ptr());",
            f"  call.args.w = reinterpret_cast<Element const*>({w}.data_ptr());",
            "  call.args.split_k = 0;  // let Conv2d choose",
        ]
        body += self.set_epilogue(ld="tf_k")
        return body

    def gemm_body(self):
        a, b = self.operands
        row_a, row_b = self.spec.layout_a == "row", self.spec.layout_b == "row"
        body = [
            f"  at::Device const tf_device = {a}.device();",
            self.tensor_check(a, self.element),
            self.tensor_check(b, self.element),
            f"  TORCH_CHECK({a}.dim() == 2 && {b}.dim() == 2, kOp, \": a (m, k) and b (k, n) must be 2-D, but have sizes \", "
            f"{a}.sizes(), \" and \", {b}.sizes());",
            f"  std::int64_t const tf_m = {a}.size(0), tf_k = {a}.size(1), tf_n = {b}.size(1);",
            f"  TORCH_CHECK({b}.size(0) == tf_k, kOp, \": a is \", tf_m, \" x \", tf_k, \" but b is \", {b}.size(0), \" x \", tf_n, "
            "\"; b must have k = \", tf_k, \" rows\");",
            f"  std::int64_t const tf_lda = tf_leading_dim({a}, \"a\", {str(row_a).lower()});",
            f"  std::int64_t const tf_ldb = tf_leading_dim({b}, \"b\", {str(row_b).lower()});",
        ]
        body += self.epilogue_inputs(matrix=("{tf_m, tf_n}", "(m, n)"), cols="tf_n", rows="tf_m")
        body += self.allocate_outputs(f"{a}.options()", store="at::empty({tf_m, tf_n}, tf_options@DTYPE@)",
                                      row_reduce="{tf_m}", col_reduce="{tf_n}")
        body += [
            "  tf_Call call;",
            "  call.args.problem = tilefuse::GemmCoord{tf_m, tf_n, tf_k, 1};",
            f"  call.args.a = reinterpret_cast<Element const*>({a}.data_ptr());",
            "  call.args.lda = tf_lda;",
            f"  call.args.b = reinterpret_cast<Element const*>({b}.data_ptr());",
            "  call.args.ldb = tf_ldb;",
            "  call.args.split_k = 1;",
        ]
        body += self.set_epilogue(ld="tf_n")
        return body

    def epilogue_inputs(self, matrix, cols, rows):
        body = []
        for a in self.inputs:
            n, q = a.name, _cpp_string(a.name)
            if a.kind == "scalar":
                continue
            body.append(self.tensor_check(n, a.dtype))
            if a.kind == "row_broadcast":
                what = "one value per output channel" if self.conv else "one value per output column"
                body.append(f"  tf_check_vector({n}, {q}, {cols}, \"{what}\");")
            elif a.kind == "col_broadcast":
                body.append(f"  tf_check_vector({n}, {q}, {rows}, \"one value per output row\");")
            elif self.conv:  # aux_load
                body.append(f"  tf_check_sizes({n}, {q}, {matrix[0]}, \"{matrix[1]}\");")
                body.append(f"  tf_check_channels_last({n}, {q}, \"NHWC\");")
            else:
                body.append(f"  tf_check_sizes({n}, {q}, {matrix[0]}, \"{matrix[1]}\");")
                body.append(f"  std::int64_t const tf_ld_{n} = tf_leading_dim({n}, {q}, true);")
        return body

    def allocate_outputs(self, options, store, row_reduce, col_reduce):
        body = [f"  at::TensorOptions const tf_options = {options};"]
        for a in self.outputs:
            if a.kind == "store":
                alloc = store.replace("@DTYPE@", f".dtype({TORCH_DTYPES[a.dtype][0]})")
            else:
                shape = row_reduce if a.kind == "row_reduce" else col_reduce
                alloc = f"at::empty({shape}, tf_options.dtype(at::kFloat))"
            body.append(f"  at::Tensor tf_out_{a.name} = {alloc};")
        return body

    def set_epilogue(self, ld):
        body = ["  call.args.epilogue"]
        for a in self.tree.arguments:
            q = _cpp_string(a.name)
            if a.kind == "scalar":
                body.append(f"      .set({q}, static_cast<float>({a.name}))")
                continue
            cpp = element_type(a.dtype).cpp
            if a.is_output:
                pointer = f"reinterpret_cast<{cpp}*>(tf_out_{a.name}.data_ptr())"
                strides = f", {{.ld = {ld}}}" if a.kind == "store" else ""
            else:
                pointer = f"reinterpret_cast<{cpp} const*>({a.name}.data_ptr())"
                strides = ""
                if a.kind == "aux_load":
                    strides = f", {{.ld = {ld}}}" if self.conv else f", {{.ld = tf_ld_{a.name}}}"
            body.append(f"      .set({q}, {pointer}{strides})")
        body[-1] += ";"
        body.append("  call.outputs = {" + ", ".join(f"tf_out_{a.name}" for a in self.outputs) + "};")
        body.append("  return call;")
        return body

    # ---- <name>_binding.cpp ----

    def binding(self):
        args = "".join(f", py::arg({_cpp_string(p)})" for p in self.parameters)
        doc = f"{self.summary()}; returns {', '.join(a.name for a in self.outputs)}"
        return "\n".join([
            f"// Generated by tilefuse.emit.pytorch: the Python module {self.name} (functions in {self.name}.cu).",
            "#include <torch/extension.h>",
            "",
            "#include <string>",
            "#include <vector>",
            "",
            f"namespace {self.namespace} {{",
            f"{self.returns()} run({self.signature()});",
            f"std::string describe({self.signature()});",
            f"}}  // namespace {self.namespace}",
            "",
            "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
            f"  m.def(\"run\", &{self.namespace}::run, {_cpp_string(doc)}{args});",
            f"  m.def(\"describe\", &{self.namespace}::describe, \"which kernel run() would use, and why\"{args});",
            "  m.attr(\"outputs\") = py::make_tuple(" + ", ".join(_cpp_string(a.name) for a in self.outputs) + ");",
            "}",
            "",
        ])

    # ---- setup.py ----

    def setup(self):
        sources = [f"{self.name}.cu", f"{self.name}_binding.cpp",
                   *(f"tilefuse_runtime/{os.path.basename(s)}" for s in RUNTIME_SOURCES)]
        return _SETUP.format(name=self.name, archs=repr(list(self.archs)),
                             sources="".join(f"\n    {s!r}," for s in sources))

    # ---- README.txt ----

    def readme(self):
        returns = self.outputs[0].name if len(self.outputs) == 1 else \
            "a list [" + ", ".join(a.name for a in self.outputs) + "]"
        params = []
        for p in self.parameters:
            a = next((a for a in self.inputs if a.name == p), None)
            params.append(f"  {p}: " + self.describe_parameter(p, a))
        outs = [f"  {a.name}: " + self.describe_output(a) for a in self.outputs]
        return _README.format(name=self.name, summary=self.summary(), params=", ".join(self.parameters),
                              returns=returns, parameters="\n".join(params), outs="\n".join(outs),
                              archs=", ".join(f"sm_{a}" for a in self.archs), tree=self.tree.pretty)

    def describe_parameter(self, p, a):
        dtype = TORCH_DTYPES[self.element][1]
        if a is None:
            if self.conv:
                return (f"{dtype}, (N, C, H, W) channels-last" if p == "x" else f"{dtype}, (K, C, R, S) channels-last")
            layout = self.spec.layout_a if p == "a" else self.spec.layout_b
            return f"{dtype}, ({'m, k' if p == 'a' else 'k, n'}) {layout}-major"
        if a.kind == "scalar":
            return "a Python number"
        what = {"row_broadcast": "(K,) one per output channel" if self.conv else "(n,) one per output column",
                "col_broadcast": "(m,) one per output row",
                "aux_load": "(N, K, P, Q) channels-last" if self.conv else "(m, n) row-major"}[a.kind]
        return f"{TORCH_DTYPES[a.dtype][1]}, {what}"

    def describe_output(self, a):
        if a.kind == "store":
            return f"{TORCH_DTYPES[a.dtype][1]}, " + ("(N, K, P, Q) channels-last" if self.conv else "(m, n) contiguous")
        if a.kind == "row_reduce":
            return "torch.float32, " + ("(N, P, Q): one per output pixel" if self.conv else "(m,): one per row")
        return "torch.float32, " + ("(K,): one per output channel" if self.conv else "(n,): one per column")


_HELPERS = r"""namespace {

// Defined, a CUDA tensor.
[[maybe_unused]] void tf_check_cuda(at::Tensor const& t, char const* name) {
  TORCH_CHECK(t.defined(), kOp, ": ", name, " is an undefined tensor");
  TORCH_CHECK(t.is_cuda(), kOp, ": ", name, " must be a CUDA tensor, but is on ", t.device());
}

// A CUDA tensor on `device` (that of the first operand) with the element type the extension was built for,
// aligned to its element size.
[[maybe_unused]] void tf_check_tensor(at::Tensor const& t, char const* name, at::ScalarType dtype, char const* torch_dtype,
                     at::Device device) {
  tf_check_cuda(t, name);
  TORCH_CHECK(t.device() == device, kOp, ": ", name, " is on ", t.device(), " but the operands are on ", device,
              "; put every tensor on one device");
  TORCH_CHECK(t.scalar_type() == dtype, kOp, ": ", name, " has dtype ", t.scalar_type(), ", but this extension takes ",
              torch_dtype, " for it; convert it with .to(", torch_dtype, ") or emit the extension for its dtype");
  TORCH_CHECK(reinterpret_cast<std::uintptr_t>(t.data_ptr()) % t.element_size() == 0, kOp, ": ", name, " at ", t.data_ptr(),
              " is not aligned to its ", t.element_size(), "-byte elements");
}

// A 4-D tensor whose memory is channels-last and packed (NHWC, or KRSC for filters).
[[maybe_unused]] void tf_check_channels_last(at::Tensor const& t, char const* name, char const* order) {
  TORCH_CHECK(t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast), kOp, ": ", name,
              " must be channels-last (", order, " in memory), but has sizes ", t.sizes(), " and strides ", t.strides(),
              "; convert it with ", name, ".contiguous(memory_format=torch.channels_last)");
}

// A contiguous vector of `length` values (any shape holding exactly that many, e.g. (n,) or (1, n)).
[[maybe_unused]] void tf_check_vector(at::Tensor const& t, char const* name, std::int64_t length, char const* what) {
  TORCH_CHECK(t.numel() == length && t.is_contiguous(), kOp, ": ", name, " must be ", what, ": ", length,
              " contiguous values, but has sizes ", t.sizes(), " and strides ", t.strides());
}

[[maybe_unused]] void tf_check_sizes(at::Tensor const& t, char const* name, at::IntArrayRef sizes, char const* what) {
  TORCH_CHECK(t.sizes().equals(sizes), kOp, ": ", name, " must have the output's sizes ", what, " = ", sizes,
              ", but has ", t.sizes());
}

// The leading dimension of a 2-D tensor read as a row-major (row_major) or column-major matrix; refuses any
// other layout (a dimension of size 1 may have any stride).
[[maybe_unused]] std::int64_t tf_leading_dim(at::Tensor const& t, char const* name, bool row_major) {
  TORCH_CHECK(t.dim() == 2, kOp, ": ", name, " must be 2-D, but has sizes ", t.sizes());
  std::int64_t const inner = t.size(row_major ? 1 : 0), outer = t.size(row_major ? 0 : 1);
  std::int64_t const unit = t.stride(row_major ? 1 : 0), ld = t.stride(row_major ? 0 : 1);
  bool const ok = (unit == 1 || inner == 1) && (ld >= inner || outer == 1);
  TORCH_CHECK(ok, kOp, ": ", name, " (sizes ", t.sizes(), ", strides ", t.strides(), ") must be ",
              row_major ? "row-major (stride(1) == 1, as .contiguous() makes it)"
                        : "column-major (stride(0) == 1, as .t() of a contiguous tensor is)");
  return outer == 1 ? (inner > 0 ? inner : 1) : ld;
}
"""

_SETUP = '''# Generated by tilefuse.emit.pytorch: builds the PyTorch extension {name} (README.txt says how).
#   python setup.py build_ext --inplace        (or: pip install --no-build-isolation .)
# or, from Python without installing: importlib-load this file and call load() (torch.utils.cpp_extension.load).
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "{name}"
# The folder holding tilefuse/ (the C++ headers): the copy beside this file, which the emitter wrote;
# the environment variable TILEFUSE_INCLUDE_DIR overrides it.
TILEFUSE_INCLUDE = os.environ.get("TILEFUSE_INCLUDE_DIR", os.path.join(HERE, "tilefuse_include"))
# GPU architectures, one -gencode each: 90a runs the Hopper (TMA + WGMMA) kernels, 80 the sm_80 path.
ARCHS = {archs}
SOURCES = [{sources}
]
CXX_FLAGS = ["-O3", "-std=c++20"]
NVCC_FLAGS = [
    "-O3",
    "-std=c++20",
    "--expt-relaxed-constexpr",
    "-diag-suppress=2810",
    # torch hides the operators of CUDA's half and bfloat16 types; tilefuse's headers use them.
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
] + ["-gencode=arch=compute_%s,code=sm_%s" % (arch, arch) for arch in ARCHS]


def include_dirs():
    """The tilefuse headers, and CCCL (cuda/std), which CUDA 13 keeps in include/cccl, for the host compiler."""
    from torch.utils.cpp_extension import CUDA_HOME

    dirs = [TILEFUSE_INCLUDE]
    if CUDA_HOME and os.path.isdir(os.path.join(CUDA_HOME, "include", "cccl")):
        dirs.append(os.path.join(CUDA_HOME, "include", "cccl"))
    return dirs


def link_flags():
    """Linker flags that keep the extension on the shared C++ runtime, libstdc++.so.6, that torch runs on.

    A compiler that finds only the static libstdc++.a (some relocated GCC installs: `$CXX
    -print-file-name=libstdc++.so` prints the bare name) links a private copy of the C++ runtime into the
    extension and exports its symbols. Next to torch's libstdc++.so.6 the two copies disagree on the ids of
    std::locale's facets, and the first number written to a std::ostringstream (tilefuse's planning messages,
    in describe() and run()) dereferences a null facet. Naming the shared library on the link line makes the
    linker take every C++ runtime symbol from it: one runtime per process.
    """
    cxx = os.environ.get("CXX", "c++")  # the compiler torch.utils.cpp_extension links with (get_cxx_compiler)

    def compiler_finds(library):
        try:
            found = subprocess.run([cxx, "-print-file-name=" + library], capture_output=True, text=True,
                                   check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
        return found if os.path.isabs(found) and os.path.exists(found) else None

    if compiler_finds("libstdc++.so") or compiler_finds("libstdc++.a") is None:
        return []  # linked dynamically already (or not libstdc++ at all)
    shared = compiler_finds("libstdc++.so.6") or loaded_libstdcxx()
    if shared is None:
        raise SystemExit("%s: %s links libstdc++ only statically and no libstdc++.so.6 was found; an extension "
                         "with its own C++ runtime crashes beside torch's. Set CXX to a compiler that links "
                         "libstdc++.so" % (NAME, cxx))
    return [shared]


def loaded_libstdcxx():
    """The libstdc++.so.6 this process (which imported torch) has loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = [line.split()[-1] for line in maps if "/libstdc++.so.6" in line]
    except OSError:
        return None
    return paths[0] if paths else None


def check_headers():
    if not os.path.isfile(os.path.join(TILEFUSE_INCLUDE, "tilefuse", "gemm", "device", "gemm.hpp")):
        raise SystemExit("%s: the tilefuse headers are not in %s; set TILEFUSE_INCLUDE_DIR to the folder holding "
                         "tilefuse/ (a checkout's include/)" % (NAME, TILEFUSE_INCLUDE))


def load(verbose=False, build_directory=None):
    """Builds the extension (or reuses the build) with torch.utils.cpp_extension.load and returns the module."""
    from torch.utils.cpp_extension import load as torch_load

    check_headers()
    return torch_load(name=NAME, sources=[os.path.join(HERE, s) for s in SOURCES], extra_include_paths=include_dirs(),
                      extra_cflags=CXX_FLAGS, extra_cuda_cflags=NVCC_FLAGS, extra_ldflags=link_flags(),
                      build_directory=build_directory, verbose=verbose)


if __name__ == "__main__":
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    check_headers()
    os.chdir(HERE)  # setuptools takes source paths relative to setup.py's folder
    setup(
        name=NAME,
        ext_modules=[CUDAExtension(NAME, SOURCES, include_dirs=include_dirs(),
                                   extra_compile_args={{"cxx": CXX_FLAGS, "nvcc": NVCC_FLAGS}},
                                   extra_link_args=link_flags())],
        cmdclass={{"build_ext": BuildExtension}},
    )
'''

_README = """{name}: a PyTorch extension generated by tilefuse.emit.pytorch ({summary}).

Build (needs PyTorch with CUDA, the CUDA toolkit 12.8+ and a C++20 host compiler; compiles for {archs}):
    cd <this folder> && python setup.py build_ext --inplace
or, from Python, with ninja:
    import importlib.util
    spec = importlib.util.spec_from_file_location("{name}_setup", "<this folder>/setup.py")
    setup = importlib.util.module_from_spec(spec); spec.loader.exec_module(setup)
    {name} = setup.load()
The tilefuse headers are found where they were when this was emitted; set TILEFUSE_INCLUDE_DIR to move them.

Call:
    import torch, {name}
    out = {name}.run({params})      # returns {returns}
    print({name}.describe({params}))  # which kernel runs, and why
Parameters:
{parameters}
Outputs (allocated by run, on the operands' device, launched on the current CUDA stream):
{outs}
Every tensor must be on the same CUDA device and have the dtype above; run raises RuntimeError naming the
tensor otherwise, and with tilefuse's own message when it cannot run the problem.

Epilogue tree:
{tree}
"""
