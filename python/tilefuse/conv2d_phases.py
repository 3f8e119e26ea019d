"""A strided dgrad run as the C++ planner's phases (conv::plan_dgrad_phases, conv2d_dgrad_phases.hpp): one
stride-1 Hopper fprop of dy per phase of dx (the rows a, a + stride, ... and columns b, b + stride, ...) over
the filter taps that reach it, flipped and transposed, whose kernel stores its outputs in place in dx through
the phase's row map (conv::phase_row_map; a strided copy of its own output where the planned kernel has no row
map); phases no tap reaches are zero. The Hopper dgrad runs stride 1 only, and the sm80 kernel's strided dgrad
spends most of its work on taps that reach nothing (docs/notes/conv_sm90.md, "strided dgrad by phases").
tilefuse.Conv2d("dgrad") takes this path for the identity epilogue where the planner says so."""
from dataclasses import dataclass

from .kernel_params import torch_module as _torch


@dataclass(frozen=True)
class _Phase:
    phase: tuple  # (a, b): dx[:, :, a::stride_h, b::stride_w]
    taps: tuple  # (filter rows, filter columns), the fprop's tap 0 first
    crop: tuple  # the fprop's first output row / column that is dx's
    extent: tuple  # dx rows / columns of the phase
    row_map: tuple  # gemm::sm90::OutputRowMap's fields: where the fprop's output pixels go in dx
    conv: object  # the phase's tilefuse.Conv2d("fprop", stride 1, its padding)


class PhasedDgrad:
    """The warm call of a strided dgrad by phases: call(dy, w, {}) -> dx (channels-last)."""

    def __init__(self, planned, problem, make_fprop):
        self.planned = planned
        self.stride = problem.stride
        self.out_size = problem.output_size("dgrad")
        self.filter_size = (problem.K, problem.C, problem.R, problem.S)
        convs, self.phases = {}, []
        for ph in planned["phases"]:
            if not ph["taps"][0] or not ph["taps"][1]:
                continue
            padding = tuple(ph["padding"])
            if padding not in convs:
                convs[padding] = make_fprop(padding)
            self.phases.append(_Phase(tuple(ph["phase"]), tuple(tuple(t) for t in ph["taps"]), tuple(ph["crop"]),
                                      tuple(ph["extent"]), tuple(ph["row_map"]), convs[padding]))
        self.zero_fill = len(self.phases) < len(planned["phases"])
        self._index = {}  # device -> the gather of every phase's filter from w (see filters)
        self._stores = {}  # (phase, dtype, device, alignments) -> the phase's in-place WarmCall, or None (see store)

    def _gather_index(self, device):
        """For w's channels-last storage (K, R, S, C): the element of w at each position of every phase's
        filter (C, Th, Tw, K), the phases one after another, so that one take() makes them all."""
        torch = _torch()
        if device not in self._index:
            k, c, r, s = self.filter_size
            ks, cs = torch.arange(k).view(1, 1, k), torch.arange(c).view(c, 1, 1)
            parts = []
            for phase in self.phases:
                taps = torch.tensor([th * s + tw for th in phase.taps[0] for tw in phase.taps[1]])
                parts.append((ks * (r * s * c) + taps.view(1, -1, 1) * c + cs).reshape(-1))
            with torch.inference_mode(False):  # kept: made under inference_mode, autograd could not save it
                self._index[device] = torch.cat(parts).to(device)
        return self._index[device]

    def filters(self, w):
        """Each phase's fprop filter: w's taps of the phase, transposed to (C, K, Th, Tw), channels-last: views
        of one buffer that a single gather fills."""
        k, c = self.filter_size[:2]
        with _torch().no_grad():  # kernel operands: nothing differentiates through them
            flat = w.permute(0, 2, 3, 1).reshape(-1).take(self._gather_index(w.device))
        out, start = [], 0
        for phase in self.phases:
            th, tw = len(phase.taps[0]), len(phase.taps[1])
            size = c * th * tw * k
            out.append(flat[start:start + size].view(c, th, tw, k).permute(0, 3, 1, 2))
            start += size
        return out

    def call(self, dy, w, arguments):
        torch = _torch()
        dx = torch.empty(self.out_size, dtype=dy.dtype, device=dy.device, memory_format=torch.channels_last)
        if self.zero_fill:
            dx.zero_()
        sh, sw = self.stride
        for index, (phase, sub) in enumerate(zip(self.phases, self.filters(w))):
            store = self.store(index, dy, sub, dx)
            if store is not None:
                store.call(dy, sub, {}, out=dx)
                continue
            out = phase.conv.run(dy, sub).permute(0, 2, 3, 1)
            (a, b), (ch, cw), (eh, ew) = phase.phase, phase.crop, phase.extent
            dx.permute(0, 2, 3, 1)[:, a::sh, b::sw, :] = out[:, ch:ch + eh, cw:cw + ew, :]
        return dx

    def store(self, index, dy, sub, dx=None):
        """Phase `index`'s fprop storing in place in dx (Conv2d.row_mapped_call: a WarmCall to run with out=dx),
        made at its first call for this dtype, device and alignment (dx: a channels-last tensor like the call's,
        which torch.empty always gives 16-byte aligned); None where its kernel cannot, where the fprop has no
        such call, or where none was made yet and no dx is given. Every phase after the first runs beside the
        kernel before it (they write disjoint rows of dx and read what the filters' gather finished)."""
        phase = self.phases[index]
        make = getattr(phase.conv, "row_mapped_call", None)
        if make is None:
            return None
        key = (index, dy.dtype, dy.device, dy.data_ptr() % 16, sub.data_ptr() % 16)
        if key not in self._stores:
            if dx is None:
                return None
            self._stores[key] = make(dy, sub, dx, phase.row_map, beside_previous=index > 0)
        return self._stores[key]

    def stores_in_place(self, dy, w):
        """Whether every phase's kernel stores in place in dx (no intermediate, no strided copy) for these
        operands."""
        torch = _torch()
        dx = torch.empty(self.out_size, dtype=dy.dtype, device=dy.device, memory_format=torch.channels_last)
        return all(self.store(i, dy, sub, dx) is not None for i, sub in enumerate(self.filters(w)))

    def plans(self, dy, w):
        """Each phase's fprop plan (ConvPlan), in order."""
        return [phase.conv.plan(dy, sub) for phase, sub in zip(self.phases, self.filters(w))]


@dataclass
class PhasedDgradPlan:
    """plan()'s answer for a dgrad by phases: the planner's reason and each phase's fprop plan."""

    why: str
    phases: list  # [(phase (a, b), ConvPlan)]
    family: str = "sm90"
    in_place: bool = True  # every phase's kernel stores in place in dx (else some are copied in)

    def describe(self):
        parts = [f"phase {a},{b}: {plan.describe()}" for (a, b), plan in self.phases]
        copied = (", each stored in place in dx" if self.in_place
                  else "; a phase's kernel has no row map: its output is copied into dx")
        return f"conv2d dgrad by phases ({self.why}{copied}); " + "; ".join(parts)
