"""tilefuse.tensors: describing tensor arguments and checking them for GEMM and Conv2d, with fake torch-like and
__cuda_array_interface__ objects and numpy arrays (no GPU or torch needed), and the real torch path where
torch is installed (the GPU machine)."""
import itertools
import sys
import types

import numpy as np
import pytest

from tilefuse.errors import TensorArgumentError
from tilefuse.tensors import (COLUMN_MAJOR, ROW_MAJOR, GemmOperands, TensorInfo, check_conv_activation,
                              check_gemm_operands, describe, empty_channels_last, is_channels_last)

BF16 = ("bfloat16",)
HALF = ("float16", "bfloat16")


def packed(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class FakeDevice:
    def __init__(self, spec):
        kind, _, index = spec.partition(":")
        self.type, self.index = kind, (int(index) if index else None)


class FakeTorch:
    """What tilefuse reads of a torch tensor: shape, stride(), dtype, device, data_ptr()."""

    def __init__(self, shape, strides=None, dtype="torch.bfloat16", device="cuda:0", ptr=0x7F0000000000):
        self.shape = tuple(shape)
        self._strides = tuple(strides) if strides is not None else packed(shape)
        self.dtype = dtype
        self.device = FakeDevice(device)
        self._ptr = ptr

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr

    @property
    def mT(self):  # the transpose, as torch's .mT: swap the last two sizes and strides
        shape, strides = list(self.shape), list(self._strides)
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
        return FakeTorch(shape, strides, self.dtype, f"{self.device.type}:{self.device.index}", self._ptr)


class FakeCai:
    """A CuPy-like array: __cuda_array_interface__ (strides in bytes), optionally __dlpack_device__."""

    def __init__(self, shape, typestr="<f2", byte_strides=None, ptr=0x7F0000000000, dlpack=(2, 0), device_id=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "strides": byte_strides,
                                         "data": (ptr, False), "version": 3}
        if dlpack is not None:
            self.__dlpack_device__ = lambda: dlpack
        if device_id is not None:
            self.device = type("CupyDevice", (), {"id": device_id})()


def error(fn, *args, needles=(), **kwargs):
    with pytest.raises(TensorArgumentError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


# ------------------------------------------------------------------------------------------------ describe


def test_describe_a_torch_like_object():
    info = describe(FakeTorch((4, 8), dtype="torch.bfloat16", device="cuda:1", ptr=0x1000), "a")
    assert info == TensorInfo("a", (4, 8), (8, 1), "bfloat16", "cuda", 1, 0x1000, 2, False)
    assert info.device == "cuda:1" and info.rank == 2 and info.numel == 32


def test_describe_torch_dtype_spellings_and_a_cpu_device():
    assert describe(FakeTorch((2,), dtype="torch.float8_e4m3fn"), "x").dtype == "float8_e4m3"
    info = describe(FakeTorch((2,), dtype="torch.float32", device="cpu"), "x")
    assert (info.dtype, info.itemsize, info.device, info.device_index) == ("float32", 4, "cpu", None)


def test_describe_a_device_given_as_a_string():
    fake = FakeTorch((2, 2))
    fake.device = "cuda:3"
    assert describe(fake, "x").device_index == 3


def test_describe_cuda_array_interface_with_byte_strides():
    info = describe(FakeCai((4, 8), "<f2", byte_strides=(2, 8), ptr=0x2000, dlpack=(2, 1)), "b")
    assert info == TensorInfo("b", (4, 8), (1, 4), "float16", "cuda", 1, 0x2000, 2, False)


def test_describe_cuda_array_interface_packed_and_device_from_cupy():
    info = describe(FakeCai((2, 3, 4), "<f4", dlpack=None, device_id=2), "x")
    assert (info.strides, info.dtype, info.device, info.itemsize) == ((12, 4, 1), "float32", "cuda:2", 4)


def test_describe_cuda_array_interface_without_a_device_index():
    info = describe(FakeCai((2, 2), dlpack=None), "x")
    assert (info.device_type, info.device_index, info.device) == ("cuda", None, "cuda")


def test_describe_managed_memory_from_dlpack():
    assert describe(FakeCai((2, 2), dlpack=(13, 0)), "x").device == "cuda_managed:0"


def test_describe_numpy_arrays():
    x = np.zeros((3, 5), np.float32)[:, ::2]
    info = describe(x, "x")
    assert (info.shape, info.strides, info.dtype, info.device, info.is_torch) == ((3, 3), (5, 2), "float32", "cpu",
                                                                                  False)
    assert info.data_ptr == x.ctypes.data
    assert describe(np.zeros((2, 2), np.float16).T, "y").strides == (1, 2)


def test_describe_refuses_what_is_no_tensor():
    message = error(describe, [1, 2, 3], "a", needles=("a has type list", "not a tensor", "a torch tensor",
                                                        "__cuda_array_interface__", "numpy array"))
    assert "[1, 2, 3]" in message
    error(describe, 3.0, "alpha", needles=("alpha has type float",))


def test_describe_refuses_dlpack_only_objects():
    class DlpackOnly:
        def __dlpack__(self, stream=None):
            raise NotImplementedError

        def __dlpack_device__(self):
            return (2, 0)

    error(describe, DlpackOnly(), "x", needles=("offers DLPack", "torch.from_dlpack(x)"))


def test_describe_refuses_dtypes_tilefuse_has_no_element_type_for():
    error(describe, FakeTorch((2,), dtype="torch.int64"), "a",
          needles=("a has dtype torch.int64", "no element type", "bfloat16"))
    error(describe, np.zeros(2, np.complex64), "a", needles=("complex64", "no element type"))
    error(describe, FakeCai((2,), "<c8"), "a", needles=("typestr '<c8'", "float16"))


def test_describe_refuses_broken_interfaces():
    bad = FakeCai((2, 3), "<f2", byte_strides=(6, 3))
    error(describe, bad, "x", needles=("byte strides (6, 3)", "whole number of elements"))
    odd = FakeTorch((2, 3), strides=(3,))
    error(describe, odd, "x", needles=("shape (2, 3) but strides (3,)",))
    broken = FakeCai((2,))
    broken.__cuda_array_interface__ = {"data": (0, False)}
    error(describe, broken, "x", needles=("without 'shape' and 'typestr'",))
    fake = FakeTorch((2,))
    fake.device = "cuda:first"
    error(describe, fake, "x", needles=("device 'cuda:first'",))


# -------------------------------------------------------------------------------------------------- GEMM


def test_gemm_row_major_a_column_major_b():
    a = FakeTorch((128, 64))
    b = FakeTorch((256, 64)).mT  # (64, 256), column-major
    d = FakeTorch((128, 256))
    plan = check_gemm_operands(a, b, d, allowed_dtypes=BF16)
    assert isinstance(plan, GemmOperands)
    assert (plan.m, plan.n, plan.k, plan.batch, plan.dtype, plan.device_index) == (128, 256, 64, 1, "bfloat16", 0)
    assert (plan.layout_a, plan.lda, plan.layout_b, plan.ldb) == (ROW_MAJOR, 64, COLUMN_MAJOR, 64)
    assert (plan.layout_d, plan.ldd) == (ROW_MAJOR, 256)
    assert plan.aligned and plan.alignment_notes == ()
    summary = plan.summary()
    assert "a: row-major 128x64, lda = 64" in summary and "b: column-major 64x256, ldb = 64" in summary
    assert "16-byte aligned: yes" in summary


def test_gemm_every_layout_combination():
    for la, lb, ld in itertools.product((ROW_MAJOR, COLUMN_MAJOR), repeat=3):
        def make(rows, cols, layout):
            return FakeTorch((rows, cols)) if layout == ROW_MAJOR else FakeTorch((cols, rows)).mT

        plan = check_gemm_operands(make(32, 16, la), make(16, 24, lb), make(32, 24, ld), allowed_dtypes=BF16)
        assert (plan.layout_a, plan.layout_b, plan.layout_d) == (la, lb, ld)
        assert (plan.lda, plan.ldb, plan.ldd) == (16 if la == ROW_MAJOR else 32, 24 if lb == ROW_MAJOR else 16,
                                                  24 if ld == ROW_MAJOR else 32)


def test_gemm_padded_leading_dimension_is_kept():
    a = FakeTorch((64, 40), strides=(48, 1))  # a slice of a 64 x 48 matrix
    plan = check_gemm_operands(a, FakeTorch((40, 8)), allowed_dtypes=BF16)
    assert (plan.layout_a, plan.lda) == (ROW_MAJOR, 48)


def test_gemm_vectors_prefer_the_fast_layouts():
    # One row or one column is both layouts: a prefers row-major, b column-major, d row-major.
    plan = check_gemm_operands(FakeTorch((1, 64)), FakeTorch((64, 1)), FakeTorch((1, 1)), allowed_dtypes=BF16)
    assert (plan.layout_a, plan.layout_b, plan.layout_d) == (ROW_MAJOR, COLUMN_MAJOR, ROW_MAJOR)
    assert (plan.lda, plan.ldb) == (64, 64)
    # A column vector a (m x 1) is both layouts whatever the stride of its one column (torch reports any value
    # there): row-major with ld 1 (a prefers it), or column-major with ld max(5, m).
    plan = check_gemm_operands(FakeTorch((8, 1), strides=(1, 5)), FakeTorch((1, 8)), allowed_dtypes=BF16)
    assert (plan.m, plan.k, plan.n) == (8, 1, 8)
    assert (plan.layout_a, plan.lda) == (ROW_MAJOR, 1)


def test_gemm_batched_and_shared_operands():
    a = FakeTorch((4, 32, 16))
    b = FakeTorch((16, 8))  # rank 2: shared by the batch
    d = FakeTorch((4, 32, 8))
    plan = check_gemm_operands(a, b, d, allowed_dtypes=BF16)
    assert (plan.batch, plan.batch_stride_a, plan.batch_stride_b, plan.batch_stride_d) == (4, 512, 0, 256)
    plan = check_gemm_operands(FakeTorch((1, 32, 16)), FakeTorch((4, 16, 8)), d, allowed_dtypes=BF16)
    assert (plan.batch, plan.batch_stride_a, plan.batch_stride_b) == (4, 0, 128)
    expanded = FakeTorch((4, 16, 8), strides=(0, 8, 1))  # b.expand(4, 16, 8): shared, allowed for inputs
    assert check_gemm_operands(a, expanded, d, allowed_dtypes=BF16).batch_stride_b == 0


def test_gemm_batched_d_must_be_batched():
    a = FakeTorch((4, 32, 16))
    error(check_gemm_operands, a, FakeTorch((16, 8)), FakeTorch((32, 8)), allowed_dtypes=BF16,
          needles=("d has shape (32, 8)", "gives (4, 32, 8)", "allocate d with shape (4, 32, 8)"))


def test_gemm_refuses_overlapping_batches():
    a = FakeTorch((4, 32, 16), strides=(100, 16, 1))
    error(check_gemm_operands, a, FakeTorch((16, 8)), allowed_dtypes=BF16,
          needles=("a (shape (4, 32, 16)", "batch stride 100", "overlaps its 4 matrices of 512 elements",
                   "0 (one matrix shared) or at least 512", "a.contiguous()"))
    d = FakeTorch((4, 32, 8), strides=(0, 8, 1))
    error(check_gemm_operands, FakeTorch((4, 32, 16)), FakeTorch((16, 8)), d, allowed_dtypes=BF16,
          needles=("d (shape (4, 32, 8)", "batch stride 0", "at least 256"))


def test_gemm_refuses_wrong_ranks():
    error(check_gemm_operands, FakeTorch((8,)), FakeTorch((8, 4)), allowed_dtypes=BF16,
          needles=("a has shape (8,) (rank 1)", "(m, k) or (batch, m, k)"))
    error(check_gemm_operands, FakeTorch((8, 4)), FakeTorch((2, 2, 4, 4)), allowed_dtypes=BF16,
          needles=("b has shape (2, 2, 4, 4) (rank 4)", "(k, n) or (batch, k, n)"))


def test_gemm_refuses_k_mismatch():
    error(check_gemm_operands, FakeTorch((8, 4)), FakeTorch((5, 4)), allowed_dtypes=BF16,
          needles=("a has shape (8, 4) and b has shape (5, 4)", "k = 4", "b's rows (5)"))


def test_gemm_refuses_different_batches():
    error(check_gemm_operands, FakeTorch((2, 8, 4)), FakeTorch((3, 4, 4)), allowed_dtypes=BF16,
          needles=("batch sizes [2, 3] differ",))


def test_gemm_refuses_empty_problems():
    error(check_gemm_operands, FakeTorch((0, 4)), FakeTorch((4, 4)), allowed_dtypes=BF16,
          needles=("(m, n, k, batch) = (0, 4, 4, 1) is empty", "every size >= 1"))


def test_gemm_takes_empty_problems_where_asked():
    """empty_mn (tilefuse.Gemm): m, n or the batch 0 pass with any strides (nothing is read or written) and the
    result has no layouts; dtypes and devices are still checked; k = 0 alone still needs empty_k."""
    for a, b in (((0, 4), (4, 4)), ((8, 4), (4, 0)), ((0, 8, 4), (0, 4, 4))):
        ops = check_gemm_operands(FakeTorch(a, strides=(3,) * len(a)), FakeTorch(b), allowed_dtypes=BF16,
                                  empty_mn=True)
        assert min(ops.m, ops.n, ops.batch) == 0 and ops.layout_a is None and ops.aligned
    error(check_gemm_operands, FakeTorch((0, 4), dtype="torch.float16"), FakeTorch((4, 4)), allowed_dtypes=BF16,
          empty_mn=True, needles=("same element type",))
    error(check_gemm_operands, FakeTorch((8, 0)), FakeTorch((0, 4)), allowed_dtypes=BF16, empty_mn=True,
          needles=("is empty",))


def test_gemm_refuses_dtype_mismatch_and_dtypes_not_allowed():
    error(check_gemm_operands, FakeTorch((8, 4), dtype="torch.float16"), FakeTorch((4, 4)), allowed_dtypes=HALF,
          needles=("a has dtype float16 and b has dtype bfloat16", "same element type", "b.to(a.dtype)"))
    error(check_gemm_operands, FakeTorch((8, 4), dtype="torch.float32"), FakeTorch((4, 4), dtype="torch.float32"),
          allowed_dtypes=HALF, needles=("dtype float32", "does not take", "float16, bfloat16"))
    # allowed_dtypes takes names, aliases and torch-style dtypes, and a single entry.
    f16 = FakeTorch((8, 4), dtype="torch.float16")
    assert check_gemm_operands(f16, FakeTorch((4, 4), dtype="torch.float16"), allowed_dtypes="fp16").dtype == "float16"
    d32 = FakeTorch((8, 4), dtype="torch.float32")
    error(check_gemm_operands, f16, FakeTorch((4, 4), dtype="torch.float16"), d32, allowed_dtypes=HALF,
          out_dtypes=("bfloat16",), needles=("d has dtype float32", "cannot store", "bfloat16"))
    assert check_gemm_operands(f16, FakeTorch((4, 4), dtype="torch.float16"), d32, allowed_dtypes=HALF).d.dtype == \
        "float32"


def test_gemm_refuses_operands_on_different_devices():
    a, b = FakeTorch((8, 4), device="cuda:0"), FakeTorch((4, 4), device="cuda:1")
    error(check_gemm_operands, a, b, allowed_dtypes=BF16,
          needles=("different devices", "a on cuda:0", "b on cuda:1", "b.to('cuda:0')"))
    d = FakeTorch((8, 4), device="cuda:1")
    error(check_gemm_operands, a, FakeTorch((4, 4), device="cuda:0"), d, allowed_dtypes=BF16,
          needles=("a on cuda:0, b on cuda:0, d on cuda:1", "d.to('cuda:0')"))
    cupy_like = FakeCai((4, 4), "<f2", dlpack=(2, 1))
    error(check_gemm_operands, FakeTorch((8, 4), dtype="torch.float16"), cupy_like, allowed_dtypes=HALF,
          needles=("a on cuda:0, b on cuda:1",))


def test_gemm_uses_the_tensors_own_device_index():
    plan = check_gemm_operands(FakeTorch((8, 4), device="cuda:3"), FakeTorch((4, 4), device="cuda:3"),
                               allowed_dtypes=BF16)
    assert plan.device_index == 3
    # A CUDA array that does not say its device does not conflict; the index comes from the others.
    unknown = FakeCai((4, 4), "<f2", dlpack=None)
    plan = check_gemm_operands(FakeTorch((8, 4), dtype="torch.float16", device="cuda:2"), unknown,
                               allowed_dtypes=HALF)
    assert plan.device_index == 2


def test_gemm_refuses_host_tensors():
    error(check_gemm_operands, np.zeros((8, 4), np.float16), FakeTorch((4, 4), dtype="torch.float16", device="cuda:1"),
          allowed_dtypes=HALF, needles=("a is on cpu", "CUDA device", "a.to('cuda:1')", "cupy.asarray(a)"))
    error(check_gemm_operands, FakeTorch((8, 4)), FakeTorch((4, 4), device="cpu"), allowed_dtypes=BF16,
          needles=("b is on cpu",))
    error(check_gemm_operands, FakeTorch((8, 4), dtype="torch.float16"), FakeCai((4, 4), dlpack=(3, 0)),
          allowed_dtypes=HALF,
          needles=("b is on cuda_host:0",))


def test_gemm_accepts_managed_memory():
    plan = check_gemm_operands(FakeCai((8, 4), dlpack=(13, 0)), FakeCai((4, 4), dlpack=(2, 0)), allowed_dtypes=HALF)
    assert plan.device_index == 0


def test_gemm_refuses_operands_without_a_unit_stride():
    error(check_gemm_operands, FakeTorch((8, 4), strides=(8, 2)), FakeTorch((4, 4)), allowed_dtypes=BF16,
          needles=("a (shape (8, 4), strides (8, 2))", "no dimension of stride 1", "neither row-major nor column-major",
                   "a.contiguous()"))


def test_gemm_refuses_overlapping_rows():
    expanded = FakeTorch((8, 4), strides=(0, 1))  # x.expand(8, 4)
    error(check_gemm_operands, expanded, FakeTorch((4, 4)), allowed_dtypes=BF16,
          needles=("row-major with leading dimension 0, smaller than 4", "rows overlap", "expand()",
                   "a.contiguous()"))
    error(check_gemm_operands, FakeTorch((8, 4)), FakeTorch((4, 6), strides=(1, 2)), allowed_dtypes=BF16,
          needles=("b (shape (4, 6), strides (1, 2)) is column-major with leading dimension 2, smaller than 4",
                   "columns overlap"))


def test_gemm_reports_misalignment_without_refusing():
    a = FakeTorch((8, 6), ptr=0x1002)  # lda = 6 bf16 = 12 bytes, pointer off by 2
    b = FakeTorch((6, 8))
    d = FakeTorch((2, 8, 8), strides=(72, 8, 1))  # batch stride 72 * 2 = 144 bytes: aligned
    plan = check_gemm_operands(a, b, allowed_dtypes=BF16)
    assert not plan.aligned
    assert plan.alignment_notes == ("a's data pointer 0x1002 is not 16-byte aligned",
                                    "lda = 6 (12 bytes) is not a multiple of 16 bytes")
    assert "16-byte aligned: no (the element-wise path runs)" in plan.summary()
    batched = check_gemm_operands(FakeTorch((2, 8, 8), strides=(68, 8, 1)), FakeTorch((8, 8)), d, allowed_dtypes=BF16)
    assert batched.alignment_notes == ("a's batch stride 68 (136 bytes) is not a multiple of 16 bytes",)
    unknown = FakeTorch((8, 8))
    unknown.data_ptr = lambda: (_ for _ in ()).throw(RuntimeError("no storage"))
    plan = check_gemm_operands(unknown, FakeTorch((8, 8)), allowed_dtypes=BF16)
    assert plan.alignment_notes == ("a's data pointer is unknown",)


def test_gemm_allowed_dtypes_entries_are_checked():
    with pytest.raises(ValueError, match="allowed_dtypes entry='float7'"):
        check_gemm_operands(FakeTorch((8, 4)), FakeTorch((4, 4)), allowed_dtypes=("float7",))


# -------------------------------------------------------------------------------------------------- Conv


def channels_last_strides(n, c, h, w):
    return (h * w * c, 1, w * c, c)


def test_conv_accepts_channels_last():
    x = FakeTorch((2, 16, 5, 7), strides=channels_last_strides(2, 16, 5, 7))
    assert check_conv_activation(x, "x") is x
    assert check_conv_activation(x, "x", layout="convert") is x  # already NHWC: no copy
    assert is_channels_last(describe(x, "x"))


def test_conv_refuses_nchw_with_the_expected_format_and_the_fix():
    x = FakeTorch((2, 16, 5, 7))  # NCHW-contiguous
    message = error(check_conv_activation, x, "x",
                    needles=("x must be NHWC in memory", "channels_last", "strides must be (560, 1, 112, 16)",
                             "they are (560, 35, 7, 1)", "NCHW-contiguous", "layout=\"convert\" needs a torch tensor",
                             "shape_order=\"NHWC\""))
    assert "(N, C, H, W)" in message


def test_conv_refuses_neither_format():
    x = FakeTorch((2, 16, 5, 7), strides=(1, 2, 3, 4))
    error(check_conv_activation, x, "x", needles=("neither NHWC nor NCHW packed",))
    # channels-last but not packed (a slice of the channels): refused too, the kernels read packed NHWC
    sliced = FakeTorch((2, 8, 5, 7), strides=channels_last_strides(2, 16, 5, 7))
    error(check_conv_activation, sliced, "x", needles=("strides must be (280, 1, 56, 8)",))


def test_conv_ambiguous_sizes_count_as_channels_last():
    # C = 1: NCHW-contiguous and channels-last are the same bytes; so are H = W = 1. torch says True to both.
    for shape in ((2, 1, 5, 7), (2, 16, 1, 1), (1, 1, 1, 1), (3, 1, 1, 9)):
        x = FakeTorch(shape)  # NCHW-contiguous strides
        assert check_conv_activation(x, "x") is x, shape
    # with H = W = 1, torch reports channels-last strides such as (C, 1, C, C): accepted as well
    assert check_conv_activation(FakeTorch((2, 16, 1, 1), strides=(16, 1, 16, 16)), "x") is not None
    # C = 1 with a stride that is neither: still refused where a size > 1 has the wrong stride
    error(check_conv_activation, FakeTorch((2, 1, 5, 7), strides=(35, 35, 1, 5)), "x",
          needles=("must be NHWC in memory",))


def test_conv_empty_tensors_follow_the_same_rule():
    # as torch: a size of 0 is not skipped, so an empty NCHW tensor is not channels-last
    x = FakeTorch((0, 3, 4, 4), strides=channels_last_strides(0, 3, 4, 4))
    assert check_conv_activation(x, "x") is x
    error(check_conv_activation, FakeTorch((0, 3, 4, 4)), "x", needles=("must be NHWC in memory",))


def test_conv_nhwc_shaped_arrays_with_the_flag():
    x = FakeCai((2, 5, 7, 16), "<f2")  # packed (N, H, W, C)
    assert check_conv_activation(x, "x", shape_order="NHWC") is x
    # the same array read as (N, C, H, W) is not channels-last
    error(check_conv_activation, x, "x", needles=("must be NHWC in memory",))
    transposed = FakeCai((2, 5, 7, 16), "<f2", byte_strides=(2 * 560, 2, 2 * 5, 2 * 35))
    error(check_conv_activation, transposed, "x", shape_order="NHWC",
          needles=("must be packed row-major (NHWC)", "strides (560, 112, 16, 1)", "cupy.ascontiguousarray(x)"))
    a = np.zeros((2, 5, 7, 16), np.float16)
    assert check_conv_activation(a, "x", shape_order="NHWC") is a


def test_conv_convert_needs_torch_for_duck_typed_inputs():
    x = FakeTorch((2, 16, 5, 7))
    error(check_conv_activation, x, "x", layout="convert",
          needles=("layout=\"convert\" needs a torch tensor", "conversion needs torch",
                   "strides (560, 1, 112, 16)"))


def test_conv_refuses_other_layout_modes_and_shape_orders():
    x = FakeTorch((2, 16, 5, 7), strides=channels_last_strides(2, 16, 5, 7))
    error(check_conv_activation, x, "x", layout="channels_last",
          needles=("layout='channels_last' is not a layout mode", "'require', 'convert'"))
    error(check_conv_activation, x, "x", shape_order="NHCW", needles=("shape_order='NHCW'", "'NCHW', 'NHWC'"))


def test_conv_refuses_other_ranks():
    error(check_conv_activation, FakeTorch((16, 5, 7)), "x",
          needles=("x has shape (16, 5, 7) (rank 3)", "4-D, (N, C, H, W)"))
    error(check_conv_activation, [1, 2], "x", needles=("x has type list",))


def test_empty_channels_last_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    error(empty_channels_last, (2, 16, 5, 7), "bfloat16", "cuda:0",
          needles=("empty_channels_last needs PyTorch", "not installed"))


def test_channels_last_rule_matches_the_definition_exhaustively():
    # Every small shape and stride choice: accepted exactly when each dimension of size > 1 has the stride
    # that packed NHWC gives it.
    for shape in itertools.product((1, 2, 3), repeat=4):
        n, c, h, w = shape
        want = channels_last_strides(n, c, h, w)
        for strides in itertools.product(*[(want[i], want[i] + 1, 0) for i in range(4)]):
            info = describe(FakeTorch(shape, strides), "x")
            expected = all(size == 1 or s == ws for size, s, ws in zip(shape, strides, want))
            assert is_channels_last(info) == expected, (shape, strides)


# ------------------------------------------------------------------ a stand-in torch module (no torch needed)


def fake_torch_module():
    """A tiny module named torch with what tilefuse.tensors uses of it, so that the is_torch paths (conversion,
    allocation, dtypes) run here too; the real-torch tests below repeat them where torch is installed."""
    torch = types.ModuleType("torch")

    class Named:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "torch." + self.name

    class dtype(Named):
        pass

    torch.dtype = dtype
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "float8_e4m3fn",
                 "float8_e5m2"):
        setattr(torch, name, dtype(name))
    torch.strided, torch.sparse_coo = Named("strided"), Named("sparse_coo")
    torch.contiguous_format, torch.channels_last = Named("contiguous_format"), Named("channels_last")

    def format_strides(shape, memory_format):
        n, c, h, w = shape
        return (c * h * w, 1, w * c, c) if memory_format is torch.channels_last else packed(shape)

    class Tensor(FakeTorch):
        def __init__(self, shape, strides=None, dtype=torch.bfloat16, device="cpu", layout=torch.strided):
            super().__init__(shape, strides, dtype, device)
            self.layout = layout

        def is_contiguous(self, memory_format=torch.contiguous_format):
            return all(size == 1 or s == want for size, s, want in
                       zip(self.shape, self.stride(), format_strides(self.shape, memory_format)))

        def contiguous(self, memory_format=torch.contiguous_format):
            if self.is_contiguous(memory_format):
                return self
            return Tensor(self.shape, format_strides(self.shape, memory_format), self.dtype, "cpu")

    torch.Tensor = Tensor

    def empty(shape, dtype, device, memory_format):
        return Tensor(shape, format_strides(shape, memory_format), dtype, device)

    torch.empty = empty
    return torch


@pytest.fixture
def fake_torch(monkeypatch):
    torch = fake_torch_module()
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def test_stand_in_torch_describe(fake_torch):
    x = fake_torch.Tensor((2, 3), dtype=fake_torch.float8_e4m3fn)
    info = describe(x, "x")
    assert info.is_torch and (info.dtype, info.itemsize, info.device) == ("float8_e4m3", 1, "cpu")
    error(describe, fake_torch.Tensor((4, 4), layout=fake_torch.sparse_coo), "s",
          needles=("s is a torch.sparse_coo tensor", "s.to_dense()"))


def test_stand_in_torch_conv_require_and_convert(fake_torch):
    x = fake_torch.Tensor((2, 16, 5, 7))
    error(check_conv_activation, x, "inp",
          needles=("inp must be NHWC in memory", "inp = inp.contiguous(memory_format=torch.channels_last)",
                   "or pass layout=\"convert\""))
    y = check_conv_activation(x, "inp", layout="convert")
    assert y is not x and y.stride() == (560, 1, 112, 16)
    assert check_conv_activation(y, "inp") is y
    nhwc = fake_torch.Tensor((2, 5, 7, 16), strides=(560, 1, 80, 5))
    error(check_conv_activation, nhwc, "x", shape_order="NHWC", needles=("x = x.contiguous(), or pass layout",))
    assert check_conv_activation(nhwc, "x", layout="convert", shape_order="NHWC").stride() == (560, 112, 16, 1)


def test_stand_in_torch_empty_channels_last(fake_torch):
    y = empty_channels_last((2, 16, 5, 7), "bf16", 1)
    assert (y.dtype, y.device.type, y.device.index, y.stride()) == (fake_torch.bfloat16, "cuda", 1, (560, 1, 112, 16))
    assert empty_channels_last([1, 4, 2, 2], "float8_e4m3", "cuda:0").dtype is fake_torch.float8_e4m3fn
    assert empty_channels_last((1, 4, 2, 2), fake_torch.int64, "cpu").dtype is fake_torch.int64
    error(empty_channels_last, (2, 16, 5), "bfloat16", "cpu", needles=("shape_nchw=(2, 16, 5) is not a 4-D shape",))
    error(empty_channels_last, (2, 16, 5, -1), "bfloat16", "cpu", needles=("non-negative integers",))
    error(empty_channels_last, (1, 4, 2, 2), "tfloat32", "cpu", needles=("tfloat32 has no torch dtype",
                                                                          "torch.float32"))
    error(empty_channels_last, (1, 4, 2, 2), "float7", "cpu", needles=("'float7'", "bfloat16"))


# ------------------------------------------------------------------------------------------- real torch


def test_torch_describe_and_channels_last():
    torch = pytest.importorskip("torch")
    x = torch.zeros(2, 16, 5, 7, dtype=torch.bfloat16)
    info = describe(x, "x")
    assert info.is_torch and (info.dtype, info.device, info.itemsize) == ("bfloat16", "cpu", 2)
    assert info.strides == x.stride() and info.data_ptr == x.data_ptr()
    error(check_conv_activation, x, "x",
          needles=("x must be NHWC in memory", "torch.channels_last", "x.contiguous(memory_format=torch.channels_last)",
                   "layout=\"convert\""))
    y = check_conv_activation(x, "x", layout="convert")
    assert y.is_contiguous(memory_format=torch.channels_last) and y.shape == x.shape
    assert check_conv_activation(y, "x") is y


def test_torch_channels_last_agrees_with_torch():
    torch = pytest.importorskip("torch")
    for shape in ((2, 1, 5, 7), (2, 16, 1, 1), (1, 1, 1, 1), (2, 3, 4, 5), (1, 8, 1, 3)):
        for fmt in (torch.contiguous_format, torch.channels_last):
            x = torch.empty(shape, memory_format=fmt)
            info = describe(x, "x")
            assert is_channels_last(info) == x.is_contiguous(memory_format=torch.channels_last), (shape, fmt)
    sliced = torch.empty(2, 16, 5, 7, memory_format=torch.channels_last)[:, :8]
    assert not is_channels_last(describe(sliced, "x"))
    assert not sliced.is_contiguous(memory_format=torch.channels_last)
    assert check_conv_activation(sliced, "x", layout="convert").is_contiguous(memory_format=torch.channels_last)


def test_torch_empty_channels_last_and_dtypes():
    torch = pytest.importorskip("torch")
    y = empty_channels_last((2, 16, 5, 7), "bf16", "cpu")
    assert y.dtype == torch.bfloat16 and y.is_contiguous(memory_format=torch.channels_last)
    assert y.stride() == (560, 1, 112, 16)
    assert empty_channels_last((1, 4, 2, 2), torch.float16, "cpu").dtype == torch.float16
    assert empty_channels_last((1, 4, 2, 2), "float8_e4m3", "cpu").dtype == torch.float8_e4m3fn
    error(empty_channels_last, (2, 16, 5), "bfloat16", "cpu", needles=("not a 4-D shape",))
    error(empty_channels_last, (1, 4, 2, 2), "tfloat32", "cpu", needles=("torch.float32",))


def test_torch_gemm_operands_on_the_cpu_are_refused():
    torch = pytest.importorskip("torch")
    a = torch.zeros(8, 4, dtype=torch.bfloat16)
    error(check_gemm_operands, a, a.t(), allowed_dtypes=BF16, needles=("a is on cpu", "a.to('cuda')"))
    sparse = torch.zeros(4, 4).to_sparse()
    error(describe, sparse, "s", needles=("torch.sparse_coo", "s.to_dense()"))


def test_torch_gemm_on_a_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = torch.zeros(128, 64, dtype=torch.bfloat16, device="cuda")
    b = torch.zeros(256, 64, dtype=torch.bfloat16, device="cuda").t()
    d = torch.empty(128, 256, dtype=torch.bfloat16, device="cuda")
    plan = check_gemm_operands(a, b, d, allowed_dtypes=BF16)
    assert (plan.layout_a, plan.layout_b, plan.aligned) == (ROW_MAJOR, COLUMN_MAJOR, True)
    assert plan.device_index == torch.cuda.current_device()
    y = empty_channels_last((2, 16, 5, 7), "bfloat16", 0)
    assert y.device == torch.device("cuda:0") and y.is_contiguous(memory_format=torch.channels_last)


def test_torch_gemm_on_two_gpus():
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    a = torch.zeros(8, 4, dtype=torch.float16, device="cuda:0")
    b = torch.zeros(4, 4, dtype=torch.float16, device="cuda:1")
    error(check_gemm_operands, a, b, allowed_dtypes=HALF, needles=("a on cuda:0, b on cuda:1", "b.to('cuda:0')"))
    plan = check_gemm_operands(a.to("cuda:1"), b, allowed_dtypes=HALF)
    assert plan.device_index == 1


def test_views_of_channels_last_storage_are_copied_packed_not_refused():
    """A crop, a batch stride or a channel slice of a channels-last tensor is NHWC in memory order with
    gaps: torch's conv takes it (copying), so does check_conv_activation; other orders stay refused."""
    torch = pytest.importorskip("torch")
    cl = torch.channels_last
    x = torch.randn(4, 8, 10, 12).contiguous(memory_format=cl)
    for view in (x[:, :, 1:, 2:], x[::2], x[:, 2:6], x[1:3, :, ::2]):
        y = check_conv_activation(view, "x")
        assert y is not view and y.is_contiguous(memory_format=cl) and torch.equal(y, view)
    assert check_conv_activation(x, "x") is x  # packed: no copy
    for other in (torch.randn(4, 8, 10, 12), x.transpose(2, 3)):
        with pytest.raises(TensorArgumentError, match="NHWC in memory"):
            check_conv_activation(other, "x")
