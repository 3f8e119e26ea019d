#!/usr/bin/env python3
"""An independent, user-style acceptance check of tilefuse's multi-GPU promises, written from README.md,
docs/python.md ("Tensor parallelism: tilefuse.parallel", "PyTorch ops, autograd and tilefuse.nn") and the
docstrings of tilefuse.parallel / tilefuse.overlap alone (the implementation was not read to write it).

Run on one host with 2 or 4 GPUs, one process per GPU:

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      torchrun --nproc-per-node 2 scripts/gpu/user_check_parallel.py --markdown FILE

(tilefuse importable, e.g. PYTHONPATH=build/python/site after scripts/gpu/python_stage.sh's pip install; the
script also tries <repo>/build/python/site itself when `import tilefuse` fails.) Without GPUs, with fewer than 2,
or not under torchrun with WORLD_SIZE >= 2 it prints why and exits 0.

Every check is a row (name, pass / fail / skip / info, detail), run in try/except on every rank (never stopping
at the first failure); each rank's verdict is gathered (all_gather_object over a gloo group) and a row fails when
any rank failed it, with that rank's detail. Rank 0 prints a Markdown table with counts and writes it to
--markdown (rewritten after every row, so a run that dies still leaves the rows done so far). Exit 1 when a
row failed. Hangs: a per-check watchdog thread (--check-timeout) dumps every thread's stack, writes the table
so far and exits 1; faulthandler.dump_traceback_later(--total-timeout, exit=True) backs it up; the NCCL group
is created with timeout=--nccl-timeout.

Checks (references: float64 torch on the same bf16 inputs, and torch's own bf16 result to size the bound):
  env.*        versions, GPUs, NVLink multicast off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
               NVSHMEM_DISABLE_NVLS=1).
  train.*      a model of tilefuse.nn.Conv2d (channels-last, relu, residual) + tilefuse.nn.Linear (gelu), bf16,
               20 SGD steps on a fixed global batch: one GPU (every rank trains it itself on the whole batch,
               beside torch's bf16 and float64 runs of the same model: the noise scale), then DDP (NCCL) and
               FSDP2 (fully_shard per layer, contiguous parameters as documented, channels-last inputs) with the
               batch split over the ranks: losses per step and final parameters against the one-GPU run.
  tp.*         ColumnParallelLinear.from_full(fc1, activation="gelu") -> RowParallelLinear.from_full(fc2,
               reduce="all" / "scatter") with residual=x: output, input gradient and every gradient shard
               against the unsplit MLP.
  sp.*         sequence_parallel=True on both: with grad (output and gradients) and without grad (no_grad and
               inference_mode; the overlapped ops inside), three calls of a signature.
  dtensor.*    parallelize_module(ColwiseParallel / RowwiseParallel) on tilefuse.nn.Linear modules, the
               row-wise layer without and with bias.
  overlap.*    tilefuse.parallel.all_gather_linear / linear_reduce_scatter: defaults, each transport,
               schedule and replay setting, 5 shapes (rows per rank 128, 100, 264, 8, 40; bf16 and fp16) called
               twice each, all results held and checked after the last call; calls back to back; a call inside
               the caller's own CUDA graph capture after eager warm-up, replayed with new inputs.
  err.*        refusals that must raise (not hang): tensors requiring grad, unknown schedule / transport,
               residual of the wrong shape, module arguments; then the group must still compute correctly.
  timing.*     (info, not gated) 4096 tokens x hidden 4096 x intermediate 4096 split over the ranks: CUDA-event
               medians beside NCCL all_gather_into_tensor + F.linear (+ gelu) and F.linear + reduce_scatter_tensor.
"""
import os

# NVLink multicast must stay off (docs/python.md, Tensor parallelism); before torch / NCCL start.
for _key, _val in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                   ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_key, _val)

import argparse  # noqa: E402
import datetime  # noqa: E402
import faulthandler  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

ARGS = None
ROWS = []          # merged rows: (name, status, detail, seconds)
ENV_LINE = ""
T_START = time.monotonic()
STOP_REASON = None  # set identically on every rank when the time budget is spent

torch = None
F = None
dist = None
tf = None          # tilefuse
tp = None          # tilefuse.parallel
DEV = None
RANK = 0
WORLD = 1
LOCAL_RANK = 0
META = None        # gloo group for the bookkeeping (survives a broken NCCL communicator)
BF16 = F16 = F32 = F64 = None


# ---------------------------------------------------------------------------------------------------------
# rows, gathering, Markdown, watchdog

def short_tb(exc, lines=5):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).strip().splitlines()
    return " | ".join(s.strip() for s in text[-lines:])[:900]


def sync():
    torch.cuda.synchronize(DEV)


def markdown(final, extra=None):
    rows = list(ROWS) + ([extra] if extra else [])
    count = {k: sum(r[1] == k for r in rows) for k in ("pass", "fail", "skip", "info")}
    state = "" if final else " **INCOMPLETE: the run stopped or is still running after these rows**"
    out = ["# tilefuse multi-GPU user check (tilefuse.parallel, DDP, FSDP2, DTensor)", "", ENV_LINE, "",
           f"{len(rows)} checks: {count['pass']} pass, {count['fail']} fail, {count['skip']} skip, "
           f"{count['info']} info; {time.monotonic() - T_START:.0f} s{state}", "",
           "| # | check | result | s | detail |", "|---|---|---|---|---|"]
    for i, (name, status, detail, secs) in enumerate(rows, 1):
        mark = {"pass": "pass", "fail": "**FAIL**", "skip": "skip", "info": "info"}[status]
        d = str(detail).replace("|", "\\|").replace("\n", " ")
        out.append(f"| {i} | `{name}` | {mark} | {secs:.1f} | {d} |")
    out.append("")
    return "\n".join(out), count["fail"]


def write_markdown(final, extra=None):
    if RANK != 0 or not ARGS or not ARGS.markdown:
        return
    text, _ = markdown(final, extra)
    tmp = ARGS.markdown + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, ARGS.markdown)


class Watchdog:
    """Per-check deadline: on expiry dump every thread's stack, write the rows so far, exit 1. A Python thread,
    so it needs the GIL; faulthandler.dump_traceback_later (a C thread) is the backstop."""

    def __init__(self):
        self.lock = threading.Lock()
        self.deadline = None
        self.name = None
        self.seconds = 0
        threading.Thread(target=self._run, name="user-check-watchdog", daemon=True).start()

    def arm(self, name, seconds):
        with self.lock:
            self.name, self.seconds, self.deadline = name, seconds, time.monotonic() + seconds

    def disarm(self):
        with self.lock:
            self.deadline = None

    def _run(self):
        while True:
            time.sleep(0.5)
            with self.lock:
                deadline, name, seconds = self.deadline, self.name, self.seconds
            if deadline is not None and time.monotonic() > deadline:
                msg = (f"[rank {RANK}] watchdog: check {name!r} did not finish within {seconds:.0f} s (stuck on "
                       f"this rank or waiting for a peer that is); stacks follow, exiting 1")
                print(msg, file=sys.stderr, flush=True)
                try:
                    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                except Exception:
                    pass
                try:
                    write_markdown(False, (name, "fail", f"TIMED OUT after {seconds:.0f} s on rank {RANK} "
                                                         "(hang; stacks on stderr)", seconds))
                except Exception:
                    pass
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(1)


WATCHDOG = None


def gather(obj):
    objs = [None] * WORLD
    dist.all_gather_object(objs, obj, group=META)
    return objs


def merge(per_rank):
    """per_rank: [(status, detail, secs, elapsed)] of every rank -> (status, detail, secs)."""
    statuses = [p[0] for p in per_rank]
    secs = max(p[2] for p in per_rank)
    failing = [(r, p[1]) for r, p in enumerate(per_rank) if p[0] == "fail"]
    if failing:
        parts = [f"rank {r}: {d[:700]}" for r, d in failing[:2]]
        if len(failing) > 2:
            parts.append(f"(and {len(failing) - 2} more ranks)")
        if len(failing) < len(per_rank):
            parts.append(f"ranks {[r for r, p in enumerate(per_rank) if p[0] != 'fail']} passed")
        return "fail", "; ".join(parts), secs
    if len(set(statuses)) > 1:
        return "fail", f"ranks disagree: {statuses}; rank 0: {per_rank[0][1]}", secs
    return statuses[0], per_rank[0][1], secs


def check(name, fn, timeout=None, always=False):
    """Run one check on every rank. fn returns (ok, detail) with ok True / False / "skip" / "info"."""
    global STOP_REASON
    if ARGS.only and not always and not re.search(ARGS.only, name):
        return
    if STOP_REASON:
        status, detail, secs = "fail", f"not run: {STOP_REASON}", 0.0
        ROWS.append((name, status, detail, secs))
        if RANK == 0:
            print(f"[{status:4s}] {name}: {detail}", flush=True)
        write_markdown(False)
        return
    seconds = timeout or ARGS.check_timeout
    WATCHDOG.arm(name, seconds)
    t0 = time.perf_counter()
    try:
        ok, detail = fn()
        status = ok if ok in ("skip", "info") else ("pass" if ok else "fail")
    except Exception as exc:
        status, detail = "fail", f"raised {type(exc).__name__}: {short_tb(exc)}"
    try:  # a sticky CUDA error breaks every later check: say so in the row that left it
        sync()
    except Exception as exc:
        status = "fail"
        detail = f"{detail} | CUDA error after the check: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    secs = time.perf_counter() - t0
    try:
        per_rank = gather((status, str(detail), secs, time.monotonic() - T_START))
    except Exception as exc:
        print(f"[rank {RANK}] gathering the verdicts of {name!r} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        why = f"the ranks could not agree: a peer died or hung in this check (gather failed: {exc})"
        write_markdown(False, (name, "fail", why, secs))
        os._exit(1)
    WATCHDOG.disarm()
    status, detail, secs = merge(per_rank)
    ROWS.append((name, status, detail, secs))
    if RANK == 0:
        print(f"[{status:4s}] {name} ({secs:.1f}s): {detail}", flush=True)
    write_markdown(False)
    elapsed = max(p[3] for p in per_rank)  # the same on every rank: the ranks decide alike
    if elapsed > ARGS.budget and not STOP_REASON:
        STOP_REASON = f"the time budget (--budget {ARGS.budget:.0f} s) was spent after {elapsed:.0f} s"


# ---------------------------------------------------------------------------------------------------------
# tensors and comparisons

def rnd(shape, seed, dtype=None, scale=1.0):
    """Normal values from a seeded generator on this rank's GPU: the same seed gives the same tensor on
    every rank."""
    g = torch.Generator(device=DEV)
    g.manual_seed(int(seed) % (2 ** 62))
    t = torch.randn(*shape, generator=g, device=DEV, dtype=torch.float32) * scale
    return t.to(dtype or BF16)


def unit_roundoff(dtype):
    return {BF16: 2.0 ** -8, F16: 2.0 ** -11, F32: 2.0 ** -24, F64: 2.0 ** -53}[dtype]


def act64(name, z):
    if name in (None, "none"):
        return z
    return {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
            "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[name](z)


def full(t):
    """A DTensor's full value, else the tensor itself."""
    if hasattr(t, "full_tensor") and callable(getattr(t, "full_tensor")):
        return t.full_tensor()
    return t


class Cmp:
    """Error bound per tensor: max|got - ref64| <= factor * max|torch_lowp - ref64| + extra * u * max|ref64|
    (u: the unit roundoff of the dtype; torch_lowp: torch's own result in that dtype)."""

    def __init__(self, factor=3.0, extra=2.0):
        self.items = []  # (ok, text, ratio, label)
        self.factor, self.extra = factor, extra

    def fail(self, label, why):
        self.items.append((False, f"{label}: {why}", math.inf, label))

    def expect_shape(self, label, t, shape):
        if tuple(t.shape) != tuple(shape):
            self.fail(label, f"shape {tuple(t.shape)}, expected {tuple(shape)}")
            return False
        return True

    def add(self, label, got, ref64, lowp, dtype=None, reshape=False):
        if got is None:
            return self.fail(label, "is None")
        got = full(got.detach())
        if reshape and got.numel() == ref64.numel():
            got = got.reshape(ref64.shape)
        if tuple(got.shape) != tuple(ref64.shape):
            return self.fail(label, f"shape {tuple(got.shape)}, expected {tuple(ref64.shape)}")
        dtype = dtype or lowp.dtype
        if got.dtype != dtype:
            return self.fail(label, f"dtype {got.dtype}, expected {dtype}")
        g64 = got.to(F64)
        if not bool(torch.isfinite(g64).all()):
            return self.fail(label, f"{int((~torch.isfinite(g64)).sum())} non-finite values")
        err = float((g64 - ref64).abs().max()) if ref64.numel() else 0.0
        terr = float((full(lowp.detach()).to(F64).reshape(ref64.shape) - ref64).abs().max()) if ref64.numel() else 0.0
        mx = float(ref64.abs().max()) if ref64.numel() else 0.0
        bound = self.factor * terr + self.extra * unit_roundoff(dtype) * mx
        ok = err <= bound
        ratio = err / bound if bound > 0 else (0.0 if err == 0 else math.inf)
        self.items.append((ok, f"{label}: err {err:.3g} vs bound {bound:.3g} (torch {terr:.3g}, max {mx:.3g})",
                           ratio, label))

    def exact(self, label, got, want):
        got = full(got.detach())
        if tuple(got.shape) != tuple(want.shape) or not torch.equal(got, want):
            self.fail(label, "not equal to the expected values bit for bit")
        else:
            self.items.append((True, f"{label}: equal", 0.0, label))

    def result(self, prefix=""):
        if not self.items:
            return False, prefix + "nothing compared"
        bad = [t for ok, t, _, _ in self.items if not ok]
        worst = max(self.items, key=lambda it: it[2])
        head = prefix + (f"{len(self.items)} tensors; bound {self.factor:g}x torch's error vs float64 + "
                         f"{self.extra:g}u max|ref|")
        if bad:
            return False, f"{head}; {len(bad)} OUT OF BOUND: " + "; ".join(bad[:6])
        return True, f"{head}; all within, worst {worst[1]} (ratio {worst[2]:.2f})"


# ---------------------------------------------------------------------------------------------------------
# env

def check_env():
    bad = [f"{k}={os.environ.get(k)!r}" for k, v in (("NCCL_NVLS_ENABLE", "0"),
                                                    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                                                    ("NVSHMEM_DISABLE_NVLS", "1")) if os.environ.get(k) != v]
    names = gather(torch.cuda.get_device_name(DEV))
    cap = torch.cuda.get_device_capability(DEV)
    peer = all(torch.cuda.can_device_access_peer(LOCAL_RANK, j)
               for j in range(torch.cuda.device_count()) if j != LOCAL_RANK)
    try:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    except Exception:
        nccl = "?"
    detail = (f"world {WORLD}, GPUs {names}, sm_{cap[0]}{cap[1]}, peer access {peer}, torch {torch.__version__}, "
              f"NCCL {nccl}, tilefuse {getattr(tf, '__version__', '?')} from {os.path.dirname(tf.__file__)}")
    if bad:
        return False, "NVLink multicast is not off: " + ", ".join(bad) + "; " + detail
    return True, "NVLink multicast off; " + detail


# ---------------------------------------------------------------------------------------------------------
# training: one GPU, DDP, FSDP2

STEPS = 20
NET = None
SINGLE = None


def net_class():
    global NET
    if NET is not None:
        return NET

    class Net(torch.nn.Module):
        """conv(relu) -> conv(relu) + residual -> mean over H, W -> linear(gelu) -> linear. torch_impl=True runs
        the same parameters through torch's functional ops (the noise-scale runs)."""

        def __init__(self, torch_impl=False):
            super().__init__()
            self.torch_impl = torch_impl
            self.conv1 = tf.nn.Conv2d(16, 32, 3, padding=1, activation="relu")
            self.conv2 = tf.nn.Conv2d(32, 32, 3, padding=1, activation="relu")
            self.fc1 = tf.nn.Linear(32, 64, activation="gelu")
            self.fc2 = tf.nn.Linear(64, 10)

        def forward(self, x):
            if self.torch_impl:
                h = F.relu(F.conv2d(x, self.conv1.weight, self.conv1.bias, padding=1))
                h = F.relu(F.conv2d(h, self.conv2.weight, self.conv2.bias, padding=1)) + h
                p = h.mean(dim=(2, 3))
                return F.linear(F.gelu(F.linear(p, self.fc1.weight, self.fc1.bias)), self.fc2.weight, self.fc2.bias)
            h = self.conv1(x)
            h = self.conv2(h, residual=h)
            p = h.mean(dim=(2, 3))
            return self.fc2(self.fc1(p))

    NET = Net
    return Net


def build_net(torch_impl, dtype, channels_last):
    """Every rank builds the same initial parameters: a CPU float32 model from a fixed seed, rounded to bf16
    (the float64 run starts from the same bf16 values)."""
    Net = net_class()
    torch.manual_seed(ARGS.seed)
    m = Net(torch_impl)
    m.to(BF16)
    m.to(device=DEV, dtype=dtype)
    if channels_last:
        m.to(memory_format=torch.channels_last)
    return m


def train_data():
    x = rnd((16, 16, 16, 16), ARGS.seed + 11)  # bf16, global batch 16
    proj = rnd((16, 10), ARGS.seed + 12, F32)
    t = (x.float().mean(dim=(2, 3)) @ proj) * 2.0 + 0.5 * rnd((16, 10), ARGS.seed + 13, F32)
    return x, t


def params64(model):
    return {k: full(v.detach()).to(F64).clone() for k, v in model.named_parameters()}


def train(model, x, t, loss_dtype, global_mean):
    opt = torch.optim.SGD(model.parameters(), lr=ARGS.lr)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = ((out.to(loss_dtype) - t.to(loss_dtype)) ** 2).mean()
        loss.backward()
        opt.step()
        val = loss.detach().to(F64).clone()
        if global_mean:  # equal shards: the mean of the ranks' means is the global batch's mean
            dist.all_reduce(val)
            val /= WORLD
        losses.append(val)
    return [float(v) for v in losses]


def rel_update_diff(p, q, p0):
    """||p - q|| / ||q - p0||: the difference of two runs' final parameters against the size of q's update."""
    out = {}
    for k in q:
        upd = float((q[k] - p0[k]).norm())
        out[k] = float((p[k] - q[k]).norm()) / max(upd, 1e-30)
    return out


def check_train_single():
    global SINGLE
    x, t = train_data()
    runs = {}
    for tag, impl, dtype, cl in (("tf", False, BF16, True), ("torch_bf16", True, BF16, True),
                                 ("torch_fp64", True, F64, False)):
        m = build_net(impl, dtype, cl)
        p0 = params64(m)
        xin = x.to(dtype)
        if cl:
            xin = xin.contiguous(memory_format=torch.channels_last)
        losses = train(m, xin, t, F64 if dtype == F64 else F32, False)
        runs[tag] = (losses, params64(m))
    lt, pt = runs["tf"]
    lb, pb = runs["torch_bf16"]
    l64, p64 = runs["torch_fp64"]
    noise_l = max(abs(a - b) for a, b in zip(lb, l64))
    noise_p = rel_update_diff(pb, p64, p0)
    SINGLE = dict(losses=lt, params=pt, p0=p0, noise_l=noise_l, noise_p=noise_p, x=x, t=t)
    problems = []
    if not all(math.isfinite(v) for v in lt):
        problems.append(f"non-finite loss {lt}")
    if not lt[-1] <= 0.95 * lt[0]:
        problems.append(f"tilefuse's loss does not fall by 5% in {STEPS} steps ({lt[0]:.4f} -> {lt[-1]:.4f})")
    worst = max(abs(a - b) / (0.005 * abs(b) + 3 * noise_l) for a, b in zip(lt, l64))
    if worst > 1:
        problems.append(f"tilefuse's losses off float64's by {worst:.2f}x the bound (0.5% + 3x torch bf16's "
                        f"{noise_l:.2g})")
    prel = rel_update_diff(pt, p64, p0)
    pworst = max(prel, key=lambda k: prel[k] / (0.1 + 2 * noise_p[k]))
    if prel[pworst] > 0.1 + 2 * noise_p[pworst]:
        problems.append(f"parameter {pworst}: ||p_tf - p_fp64|| / ||update|| {prel[pworst]:.3f} > 0.1 + 2x torch "
                        f"bf16's {noise_p[pworst]:.3f}")
    detail = (f"{STEPS} steps lr {ARGS.lr}: tilefuse bf16 loss {lt[0]:.4f} -> {lt[-1]:.4f}, float64 "
              f"{l64[0]:.4f} -> {l64[-1]:.4f}, torch bf16 max |dL| vs float64 {noise_l:.2g}; worst loss "
              f"ratio {worst:.2f}; worst parameter {pworst} {prel[pworst]:.3f} (torch bf16 {noise_p[pworst]:.3f})")
    return (not problems), ("; ".join(problems) + " | " if problems else "") + detail


def compare_to_single(tag, losses, params, extra=""):
    s = SINGLE
    tol = [0.005 * abs(b) + s["noise_l"] for b in s["losses"]]
    ratios = [abs(a - b) / t for a, b, t in zip(losses, s["losses"], tol)]
    worst_step = max(range(STEPS), key=lambda i: ratios[i])
    prel = rel_update_diff(params, s["params"], s["p0"])
    pbound = {k: 0.1 + 0.5 * s["noise_p"][k] for k in prel}
    pworst = max(prel, key=lambda k: prel[k] / pbound[k])
    problems = []
    if set(params) != set(s["params"]):
        problems.append(f"parameter names differ: {sorted(set(params) ^ set(s['params']))}")
    if not all(math.isfinite(v) for v in losses):
        problems.append("non-finite loss")
    if ratios[worst_step] > 1:
        problems.append(f"step {worst_step}: loss {losses[worst_step]:.5f} vs one GPU {s['losses'][worst_step]:.5f}"
                        f" (bound {tol[worst_step]:.2g})")
    if prel[pworst] > pbound[pworst]:
        problems.append(f"{pworst}: ||p_{tag} - p_1gpu|| / ||update|| {prel[pworst]:.3f} > {pbound[pworst]:.3f}")
    detail = (f"{tag} loss {losses[0]:.4f} -> {losses[-1]:.4f}, one GPU {s['losses'][0]:.4f} -> "
              f"{s['losses'][-1]:.4f}; worst step {worst_step} |dL| "
              f"{abs(losses[worst_step] - s['losses'][worst_step]):.2g}"
              f" (bound 0.5% + torch bf16's own |dL| vs float64 {s['noise_l']:.2g}: ratio {ratios[worst_step]:.2f}); "
              f"parameters: worst {pworst} ||diff|| / ||update|| {prel[pworst]:.3f} (bound 0.1 + 0.5x torch bf16's "
              f"{s['noise_p'][pworst]:.3f}){extra}")
    return (not problems), ("; ".join(problems) + " | " if problems else "") + detail


def rank_block(n):
    assert n % WORLD == 0, (n, WORLD)
    b = n // WORLD
    return slice(RANK * b, (RANK + 1) * b)


def check_ddp():
    if SINGLE is None:
        return False, "no one-GPU reference (train.single_gpu failed)"
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = build_net(False, BF16, True)
    ddp = DDP(model, device_ids=[LOCAL_RANK])
    blk = rank_block(16)
    x = SINGLE["x"][blk].contiguous(memory_format=torch.channels_last)
    losses = train(ddp, x, SINGLE["t"][blk], F32, True)
    params = params64(model)
    # replicas must stay bit-identical
    sums = gather({k: (float(v.sum()), float(v.abs().max())) for k, v in params.items()})
    same = all(s == sums[0] for s in sums)
    ok, detail = compare_to_single("DDP", losses, params, f"; replicas identical across ranks: {same}")
    return ok and same, ("replicas DIFFER across ranks; " if not same else "") + detail


def check_fsdp2():
    if SINGLE is None:
        return False, "no one-GPU reference (train.single_gpu failed)"
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    model = build_net(False, BF16, False)  # FSDP2 refuses channels-last parameters (docs): contiguous ones
    for sub in (model.conv1, model.conv2, model.fc1, model.fc2):
        fully_shard(sub)
    fully_shard(model)
    sharded = sum(type(p).__name__ == "DTensor" for p in model.parameters())
    blk = rank_block(16)
    x = SINGLE["x"][blk].contiguous(memory_format=torch.channels_last)  # channels-last inputs (docs)
    losses = train(model, x, SINGLE["t"][blk], F32, True)
    params = params64(model)  # full_tensor() of each shard
    return compare_to_single("FSDP2", losses, params, f"; {sharded} parameters sharded as DTensors")


# ---------------------------------------------------------------------------------------------------------
# tensor / sequence parallel modules against the unsplit MLP

def mlp_full(d, f, seed, bias2=True):
    """The same full fc1 (d -> f) and fc2 (f -> d) on every rank: CPU init from a fixed seed, then bf16 GPU."""
    torch.manual_seed(seed)
    fc1 = torch.nn.Linear(d, f)
    fc2 = torch.nn.Linear(f, d, bias=bias2)
    return fc1.to(DEV, BF16), fc2.to(DEV, BF16)


def mlp_refs(w1, b1, w2, b2, x, g, residual=True, act="gelu"):
    """float64 and torch-bf16 results of y = act(x W1^T + b1) W2^T + b2 (+ x): y, h and every gradient of
    sum(y * g) (g None: forward only)."""
    out = {}
    for tag, dt in (("64", F64), ("bf", x.dtype)):
        leaves = {k: (v.detach().to(dt).requires_grad_(g is not None) if v is not None else None)
                  for k, v in (("x", x), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))}
        with torch.set_grad_enabled(g is not None):
            h = act64(act, F.linear(leaves["x"], leaves["w1"], leaves["b1"]))
            y = F.linear(h, leaves["w2"], leaves["b2"])
            if residual:
                y = y + leaves["x"]
        res = {"y": y.detach(), "h": h.detach()}
        if g is not None:
            y.backward(g.to(dt))
            for k, v in leaves.items():
                res["d" + k] = v.grad if v is not None else None
        out[tag] = res
    return out


def check_tp(shape, d, f, reduce, seed):
    def fn():
        fc1, fc2 = mlp_full(d, f, seed)
        x = rnd(shape + (d,), seed + 1)
        g = rnd(shape + (d,), seed + 2)
        ref = mlp_refs(fc1.weight, fc1.bias, fc2.weight, fc2.bias, x, g)
        up = tp.ColumnParallelLinear.from_full(fc1, activation="gelu")
        down = tp.RowParallelLinear.from_full(fc2, reduce=reduce)
        fb = rank_block(f)
        m = x.numel() // d
        c = Cmp()
        c.exact("up.weight (from_full shard)", up.weight, fc1.weight.detach()[fb])
        c.exact("down.weight (from_full shard)", down.weight, fc2.weight.detach()[:, fb])
        xt = x.clone().requires_grad_(True)
        h = up(xt)
        c.expect_shape("up(x)", h, shape + (f // WORLD,))
        y = down(h, residual=xt)
        if reduce == "all":
            c.expect_shape("y", y, x.shape)
            c.add("y", y, ref["64"]["y"], ref["bf"]["y"])
            gy = g
        else:
            rb = rank_block(m)
            c.add("y (this rank's rows)", y, ref["64"]["y"].reshape(m, d)[rb], ref["bf"]["y"].reshape(m, d)[rb],
                  reshape=True)
            gy = g.reshape(m, d)[rb].reshape(y.shape)
        y.backward(gy)
        c.add("x.grad", xt.grad, ref["64"]["dx"], ref["bf"]["dx"])
        c.add("up.weight.grad", up.weight.grad, ref["64"]["dw1"][fb], ref["bf"]["dw1"][fb])
        c.add("up.bias.grad", up.bias.grad, ref["64"]["db1"][fb], ref["bf"]["db1"][fb])
        c.add("down.weight.grad", down.weight.grad, ref["64"]["dw2"][:, fb], ref["bf"]["dw2"][:, fb])
        c.add("down.bias.grad", down.bias.grad, ref["64"]["db2"], ref["bf"]["db2"])
        return c.result(f"x {tuple(x.shape)}, {d}->{f}->{d}, reduce={reduce!r}, y {tuple(y.shape)}: ")
    return fn


def check_sp_grad(rows, d, f, seed):
    def fn():
        fc1, fc2 = mlp_full(d, f, seed)
        m = rows * WORLD
        x = rnd((m, d), seed + 1)
        g = rnd((m, d), seed + 2)
        ref = mlp_refs(fc1.weight, fc1.bias, fc2.weight, fc2.bias, x, g)
        up = tp.ColumnParallelLinear.from_full(fc1, activation="gelu", sequence_parallel=True)
        down = tp.RowParallelLinear.from_full(fc2, reduce="scatter", sequence_parallel=True)
        rb, fb = rank_block(m), rank_block(f)
        xr = x[rb].clone().requires_grad_(True)
        c = Cmp()
        h = up(xr)
        if c.expect_shape("up(x_rows)", h, (m, f // WORLD)):
            c.add("up(x_rows)", h, ref["64"]["h"][:, fb], ref["bf"]["h"][:, fb])
        y = down(h, residual=xr)
        c.add("y (this rank's rows)", y, ref["64"]["y"][rb], ref["bf"]["y"][rb])
        y.backward(g[rb])
        c.add("x_rows.grad", xr.grad, ref["64"]["dx"][rb], ref["bf"]["dx"][rb])
        c.add("up.weight.grad", up.weight.grad, ref["64"]["dw1"][fb], ref["bf"]["dw1"][fb])
        c.add("up.bias.grad", up.bias.grad, ref["64"]["db1"][fb], ref["bf"]["db1"][fb])
        c.add("down.weight.grad", down.weight.grad, ref["64"]["dw2"][:, fb], ref["bf"]["dw2"][:, fb])
        c.add("down.bias.grad (replicated)", down.bias.grad, ref["64"]["db2"], ref["bf"]["db2"])
        return c.result(f"rows/rank {rows}, {d}->{f}->{d}: ")
    return fn


def check_sp_nograd(rows, d, f, seed, mode):
    def fn():
        fc1, fc2 = mlp_full(d, f, seed)
        m = rows * WORLD
        up = tp.ColumnParallelLinear.from_full(fc1, activation="gelu", sequence_parallel=True)
        down = tp.RowParallelLinear.from_full(fc2, reduce="scatter", sequence_parallel=True)
        rb, fb = rank_block(m), rank_block(f)
        ctx = torch.no_grad if mode == "no_grad" else torch.inference_mode
        calls = []
        for call in range(3):  # a signature's first, second (Hopper: the signalled schedules) and third call
            x = rnd((m, d), seed + 10 + call)
            calls.append((x, ))
        outs = []
        with ctx():
            for (x,) in calls:
                xr = x[rb]
                h = up(xr)
                y = down(h, residual=xr)
                outs.append((h, y))
        sync()
        c = Cmp()
        for i, ((x,), (h, y)) in enumerate(zip(calls, outs)):
            ref = mlp_refs(fc1.weight, fc1.bias, fc2.weight, fc2.bias, x, None)
            if c.expect_shape(f"call {i} up(x_rows)", h, (m, f // WORLD)):
                c.add(f"call {i} up(x_rows)", h, ref["64"]["h"][:, fb], ref["bf"]["h"][:, fb])
            c.add(f"call {i} y", y, ref["64"]["y"][rb], ref["bf"]["y"][rb])
            if y.requires_grad:
                c.fail(f"call {i} y", f"requires grad under {mode}")
        return c.result(f"{mode}, rows/rank {rows}, {d}->{f}->{d}, 3 calls (results held): ")
    return fn


_MESH = None


def check_dtensor(bias2, seed):
    def fn():
        global _MESH
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
        if _MESH is None:
            _MESH = init_device_mesh("cuda", (WORLD,))
        d, f = 512, 2048

        class MLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = tf.nn.Linear(d, f, activation="gelu")
                self.fc2 = tf.nn.Linear(f, d, bias=bias2)

            def forward(self, x):
                return self.fc2(self.fc1(x))

        torch.manual_seed(seed)
        model = MLP().to(DEV, BF16)
        w1, b1 = model.fc1.weight.detach().clone(), model.fc1.bias.detach().clone()
        w2 = model.fc2.weight.detach().clone()
        b2 = model.fc2.bias.detach().clone() if bias2 else None
        x = rnd((4, 50, d), seed + 1)
        g = rnd((4, 50, d), seed + 2)
        ref = mlp_refs(w1, b1, w2, b2, x, g, residual=False)
        parallelize_module(model, _MESH, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
        kinds = type(model.fc1.weight).__name__
        xt = x.clone().requires_grad_(True)
        y = model(xt)
        c = Cmp()
        c.add("y", y, ref["64"]["y"], ref["bf"]["y"])
        y = full(y)
        y.backward(g)
        c.add("x.grad", xt.grad, ref["64"]["dx"], ref["bf"]["dx"])
        c.add("fc1.weight.grad", model.fc1.weight.grad, ref["64"]["dw1"], ref["bf"]["dw1"])
        c.add("fc1.bias.grad", model.fc1.bias.grad, ref["64"]["db1"], ref["bf"]["db1"])
        c.add("fc2.weight.grad", model.fc2.weight.grad, ref["64"]["dw2"], ref["bf"]["dw2"])
        if bias2:
            c.add("fc2.bias.grad", model.fc2.bias.grad, ref["64"]["db2"], ref["bf"]["db2"])
        return c.result(f"fc2 bias={bias2}, parameters {kinds}, x {tuple(x.shape)}: ")
    return fn


# ---------------------------------------------------------------------------------------------------------
# overlapped forward ops

# (rows per rank, k, n, dtype, bias?, activation)
AG_SHAPES = [(128, 1024, 1024, "bf16", True, "gelu"), (100, 512, 768, "bf16", True, "gelu"),
             (264, 768, 512, "bf16", False, None), (8, 256, 256, "bf16", True, "silu"),
             (40, 256, 384, "fp16", True, "relu")]
# (rows per rank, k per rank, n, dtype, bias?, residual?)
RS_SHAPES = [(128, 512, 1024, "bf16", True, True), (100, 384, 768, "bf16", True, True),
             (264, 256, 512, "bf16", False, False), (8, 256, 256, "bf16", True, True),
             (40, 256, 384, "fp16", True, False)]


def _dt(name):
    return {"bf16": BF16, "fp16": F16}[name]


def ag_case(shape, seed):
    """This rank's inputs of all_gather_linear and the references of its result. x: every rank's blocks
    from one seed (each rank knows the whole gathered x); weight and bias: this rank's own."""
    rows, k, n, dtn, has_bias, act = shape
    dt = _dt(dtn)
    xf = rnd((rows * WORLD, k), seed, dt)
    w = rnd((n, k), seed + 1000 * (RANK + 1), dt, k ** -0.5)
    b = rnd((n,), seed + 1000 * (RANK + 1) + 1, dt) if has_bias else None
    ref64 = act64(act, F.linear(xf.to(F64), w.to(F64), b.to(F64) if b is not None else None))
    lowp = act64(act, F.linear(xf, w, b))
    return dict(x=xf[rank_block(rows * WORLD)].contiguous(), w=w, b=b, act=act, ref64=ref64, lowp=lowp,
                label=f"{rows}x{k}x{n} {dtn}{' bias' if has_bias else ''} {act}")


def rs_case(shape, seed):
    """This rank's inputs of linear_reduce_scatter and the references: every rank's x_r, w_r are drawn from
    seeds each rank knows, so each computes the whole sum itself."""
    rows, k, n, dtn, has_bias, has_res = shape
    dt = _dt(dtn)
    m = rows * WORLD
    xs = [rnd((m, k), seed + 1000 * (q + 1), dt) for q in range(WORLD)]
    ws = [rnd((n, k), seed + 1000 * (q + 1) + 1, dt, (k * WORLD) ** -0.5) for q in range(WORLD)]
    b = rnd((n,), seed + 7, dt) if has_bias else None
    res = rnd((rows, n), seed + 1000 * (RANK + 1) + 2, dt) if has_res else None
    rb = rank_block(m)
    full64 = sum(F.linear(x.to(F64), w.to(F64)) for x, w in zip(xs, ws))
    ref64 = full64[rb]
    lowp = None
    for x, w in zip(xs, ws):  # NCCL + torch in sequence: bf16 partials summed in bf16
        p = F.linear(x, w)
        lowp = p if lowp is None else lowp + p
    lowp = lowp[rb]
    if b is not None:
        ref64 = ref64 + b.to(F64)
        lowp = lowp + b
    if res is not None:
        ref64 = ref64 + res.to(F64)
        lowp = lowp + res
    return dict(x=xs[RANK], w=ws[RANK], b=b, res=res, ref64=ref64, lowp=lowp,
                label=f"{rows}x{k}x{n} {dtn}{' bias' if has_bias else ''}{' residual' if has_res else ''}")


def call_ag(case, **kw):
    return tp.all_gather_linear(case["x"], case["w"], case["b"], case["act"], **kw)


def call_rs(case, **kw):
    return tp.linear_reduce_scatter(case["x"], case["w"], case["b"], case["res"], **kw)


def check_overlap(op, kwargs, seed):
    def fn():
        shapes = AG_SHAPES if op == "ag" else RS_SHAPES
        make, call = (ag_case, call_ag) if op == "ag" else (rs_case, call_rs)
        cases = [(i, c, make(s, seed + 100 * i + 10 * c)) for i, s in enumerate(shapes) for c in range(2)]
        outs = []
        with torch.no_grad():
            for i, c, case in cases:  # each shape twice, new values; every result held
                outs.append(call(case, **kwargs))
        sync()
        cmp = Cmp()
        for (i, c, case), out in zip(cases, outs):
            cmp.add(f"{case['label']} call {c + 1}", out, case["ref64"], case["lowp"])
        return cmp.result(f"{kwargs or 'defaults'}: {len(shapes)} shapes x 2 calls: ")
    return fn


def check_back_to_back(seed):
    def fn():
        ags = [ag_case(AG_SHAPES[0], seed + i) for i in range(6)]
        rss = [rs_case(RS_SHAPES[0], seed + 50 + i) for i in range(6)]
        outs = []
        with torch.no_grad():
            for a, r in zip(ags, rss):  # an MLP's order, nothing synchronized between the calls
                outs.append((call_ag(a), call_rs(r)))
            for a in ags:
                outs.append((call_ag(a), None))
        sync()
        c = Cmp()
        for j, (oa, orr) in enumerate(outs):
            a = ags[j % 6]
            c.add(f"all_gather_linear #{j}", oa, a["ref64"], a["lowp"])
            if orr is not None:
                c.add(f"linear_reduce_scatter #{j}", orr, rss[j]["ref64"], rss[j]["lowp"])
        return c.result("defaults, 6 x (all_gather_linear, linear_reduce_scatter) then 6 all_gather_linear, "
                        "back to back, checked after one synchronize: ")
    return fn


def check_cuda_graph(seed):
    def fn():
        ag_shape = (96, 512, 640, "bf16", True, "gelu")  # signatures no other check used
        rs_shape = (96, 320, 512, "bf16", True, True)
        c = Cmp()
        with torch.no_grad():
            for i in range(2):  # eager warm-up: a signature's first and second call
                a, r = ag_case(ag_shape, seed + i), rs_case(rs_shape, seed + 20 + i)
                oa, orr = call_ag(a), call_rs(r)
                sync()
                c.add(f"eager warm-up {i + 1} all_gather_linear", oa, a["ref64"], a["lowp"])
                c.add(f"eager warm-up {i + 1} linear_reduce_scatter", orr, r["ref64"], r["lowp"])
            a0, r0 = ag_case(ag_shape, seed + 5), rs_case(rs_shape, seed + 25)
            sx, sw, sb = a0["x"].clone(), a0["w"].clone(), a0["b"].clone()
            rx, rw, rbias, rres = r0["x"].clone(), r0["w"].clone(), r0["b"].clone(), r0["res"].clone()
            sync()
            dist.barrier()
            graph = torch.cuda.CUDAGraph()
            # thread_local: torch's own NCCL watchdog thread may query events while this thread captures
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                g_ag = tp.all_gather_linear(sx, sw, sb, "gelu")
                g_rs = tp.linear_reduce_scatter(rx, rw, rbias, rres)
            sync()
            dist.barrier()
            for rep in range(3):  # replay with new input values copied into the captured tensors
                a, r = ag_case(ag_shape, seed + 40 + rep), rs_case(rs_shape, seed + 60 + rep)
                sx.copy_(a["x"])
                rx.copy_(r["x"])
                rres.copy_(r["res"])
                # weights / bias of this rank are drawn from the same seeds as a0 / r0 only for call 0: copy too
                sw.copy_(a["w"])
                sb.copy_(a["b"])
                rw.copy_(r["w"])
                rbias.copy_(r["b"])
                graph.replay()
                sync()
                c.add(f"replay {rep + 1} all_gather_linear", g_ag.clone(), a["ref64"], a["lowp"])
                c.add(f"replay {rep + 1} linear_reduce_scatter", g_rs.clone(), r["ref64"], r["lowp"])
            a, r = ag_case(ag_shape, seed + 80), rs_case(rs_shape, seed + 90)
            oa, orr = call_ag(a), call_rs(r)
            sync()
            c.add("eager after the capture all_gather_linear", oa, a["ref64"], a["lowp"])
            c.add("eager after the capture linear_reduce_scatter", orr, r["ref64"], r["lowp"])
        return c.result("defaults; 2 eager calls, capture of both ops in the caller's CUDA graph, 3 replays with "
                        "new inputs, 1 eager call: ")
    return fn


# ---------------------------------------------------------------------------------------------------------
# refusals

def expect_raise(call, words):
    def fn():
        try:
            out = call()
            sync()
        except Exception as exc:
            msg = f"{type(exc).__name__}: {str(exc).strip()}"
            named = any(w.lower() in msg.lower() for w in words)
            if named:
                return True, "raised " + msg[:400]
            return False, f"raised, but the message names none of {words}: " + msg[:400]
        return False, f"did not raise (returned {type(out).__name__} {tuple(getattr(out, 'shape', ()))})"
    return fn


def error_checks(seed):
    made = {}

    def inputs():  # made inside the first check that needs them (an exception there is that row's)
        if not made:
            made["a"] = ag_case(AG_SHAPES[1], seed)
            made["r"] = rs_case(RS_SHAPES[1], seed + 1)
        return made["a"], made["r"]

    def ag_x_grad():
        a, _ = inputs()
        return tp.all_gather_linear(a["x"].clone().requires_grad_(True), a["w"], a["b"], "gelu")

    def ag_w_param():
        a, _ = inputs()
        return tp.all_gather_linear(a["x"], torch.nn.Parameter(a["w"].clone()), a["b"], "gelu")

    def rs_x_grad():
        _, r = inputs()
        return tp.linear_reduce_scatter(r["x"].clone().requires_grad_(True), r["w"], r["b"], r["res"])

    def ag_with(**kw):
        return lambda: call_ag(inputs()[0], **kw)

    def rs_with(**kw):
        return lambda: call_rs(inputs()[1], **kw)

    def rs_residual(rows_factor, extra_rows):
        def call():
            _, r = inputs()
            rows, n = r["res"].shape
            bad = torch.zeros(rows * rows_factor + extra_rows, n, device=DEV, dtype=BF16)
            return tp.linear_reduce_scatter(r["x"], r["w"], r["b"], bad)
        return call

    cases = [
        ("err.ag_x_requires_grad", ag_x_grad, ["grad"]),
        ("err.ag_weight_parameter_requires_grad", ag_w_param, ["grad"]),
        ("err.rs_x_requires_grad", rs_x_grad, ["grad"]),
        ("err.ag_unknown_schedule", ag_with(schedule="bogus"), ["bogus", "schedule"]),
        ("err.rs_unknown_schedule", rs_with(schedule="bogus"), ["bogus", "schedule"]),
        ("err.rs_schedule_of_the_other_op", rs_with(schedule="gated"), ["gated", "schedule"]),
        ("err.ag_unknown_transport", ag_with(transport="bogus"), ["bogus", "transport"]),
        ("err.rs_unknown_transport", rs_with(transport="bogus"), ["bogus", "transport"]),
        ("err.rs_residual_extra_row", rs_residual(1, 1), ["residual"]),
        ("err.rs_residual_all_rows", rs_residual(WORLD, 0), ["residual"]),
    ]
    for name, call, words in cases:
        check(name, expect_raise(call, words))

    def module_cases():
        fc1, fc2 = mlp_full(256, 512, seed + 5)
        return fc1, fc2

    check("err.row_parallel_unknown_reduce", expect_raise(
        lambda: tp.RowParallelLinear.from_full(module_cases()[1], reduce="bogus"), ["bogus", "reduce"]))
    check("err.row_parallel_sequence_parallel_with_reduce_all", expect_raise(
        lambda: tp.RowParallelLinear.from_full(module_cases()[1], reduce="all", sequence_parallel=True),
        ["scatter", "sequence"]))

    def rows_not_split():
        _, fc2 = module_cases()
        down = tp.RowParallelLinear.from_full(fc2, reduce="scatter")
        h = rnd((2 * WORLD + 1, 512 // WORLD), seed + 9)
        return down(h)
    check("err.row_parallel_scatter_rows_not_split", expect_raise(
        rows_not_split, ["row", "split", "divis", "multiple"]))

    def still_works():
        with torch.no_grad():
            a2, r2 = ag_case(AG_SHAPES[1], seed + 20), rs_case(RS_SHAPES[1], seed + 21)
            oa, orr = call_ag(a2), call_rs(r2)
            sync()
        c = Cmp()
        c.add("all_gather_linear", oa, a2["ref64"], a2["lowp"])
        c.add("linear_reduce_scatter", orr, r2["ref64"], r2["lowp"])
        return c.result("after the refusals, the same signatures with the defaults: ")
    check("err.group_still_works", still_works)

    def param_under_no_grad():
        # Docs: "No autograd (they refuse tensors that require grad)". Whether an nn.Parameter weight is refused
        # under torch.no_grad() too is not said: reported, not gated, unless it returns a wrong result.
        a3 = ag_case(AG_SHAPES[1], seed + 30)
        with torch.no_grad():
            try:
                out = tp.all_gather_linear(a3["x"], torch.nn.Parameter(a3["w"].clone()), a3["b"], "gelu")
                sync()
            except Exception as exc:
                msg = f"{type(exc).__name__}: {str(exc)[:300]}"
                if "grad" in msg.lower():
                    return "info", "refused under no_grad: " + msg
                return False, "raised, and not for requiring grad: " + msg
        c = Cmp()
        c.add("all_gather_linear", out, a3["ref64"], a3["lowp"])
        ok, detail = c.result("accepted under no_grad: ")
        return ("info" if ok else False), detail
    check("err.ag_parameter_weight_under_no_grad", param_under_no_grad)


# ---------------------------------------------------------------------------------------------------------
# timing (not gated)

def check_timing(seed):
    def fn():
        M, H, I = 4096, 4096, 4096
        rows, fw = M // WORLD, I // WORLD
        x_rows = rnd((rows, H), seed)
        w1 = rnd((fw, H), seed + 1 + RANK, scale=H ** -0.5)
        b1 = rnd((fw,), seed + 10 + RANK)
        hcols = rnd((M, fw), seed + 20 + RANK)
        w2 = rnd((H, fw), seed + 30 + RANK, scale=I ** -0.5)
        b2 = rnd((H,), seed + 40)
        res = rnd((rows, H), seed + 50 + RANK)
        x_full = torch.empty((M, H), device=DEV, dtype=BF16)
        rs_out = torch.empty((rows, H), device=DEV, dtype=BF16)

        def ag_tf():
            return tp.all_gather_linear(x_rows, w1, b1, "gelu")

        def ag_ref():
            dist.all_gather_into_tensor(x_full, x_rows)
            return F.gelu(F.linear(x_full, w1, b1))

        def rs_tf():
            return tp.linear_reduce_scatter(hcols, w2, b2, res)

        def rs_ref():
            dist.reduce_scatter_tensor(rs_out, F.linear(hcols, w2))
            return rs_out + b2 + res

        def median_ms(fn_, warm=5, iters=20):
            for _ in range(warm):
                fn_()
            times = []
            for _ in range(iters):
                dist.barrier()
                sync()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                fn_()
                e1.record()
                sync()
                times.append(e0.elapsed_time(e1))
            return statistics.median(times)

        with torch.no_grad():
            out = {}
            for name, fn_ in (("ag_tf", ag_tf), ("ag_ref", ag_ref), ("rs_tf", rs_tf), ("rs_ref", rs_ref)):
                out[name] = median_ms(fn_)
            # the timed results agree with NCCL + torch's (sanity, loose: both are bf16)
            ra, rr = ag_ref().float(), rs_ref().float()
            d_ag = float((ag_tf().float() - ra).abs().max()) / max(float(ra.abs().max()), 1e-30)
            d_rs = float((rs_tf().float() - rr).abs().max()) / max(float(rr.abs().max()), 1e-30)
        per_rank = gather(out)
        worst = {k: max(p[k] for p in per_rank) for k in out}
        agree = d_ag <= 2 ** -5 and d_rs <= 2 ** -5  # a few bf16 ulps of the largest value
        detail = (f"tokens {M} x hidden {H} x intermediate {I} over {WORLD} ranks, median ms (slowest rank), "
                  f"as called after a barrier: all_gather_linear {worst['ag_tf']:.3f} vs NCCL all_gather + "
                  f"F.linear + gelu {worst['ag_ref']:.3f} ({worst['ag_ref'] / worst['ag_tf']:.2f}x); "
                  f"linear_reduce_scatter {worst['rs_tf']:.3f} vs F.linear + NCCL reduce_scatter + bias + residual "
                  f"{worst['rs_ref']:.3f} ({worst['rs_ref'] / worst['rs_tf']:.2f}x) (> 1: tilefuse faster); "
                  f"max |tilefuse - "
                  f"torch| / max|torch| {d_ag:.2g} / {d_rs:.2g} (must be <= 2^-5)")
        return ("info" if agree else False), detail
    return fn


# ---------------------------------------------------------------------------------------------------------
# main

def preflight():
    """None when this process can run the checks, else why not."""
    reasons = []
    try:
        import torch as _torch
    except Exception as exc:
        return f"torch is not importable ({type(exc).__name__}: {exc})"
    if not _torch.cuda.is_available():
        reasons.append(f"no CUDA GPU visible (torch {_torch.__version__}: torch.cuda.is_available() is False)")
    elif _torch.cuda.device_count() < 2:
        reasons.append(f"{_torch.cuda.device_count()} GPU visible, at least 2 are needed")
    ws = os.environ.get("WORLD_SIZE")
    if ws is None or "LOCAL_RANK" not in os.environ:
        reasons.append("not started by torchrun (WORLD_SIZE / LOCAL_RANK unset): "
                       "torchrun --nproc-per-node 2 scripts/gpu/user_check_parallel.py")
    elif int(ws) < 2:
        reasons.append(f"WORLD_SIZE={ws}: at least 2 processes are needed (torchrun --nproc-per-node 2 ...)")
    elif not reasons:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", ws))
        if local > _torch.cuda.device_count():
            reasons.append(f"{local} processes on this host but {_torch.cuda.device_count()} GPUs: one process "
                           "per GPU is needed")
    return "; ".join(reasons) or None


def import_tilefuse():
    global tf, tp
    try:
        import tilefuse
    except ImportError:
        site = os.path.join(REPO, "build", "python", "site")
        if not os.path.isdir(os.path.join(site, "tilefuse")):
            raise
        sys.path.insert(0, site)
        for mod in [m for m in sys.modules if m == "tilefuse" or m.startswith("tilefuse.")]:
            del sys.modules[mod]
        import tilefuse
    import tilefuse.nn  # noqa: F401
    import tilefuse.ops  # noqa: F401
    import tilefuse.parallel
    tf, tp = tilefuse, tilefuse.parallel


def init_distributed():
    global dist, DEV, RANK, WORLD, LOCAL_RANK, META
    import torch.distributed as _dist
    dist = _dist
    LOCAL_RANK = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(LOCAL_RANK)
    DEV = torch.device("cuda", LOCAL_RANK)
    timeout = datetime.timedelta(seconds=ARGS.nccl_timeout)
    try:
        dist.init_process_group("nccl", timeout=timeout, device_id=DEV)
    except TypeError:
        dist.init_process_group("nccl", timeout=timeout)
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    META = dist.new_group(backend="gloo", timeout=timeout)


def run_checks():
    check("env.gpus_and_nvls_off", check_env)
    # training
    check("train.single_gpu (reference for ddp / fsdp2)", check_train_single, timeout=max(ARGS.check_timeout, 240))
    check("train.ddp_20_steps_vs_single_gpu", check_ddp)
    check("train.fsdp2_20_steps_vs_single_gpu", check_fsdp2)
    # tensor parallel modules
    s = ARGS.seed
    check("tp.mlp_reduce_all_4x64x512_f2048", check_tp((4, 64), 512, 2048, "all", s + 100))
    check("tp.mlp_reduce_scatter_4x64x512_f2048", check_tp((4, 64), 512, 2048, "scatter", s + 200))
    check("tp.mlp_reduce_all_3x40x384_f1536", check_tp((3, 40), 384, 1536, "all", s + 300))
    check("tp.mlp_reduce_scatter_3x40x384_f1536", check_tp((3, 40), 384, 1536, "scatter", s + 400))
    # sequence parallel
    check("sp.grad_rows128_512_f2048", check_sp_grad(128, 512, 2048, s + 500))
    check("sp.grad_rows30_384_f1536", check_sp_grad(30, 384, 1536, s + 600))
    # DTensor
    check("dtensor.colwise_rowwise_fc2_no_bias", check_dtensor(False, s + 1000))
    check("dtensor.colwise_rowwise_fc2_bias", check_dtensor(True, s + 1100))
    # sequence parallel without grad: the overlapped ops inside the modules (after the autograd checks, so that
    # a failure part way through an overlapped op cannot leave the group unusable for them)
    check("sp.no_grad_rows128_512_f2048", check_sp_nograd(128, 512, 2048, s + 700, "no_grad"))
    check("sp.no_grad_rows30_384_f1536", check_sp_nograd(30, 384, 1536, s + 800, "no_grad"))
    check("sp.inference_mode_rows100_512_f2048", check_sp_nograd(100, 512, 2048, s + 900, "inference_mode"))
    # overlapped ops
    for i, kw in enumerate([{}, {"transport": "copy_engine", "schedule": "halves"},
                            {"transport": "copy_engine", "schedule": "gated"},
                            {"transport": "copy_engine", "replay": True},
                            {"transport": "copy_engine", "replay": False},
                            {"transport": "p2p"}]):
        name = "defaults" if not kw else "_".join(f"{k}={v}" for k, v in kw.items())
        check(f"overlap.all_gather_linear.{name}", check_overlap("ag", kw, s + 2000 + 1000 * i))
    for i, kw in enumerate([{}, {"transport": "copy_engine", "schedule": "steps"},
                            {"transport": "copy_engine", "schedule": "signalled"},
                            {"transport": "copy_engine", "replay": True},
                            {"transport": "copy_engine", "replay": False},
                            {"transport": "p2p"}]):
        name = "defaults" if not kw else "_".join(f"{k}={v}" for k, v in kw.items())
        check(f"overlap.linear_reduce_scatter.{name}", check_overlap("rs", kw, s + 9000 + 1000 * i))
    check("overlap.back_to_back_unsynchronized", check_back_to_back(s + 16000))
    check("overlap.inside_callers_cuda_graph", check_cuda_graph(s + 17000))
    # refusals
    error_checks(s + 18000)
    # timing
    check("timing.tokens4096_hidden4096_inter4096 (not gated)", check_timing(s + 19000))


def main(argv=None):
    global ARGS, torch, F, BF16, F16, F32, F64, ENV_LINE, WATCHDOG
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--markdown", metavar="FILE", help="rank 0 writes the Markdown table here")
    p.add_argument("--only", metavar="REGEX", help="run only the checks whose name matches")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--lr", type=float, default=0.2, help="SGD learning rate of the training checks")
    p.add_argument("--check-timeout", type=float, default=150.0, help="seconds one check may take (watchdog)")
    p.add_argument("--total-timeout", type=float, default=560.0,
                   help="seconds the whole run may take (faulthandler exits the process)")
    p.add_argument("--budget", type=float, default=330.0,
                   help="seconds after which the remaining checks are not started (they fail as not run)")
    p.add_argument("--nccl-timeout", type=float, default=120.0, help="process groups' timeout in seconds")
    ARGS = p.parse_args(argv)

    why = preflight()
    if why:
        print(f"user_check_parallel: nothing checked: {why}", flush=True)
        if ARGS.markdown and os.environ.get("RANK", "0") == "0":
            with open(ARGS.markdown, "w") as f:
                f.write(f"# tilefuse multi-GPU user check\n\nnothing checked: {why}\n")
        return 0

    faulthandler.enable()
    faulthandler.dump_traceback_later(ARGS.total_timeout, exit=True)
    WATCHDOG = Watchdog()
    import torch as _torch
    import torch.nn.functional as _F
    torch, F = _torch, _F
    BF16, F16, F32, F64 = torch.bfloat16, torch.float16, torch.float32, torch.float64
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    WATCHDOG.arm("init_process_group", ARGS.nccl_timeout + 30)
    init_distributed()
    WATCHDOG.disarm()
    ENV_LINE = (f"world {WORLD} ({os.environ.get('LOCAL_WORLD_SIZE', '?')} on this host), "
                f"{torch.cuda.get_device_name(DEV)}, torch {torch.__version__}, seed {ARGS.seed}")
    if RANK == 0:
        print(ENV_LINE, flush=True)

    imported = [None]

    def do_import():
        import_tilefuse()
        imported[0] = True
        return True, f"tilefuse {getattr(tf, '__version__', '?')} from {os.path.dirname(tf.__file__)}"
    check("import tilefuse, tilefuse.nn, tilefuse.ops, tilefuse.parallel", do_import, always=True)
    if ROWS and ROWS[-1][1] == "pass":
        run_checks()

    text, nfail = markdown(True)
    if RANK == 0:
        print()
        print(text, flush=True)
    write_markdown(True)
    WATCHDOG.arm("destroy_process_group", 60)
    try:
        dist.barrier(group=META)
        dist.destroy_process_group()
    except Exception as exc:
        print(f"[rank {RANK}] shutting the group down: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    WATCHDOG.disarm()
    faulthandler.cancel_dump_traceback_later()
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
