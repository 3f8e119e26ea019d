// Programmatic dependent launch (sm_90): a kernel launched with LaunchConfig::after_previous_early may start
// while the kernel before it in the stream finishes. It must wait (grid_dependency_wait) before it reads or
// writes global memory the previous kernel may touch; allow_dependents_early lets the next such kernel
// start its own prologue on SMs this grid leaves idle or frees. Both are no-ops for a kernel launched
// without the attribute, and compile to nothing below sm_90. docs/notes/gemm_sm90.md (programmatic launch).
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

// Returns when every grid this one depends on has completed and its memory operations are visible.
TILEFUSE_DEVICE inline void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// The next grid in the stream, if launched with the attribute, may be scheduled once every block of this
// grid has called this (or exited).
TILEFUSE_DEVICE inline void allow_dependents_early() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace tilefuse::arch
