// The output's spatial extents for epilogue trees that read an output coordinate (conv/epilogue_coordinates.h:
// the scalars "conv_P", "conv_Q" and "conv_PQ"), which conv::Conv2d sets unless the caller did. Host code.
#pragma once

#include <tilefuse/conv/conv2d_problem.h>

namespace tilefuse::conv {

// Whether a tree (by its EpilogueArguments type) reads the output coordinate; only then are the arguments
// copied to add the extents. Never for wgrad: dw's rows and columns are filters and taps.
template <class EpilogueArgs>
bool reads_output_coordinates(ConvMode mode) {
  return mode != ConvMode::kWgrad &&
         (EpilogueArgs::takes("conv_P") || EpilogueArgs::takes("conv_Q") || EpilogueArgs::takes("conv_PQ"));
}

// The epilogue arguments plus the output's extents (P, Q for fprop; H, W for dgrad), unless already set.
template <class EpilogueArgs>
EpilogueArgs with_output_extents(EpilogueArgs e, Conv2dProblem const& p) {
  index_t const rows = p.mode == ConvMode::kDgrad ? p.H : p.P();
  index_t const cols = p.mode == ConvMode::kDgrad ? p.W : p.Q();
  auto set = [&](char const* name, index_t value) {
    if (EpilogueArgs::takes(name) && !e.is_set(name)) e.set(name, static_cast<float>(value));
  };
  set("conv_P", rows);
  set("conv_Q", cols);
  set("conv_PQ", rows * cols);
  return e;
}

}  // namespace tilefuse::conv
