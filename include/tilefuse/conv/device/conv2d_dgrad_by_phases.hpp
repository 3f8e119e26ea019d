// conv::Conv2d's strided dgrad by phases (conv2d_dgrad_phases.hpp): where plan_dgrad_phases says so, the
// dgrad runs as one stride-1 Hopper fprop of dy per phase of dx, each storing its pixels in place in dx
// through the phase's row map; the same plan and the same kernels the Python package runs. The workspace
// holds every phase's filter (gathered from w by one small kernel) and, for a phase whose kernel
// has no row map, its output, which a second small kernel interleaves into dx. Without a workspace, or where
// a phase cannot run, conv::Conv2d runs the sm80 kernel instead (describe() says which). Host code.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_dgrad_phases.hpp>
#include <tilefuse/conv/kernel/dgrad_phase_copies.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/leaves.h>
#include <tilefuse/epilogue/sinks.h>
#include <tilefuse/gemm/device/sm80_launch.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::conv {

// Whether a tree stores the accumulator as 16-bit D and nothing else: the dgrads that may run by phases (any
// other tree would see each phase's rows instead of dx's; the kernels' row maps store 16-bit D).
template <class Tree>
inline constexpr bool is_bare_store = false;
template <epilogue::NodeName Name, class T>
inline constexpr bool is_bare_store<epilogue::Store<Name, T, epilogue::Acc, RowMajor>> = sizeof(T) == 2;

// Element: the dgrad's operands; Tree: its bare store; Fprop: conv::Conv2d's fprop of the same element and
// tree, which runs each phase (its Arguments::output_rows stores through a row map).
template <class Element, class Tree, class Fprop>
struct DgradByPhases {
  using Stored = typename Tree::Element;
  using FpropArguments = typename Fprop::Arguments;
  static constexpr std::size_t kAlignment = 256;  // of each part of the workspace, from its 16-byte-aligned start

  struct Phase {
    DgradPhase phase;
    FpropArguments args;            // x = dy, w = its filter in the workspace, D = dx through its row map
    bool mapped = false;            // its kernel stores through the row map; else through the intermediate
    std::size_t filter_offset = 0;  // bytes into the workspace
  };
  struct Run {
    std::vector<Phase> phases;        // those a tap reaches
    bool zero_fill = false;           // some phase no tap reaches: dx is zero there
    std::size_t filter_bytes = 0;     // the workspace: every phase's filter, then the intermediate
    std::size_t intermediate_bytes = 0;
    std::string why_not;              // empty: every phase can run
    std::size_t workspace_bytes() const { return filter_bytes + intermediate_bytes; }
    bool in_place() const {
      return std::all_of(phases.begin(), phases.end(), [](Phase const& ph) { return ph.mapped; });
    }
  };

  // The phases' fprop arguments for the dgrad `p` (dx: dx_epilogue's D, `ld` elements from one pixel to the
  // next). The filters' addresses are the workspace's at run(); until then dy stands in for them (the same
  // 16-byte alignment as the workspace's filters wherever the planner's answer depends on it).
  static Run prepare(DgradPhases const& planned, Conv2dProblem const& p, typename Fprop::EpilogueArgs const& dx_epilogue,
                     index_t ld, Element const* dy, ConvOverrides const& overrides) {
    Run run;
    for (DgradPhase const& ph : planned.phases) {
      if (ph.empty()) {
        run.zero_fill = true;
        continue;
      }
      Phase phase;
      phase.phase = ph;
      phase.filter_offset = run.filter_bytes;
      run.filter_bytes += aligned(static_cast<std::size_t>(ph.fprop.K * ph.fprop.R * ph.fprop.S * ph.fprop.C) * sizeof(Element));
      FpropArguments& a = phase.args;
      a.problem = ph.fprop;
      a.x = dy;
      a.w = dy;
      a.epilogue = dx_epilogue;
      a.split_k = 1;
      a.overrides = overrides;
      a.output_rows = phase_row_map(ph, p, ld);
      phase.mapped = Fprop::can_implement(a).ok();
      if (!phase.mapped) {  // its kernel has no row map: through the intermediate, if it runs at all
        a.output_rows = {};
        if (Status const s = Fprop::can_implement(a); !s.ok() && run.why_not.empty()) {
          run.why_not = status_message("phase (", ph.a, ", ", ph.b, ")'s fprop cannot run: ", s.message());
        }
        std::size_t const out = static_cast<std::size_t>(ph.fprop.N * ph.fprop.P() * ph.fprop.Q() * ph.fprop.K);
        run.intermediate_bytes = std::max(run.intermediate_bytes, aligned(out * sizeof(Stored)));
      }
      run.phases.push_back(std::move(phase));
    }
    // The gather's grid: (C / 32, K / 32, a launch's taps).
    if (run.why_not.empty() && (p.K > index_t{65535} * kPhaseFilterTile || p.R * p.S > 65535)) {
      run.why_not = status_message("K = ", p.K, " or the filter's ", p.R * p.S, " taps exceed the filter gather's grid");
    }
    return run;
  }

  // dx = the dgrad of dy over w: zeros where no tap reaches, each phase's filter gathered, each phase's fprop.
  static Status run(Run run, Conv2dProblem const& p, Element const* w, Stored* dx, index_t ld, void* workspace,
                    cudaStream_t stream, char const* op) {
    TILEFUSE_RETURN_IF_ERROR(gemm::detail::check_workspace_alignment(op, workspace, "the dgrad by phases"));
    char* const base = static_cast<char*>(workspace);
    if (run.zero_fill) {
      cudaError_t const e = cudaMemset2DAsync(dx, static_cast<std::size_t>(ld) * sizeof(Stored), 0,
                                              static_cast<std::size_t>(p.C) * sizeof(Stored),
                                              static_cast<std::size_t>(p.N * p.H * p.W), stream);
      if (e != cudaSuccess) return cuda_error(op, "zeroing dx where no filter tap reaches", e);
    }
    TILEFUSE_RETURN_IF_ERROR(gather_filters(run, p, w, reinterpret_cast<Element*>(base), stream));
    for (Phase& phase : run.phases) phase.args.w = reinterpret_cast<Element const*>(base + phase.filter_offset);
    auto* const intermediate = reinterpret_cast<Stored*>(base + run.filter_bytes);
    // The phases write disjoint rows of dx and read only dy and their filters, which the launches above
    // finished: each after the first runs beside the one before it (ConvOverrides::phases_in_turn: not).
    bool first = true;
    for (Phase& phase : run.phases) {
      phase.args.beside_previous = !first && !phase.args.overrides.phases_in_turn;
      first = false;
      if (phase.mapped) {
        TILEFUSE_RETURN_IF_ERROR(Fprop::run(phase.args, nullptr, stream));
        continue;
      }
      phase.args.epilogue.set(Tree::kName.chars().text, intermediate);
      TILEFUSE_RETURN_IF_ERROR(Fprop::run(phase.args, nullptr, stream));
      TILEFUSE_RETURN_IF_ERROR(scatter(phase.phase, p, intermediate, dx, ld, stream));
    }
    return {};
  }

  // describe()'s text: the planner's reason and each phase's fprop.
  static std::string describe(DgradPhases const& planned, Run const& run) {
    std::string text = "conv2d dgrad by phases (" + planned.why;
    text += run.in_place() ? ", each stored in place in dx" : "; a phase's kernel has no row map: its output is copied into dx";
    text += ")";
    for (Phase const& phase : run.phases) {
      text += status_message("; phase ", phase.phase.a, ",", phase.phase.b, ": ", Fprop::describe(phase.args));
    }
    return text;
  }

 private:
  static std::size_t aligned(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

  static Status cuda_error(char const* op, char const* what, cudaError_t e) {
    return {StatusCode::kCudaError, status_message(op, ": ", what, " failed: ", cudaGetErrorString(e))};
  }

  // Every phase's filter into the workspace: one launch per kPhaseFilterSlots phases (strides up to 4 x 4: one).
  static Status gather_filters(Run const& run, Conv2dProblem const& p, Element const* w, Element* filters,
                               cudaStream_t stream) {
    for (std::size_t first = 0; first < run.phases.size(); first += kPhaseFilterSlots) {
      PhaseFilterParams params;
      params.k = p.K, params.r = p.R, params.s = p.S, params.c = p.C;
      params.stride_h = p.stride_h, params.stride_w = p.stride_w;
      index_t taps = 0;
      for (std::size_t i = first; i < std::min(run.phases.size(), first + kPhaseFilterSlots); ++i) {
        DgradPhase const& ph = run.phases[i].phase;
        PhaseFilterParams::Slot& slot = params.slot[params.slots++];
        slot.offset = static_cast<index_t>(run.phases[i].filter_offset / sizeof(Element));
        slot.first_tap = taps;
        slot.top_h = ph.h.taps.front(), slot.top_w = ph.w.taps.front();
        slot.taps_h = static_cast<index_t>(ph.h.taps.size()), slot.taps_w = static_cast<index_t>(ph.w.taps.size());
        taps += slot.taps_h * slot.taps_w;
      }
      LaunchConfig config;
      config.grid = dim3(static_cast<unsigned>((p.C + kPhaseFilterTile - 1) / kPhaseFilterTile),
                         static_cast<unsigned>((p.K + kPhaseFilterTile - 1) / kPhaseFilterTile), static_cast<unsigned>(taps));
      config.block = dim3(kPhaseFilterTile, kPhaseFilterRows);
      config.stream = stream;
      void* args[] = {&params, &w, &filters};
      TILEFUSE_RETURN_IF_ERROR(
          host_adapter().launch(config, reinterpret_cast<void const*>(&gather_phase_filters_kernel<Element>), args));
    }
    return {};
  }

  static Status scatter(DgradPhase const& ph, Conv2dProblem const& p, Stored const* out, Stored* dx, index_t ld,
                        cudaStream_t stream) {
    PhaseScatterParams params;
    params.n = p.N, params.channels = p.C;
    params.out_p = ph.fprop.P(), params.out_q = ph.fprop.Q();
    params.crop_h = ph.h.crop, params.crop_w = ph.w.crop, params.extent_h = ph.h.extent, params.extent_w = ph.w.extent;
    params.dx_h = p.H, params.dx_w = p.W, params.ld = ld;
    params.a = ph.a, params.b = ph.b, params.stride_h = p.stride_h, params.stride_w = p.stride_w;
    index_t const total = p.N * ph.h.extent * ph.w.extent * p.C;
    LaunchConfig config;
    config.grid = dim3(static_cast<unsigned>(std::min<index_t>((total + 255) / 256, 4096)));
    config.block = dim3(256);
    config.stream = stream;
    void* args[] = {&params, &out, &dx};
    return host_adapter().launch(config, reinterpret_cast<void const*>(&scatter_phase_kernel<Stored>), args);
  }
};

}  // namespace tilefuse::conv
