"""Tensor parallelism over torch.distributed with tilefuse's fused linears (Megatron's split of an MLP):

    up   = ColumnParallelLinear(d, 4 * d, activation="gelu")   # each rank: 4d / world output features
    down = RowParallelLinear(4 * d, d)                         # each rank: 4d / world input features
    y = down(up(x), residual=x)                                # = x + gelu(x @ W1^T + b1) @ W2^T + b2

ColumnParallelLinear computes act(x @ w_r^T + b_r) for its rank's block of output features in one kernel (bias
and activation fused); its output stays split along the features, as the next RowParallelLinear takes it.
RowParallelLinear computes each rank's partial product x_r @ w_r^T; the bias and the residual are added in the
epilogue of one rank's GEMM (rank 0 of the group: added once, the sum is unchanged; the other ranks still give
them their gradients), then the partials are
summed by an all-reduce (every rank gets y), or by a reduce-scatter over the rows (reduce="scatter": rank r
gets rows [r * m / world, (r + 1) * m / world), sequence parallelism's layout).

Backward is Megatron's: the column-parallel layer's input gradient is all-reduced (x is replicated), the
row-parallel layer's output gradient is the same on every rank (all-reduce) or all-gathered (reduce-scatter).

Sequence parallelism (Megatron's): with sequence_parallel=True on both layers, each rank holds a block of the
rows (tokens) between the layers' pairs: the column-parallel layer gathers them and the row-parallel one
reduce-scatters back to them, adding the bias and this rank's residual rows,

    up   = ColumnParallelLinear(d, 4 * d, activation="gelu", sequence_parallel=True)
    down = RowParallelLinear(4 * d, d, reduce="scatter", sequence_parallel=True)
    y = down(up(x_rows), residual=x_rows)                      # this rank's rows of the MLP block

and without grad (inference) the two are tilefuse.overlap's all_gather_linear and linear_reduce_scatter, whose
collectives overlap the GEMMs.
Any torch.distributed backend runs it (NCCL on GPUs; the CPU tests use gloo). Parameters are each rank's
shards: load them with ColumnParallelLinear.from_full / RowParallelLinear.from_full from a full Linear.

The same split through DTensor: importing this module registers how DTensor may shard tilefuse's linear ops, so
torch.distributed.tensor.parallel.parallelize_module(model, mesh, {"fc1": ColwiseParallel(), "fc2":
RowwiseParallel()}) runs on tilefuse.nn.Linear modules (give the row-wise one no bias, or DTensor gathers its
operands to add it once).
"""
from .errors import require_torch

torch = require_torch("tilefuse.parallel")
import torch.distributed as dist  # noqa: E402

from . import ops  # noqa: E402
from .op_common import activation_name  # noqa: E402
from .overlap import _split, _wants_grad, _world, all_gather_linear, linear_reduce_scatter  # noqa: E402, F401

_linear = ops.linear  # the fused linear (a test on CPU substitutes a reference)


class _CopyToParallel(torch.autograd.Function):
    """Identity forward; the gradient all-reduced (the input is replicated over the group)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _AllReduce(torch.autograd.Function):
    """The sum of every rank's x forward; the gradient passed through (every rank holds the same one)."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _scatter_rows(x, group):
    """This rank's block of rows (dim 0) of the sum of every rank's x."""
    world, _ = _world(group)
    out = x.new_empty((x.shape[0] // world, *x.shape[1:]))
    dist.reduce_scatter_tensor(out, x.contiguous(), group=group)
    return out


def _gather_rows(x, group):
    """Every rank's x, stacked along its rows (dim 0) in rank order."""
    world, _ = _world(group)
    full = x.new_empty((x.shape[0] * world, *x.shape[1:]))
    dist.all_gather_into_tensor(full, x.contiguous(), group=group)
    return full


class _ReduceScatterRows(torch.autograd.Function):
    """Rank r's block of rows of the sum of every rank's x (rows: dim 0 of x as (rows, ...)); the gradient
    all-gathered back to every row."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _scatter_rows(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _gather_rows(grad, ctx.group), None


class _GatherRows(torch.autograd.Function):
    """Every rank's block of rows, in rank order (sequence parallelism's all-gather: rows are dim 0 of (rows,
    features)); the gradient summed over the ranks and scattered back to this rank's rows."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _gather_rows(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _scatter_rows(grad, ctx.group), None


class _AddedElsewhere(torch.autograd.Function):
    """The row-parallel bias and residual on the ranks that do not add them (rank 0's epilogue does): x
    unchanged forward; backward, their gradients as if they had been added here (every rank holds the same
    output gradient), so that replicated parameters and inputs get the same gradient on every rank."""

    @staticmethod
    def forward(ctx, x, bias, residual):
        ctx.has_bias, ctx.has_residual = bias is not None, residual is not None
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad_bias = None
        if ctx.has_bias:  # summed in float32 at least (bf16 / fp16 gradients)
            wide = torch.promote_types(grad.dtype, torch.float32)
            grad_bias = grad.reshape(-1, grad.shape[-1]).sum(0, dtype=wide).to(grad.dtype)
        return grad, grad_bias, grad if ctx.has_residual else None


class ColumnParallelLinear(torch.nn.Module):
    """act(x @ weight^T + bias) for this rank's out_features / world output features: weight is this rank's
    (out_features / world, in_features) block of rows of the full weight, bias its block. forward(x) takes the
    replicated input and returns this rank's features (..., out_features / world). With sequence_parallel=True,
    x is this rank's block of rows instead ((rows, in_features), or (..., in_features) flattened to rows) and the
    result is every rank's rows, (world * rows, out_features / world): without grad by all_gather_linear (the
    all-gather overlapped with the GEMM, tilefuse.overlap); with grad an all-gather then the fused linear, its
    backward reduce-scattering x's gradient (Megatron's sequence parallelism)."""

    def __init__(self, in_features, out_features, bias=True, activation=None, group=None, device=None, dtype=None,
                 sequence_parallel=False):
        super().__init__()
        world, _ = _world(group)
        self.activation = activation_name(activation)
        self.group, self.sequence_parallel = group, bool(sequence_parallel)
        self.in_features, self.out_features = in_features, out_features
        local = _split(out_features, world, "out_features")
        self.weight = torch.nn.Parameter(torch.empty(local, in_features, device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(local, device=device, dtype=dtype)) if bias else None
        torch.nn.init.normal_(self.weight, std=in_features ** -0.5)

    def forward(self, x):
        if not self.sequence_parallel:
            return _linear(_CopyToParallel.apply(x, self.group), self.weight, self.bias, None, self.activation)
        rows = x.reshape(-1, self.in_features)
        if _wants_grad(rows, self.weight, self.bias):
            return _linear(_GatherRows.apply(rows, self.group), self.weight, self.bias, None, self.activation)
        return all_gather_linear(rows, self.weight, self.bias, self.activation, group=self.group)

    @classmethod
    def from_full(cls, linear, activation=None, group=None, sequence_parallel=False):
        """This rank's shard of a full torch.nn.Linear (every rank passes the same one)."""
        world, rank = _world(group)
        module = cls(linear.in_features, linear.out_features, linear.bias is not None, activation, group,
                     linear.weight.device, linear.weight.dtype, sequence_parallel)
        with torch.no_grad():
            module.weight.copy_(linear.weight.chunk(world, 0)[rank])
            if linear.bias is not None:
                module.bias.copy_(linear.bias.chunk(world, 0)[rank])
        return module

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features} (this rank: "
                f"{self.weight.shape[0]}), activation={self.activation!r}"
                + (", sequence_parallel=True" if self.sequence_parallel else ""))


class RowParallelLinear(torch.nn.Module):
    """x @ weight^T + bias + residual with x split along its features (a ColumnParallelLinear's output):
    weight is this rank's (out_features, in_features / world) block of columns of the full weight. The bias and
    the residual ride in the epilogue of the group's rank 0's GEMM. reduce="all": every rank gets the whole
    result; reduce="scatter": this rank's block of rows (rows: the input's leading dimensions flattened; their
    count must split over the group). With sequence_parallel=True (reduce="scatter" only) the residual is this
    rank's block of rows too, (rows / world, out_features), as a ColumnParallelLinear(sequence_parallel=True)
    took its input, and each rank adds the bias and the residual to its own rows: without grad by
    linear_reduce_scatter (the reduce-scatter overlapped with the GEMMs, tilefuse.overlap); with grad the
    partial product reduce-scattered, then the bias (its gradient all-reduced: it is replicated) and the
    residual added."""

    def __init__(self, in_features, out_features, bias=True, reduce="all", group=None, device=None, dtype=None,
                 sequence_parallel=False):
        super().__init__()
        if reduce not in ("all", "scatter"):
            raise ValueError(f"reduce={reduce!r}: use 'all' (all-reduce) or 'scatter' (reduce-scatter over rows)")
        if sequence_parallel and reduce != "scatter":
            raise ValueError("sequence_parallel=True reduce-scatters the rows: pass reduce='scatter'")
        world, _ = _world(group)
        self.reduce, self.group, self.sequence_parallel = reduce, group, bool(sequence_parallel)
        self.in_features, self.out_features = in_features, out_features
        local = _split(in_features, world, "in_features")
        self.weight = torch.nn.Parameter(torch.empty(out_features, local, device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype)) if bias else None
        torch.nn.init.normal_(self.weight, std=in_features ** -0.5)

    def forward(self, x, residual=None):
        world, rank = _world(self.group)
        if self.sequence_parallel:
            return self._forward_rows(x, residual, world)
        if residual is not None and residual.shape != (*x.shape[:-1], self.out_features):
            raise ValueError(f"residual has shape {tuple(residual.shape)}; it must be the full output's "
                             f"{(*x.shape[:-1], self.out_features)} (every rank passes the same one)")
        if rank == 0:  # adds the bias and the residual: once in the sum
            partial = _linear(x, self.weight, self.bias, residual, None)
        else:
            partial = _AddedElsewhere.apply(_linear(x, self.weight, None, None, None), self.bias, residual)
        if self.reduce == "all":
            return _AllReduce.apply(partial, self.group)
        rows = partial.reshape(-1, self.out_features)
        _split(rows.shape[0], world, "the rows of the output")
        return _ReduceScatterRows.apply(rows, self.group)

    def _forward_rows(self, x, residual, world):
        rows = x.reshape(-1, self.weight.shape[1])
        mine = _split(rows.shape[0], world, "the rows of the output")
        if residual is not None and tuple(residual.shape) != (mine, self.out_features):
            raise ValueError(f"residual has shape {tuple(residual.shape)}; with sequence_parallel=True it must be this "
                             f"rank's block of the output's rows, {(mine, self.out_features)}")
        if not _wants_grad(rows, self.weight, self.bias, residual):
            return linear_reduce_scatter(rows, self.weight, self.bias, residual, group=self.group)
        out = _ReduceScatterRows.apply(_linear(rows, self.weight, None, None, None), self.group)
        if self.bias is not None:
            out = out + _CopyToParallel.apply(self.bias, self.group)  # each rank's rows; the gradient summed
        return out + residual if residual is not None else out

    @classmethod
    def from_full(cls, linear, reduce="all", group=None, sequence_parallel=False):
        """This rank's shard of a full torch.nn.Linear (every rank passes the same one)."""
        world, rank = _world(group)
        module = cls(linear.in_features, linear.out_features, linear.bias is not None, reduce, group,
                     linear.weight.device, linear.weight.dtype, sequence_parallel)
        with torch.no_grad():
            module.weight.copy_(linear.weight.chunk(world, 1)[rank])
            if linear.bias is not None:
                module.bias.copy_(linear.bias)
        return module

    def extra_repr(self):
        return (f"in_features={self.in_features} (this rank: {self.weight.shape[1]}), "
                f"out_features={self.out_features}, reduce={self.reduce!r}"
                + (", sequence_parallel=True" if self.sequence_parallel else ""))


# ---- DTensor: tilefuse's linear ops under torch.distributed.tensor.parallel ----

def _register_dtensor_sharding():
    """How DTensor may shard tilefuse::linear and the ops of its backward (tilefuse::mm, linear_grad_preact), so
    that parallelize_module(model, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}) runs on
    tilefuse.nn.Linear modules: column-wise (weight, bias and output split along the features), row-wise (x and
    weight split along k, a partial sum out: only without a bias, residual or activation, which the partials
    would each add; with them DTensor gathers and runs the op whole), by rows (x, residual and output split
    along the tokens), or replicated."""
    try:
        from torch.distributed.tensor import Partial, Replicate, Shard
        from torch.distributed.tensor.experimental import register_sharding
    except ImportError:  # a torch without DTensor's custom-op sharding: the modules above still work
        return

    def optional(t, placement):
        return None if t is None else placement

    @register_sharding(torch.ops.tilefuse.linear.default)
    def _linear_sharding(x, weight, bias=None, residual=None, activation="none"):
        last = x.ndim - 1
        strategies = [
            ([Replicate()], [Replicate(), Replicate(), optional(bias, Replicate()), optional(residual, Replicate()),
                             None]),
            ([Shard(last)], [Replicate(), Shard(0), optional(bias, Shard(0)), optional(residual, Shard(last)), None])]
        if last > 0:
            strategies.append(([Shard(0)], [Shard(0), Replicate(), optional(bias, Replicate()),
                                             optional(residual, Shard(0)), None]))
        if bias is None and residual is None and activation == "none":
            strategies.append(([Partial()], [Shard(last), Shard(1), None, None, None]))
        return strategies

    @register_sharding(torch.ops.tilefuse.mm.default)
    def _mm_sharding(a, b):
        return [([Replicate()], [Replicate(), Replicate()]), ([Shard(0)], [Shard(0), Replicate()]),
                ([Shard(1)], [Replicate(), Shard(1)]), ([Partial()], [Shard(1), Shard(0)])]

    @register_sharding(torch.ops.tilefuse.linear_grad_preact.default)
    def _grad_preact_sharding(grad_y, x, weight, bias, activation):
        return [([Replicate()], [Replicate(), Replicate(), Replicate(), optional(bias, Replicate()), None]),
                ([Shard(1)], [Shard(1), Replicate(), Shard(0), optional(bias, Shard(0)), None]),
                ([Shard(0)], [Shard(0), Shard(0), Replicate(), optional(bias, Replicate()), None])]


_register_dtensor_sharding()

__all__ = ["ColumnParallelLinear", "RowParallelLinear", "all_gather_linear", "linear_reduce_scatter"]
