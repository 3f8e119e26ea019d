// The two copies of a strided dgrad by phases (conv/device/conv2d_dgrad_by_phases.hpp) that the phases'
// fprop kernels do not do themselves: each phase's filter, gathered from the dgrad's filter w (K, R, S, C)
// as the taps that reach the phase, transposed to (C, Th, Tw, K); and, for a phase whose kernel cannot store
// through a row map, its output's crop interleaved into dx's strided sub-grid.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::conv {

// The phases' filters, up to kPhaseFilterSlots phases per launch: for phase slot i, out[offset_i + ((c Th_i
// + u) Tw_i + v) K + k] = w[k][top_h_i - stride_h u][top_w_i - stride_w v][c] (the phase's taps, its fprop's
// tap 0 first: conv2d_dgrad_phases.hpp), each phase's filter (C, Th, Tw, K) packed.
inline constexpr int kPhaseFilterSlots = 16;

struct PhaseFilterParams {
  index_t k = 0, r = 0, s = 0, c = 0;  // w's extents
  index_t stride_h = 1, stride_w = 1;
  int slots = 0;
  struct Slot {
    index_t offset = 0;     // elements from out to this phase's filter
    index_t first_tap = 0;  // the launch's taps before this phase's (blockIdx.z counts taps)
    index_t top_h = 0, top_w = 0, taps_h = 0, taps_w = 0;  // the filter row / column of its tap 0; its taps
  } slot[kPhaseFilterSlots];
};

// A 32 x 32 tile of (k, c) of one tap per block (grid: C / 32, K / 32, the slots' taps), transposed through
// shared memory so that both the reads (c contiguous in w) and the writes (k contiguous) are coalesced.
inline constexpr int kPhaseFilterTile = 32;
inline constexpr int kPhaseFilterRows = 8;  // threads per block: 32 x 8

template <class T>
__global__ void gather_phase_filters_kernel(__grid_constant__ PhaseFilterParams const p, T const* w, T* out) {
  __shared__ T tile[kPhaseFilterTile][kPhaseFilterTile + 1];
  index_t const z = blockIdx.z;
  int i = 0;
  while (i + 1 < p.slots && p.slot[i + 1].first_tap <= z) ++i;
  PhaseFilterParams::Slot const& slot = p.slot[i];
  index_t const tap = z - slot.first_tap;
  index_t const u = tap / slot.taps_w;
  index_t const v = tap - u * slot.taps_w;
  index_t const r = slot.top_h - p.stride_h * u;
  index_t const s = slot.top_w - p.stride_w * v;
  index_t const c0 = index_t{blockIdx.x} * kPhaseFilterTile;
  index_t const k0 = index_t{blockIdx.y} * kPhaseFilterTile;
  for (int row = threadIdx.y; row < kPhaseFilterTile; row += kPhaseFilterRows) {
    index_t const k = k0 + row, c = c0 + threadIdx.x;
    if (k < p.k && c < p.c) tile[row][threadIdx.x] = w[((k * p.r + r) * p.s + s) * p.c + c];
  }
  __syncthreads();
  T* const filter = out + slot.offset;
  for (int row = threadIdx.y; row < kPhaseFilterTile; row += kPhaseFilterRows) {
    index_t const c = c0 + row, k = k0 + threadIdx.x;
    if (k < p.k && c < p.c) filter[((c * slot.taps_h + u) * slot.taps_w + v) * p.k + k] = tile[threadIdx.x][row];
  }
}

// A phase's fprop output (N, P', Q', C), packed, into dx: out[n][crop_h + i][crop_w + j][c] ->
// dx[n][a + stride_h i][b + stride_w j][c] for i < extent_h, j < extent_w (dx's pixel rows ld apart).
struct PhaseScatterParams {
  index_t n = 0, channels = 0;
  index_t out_p = 0, out_q = 0;        // the phase fprop's output grid
  index_t crop_h = 0, crop_w = 0, extent_h = 0, extent_w = 0;
  index_t dx_h = 0, dx_w = 0, ld = 0;  // dx's pixel grid and the elements from one pixel to the next
  index_t a = 0, b = 0, stride_h = 1, stride_w = 1;
};

template <class T>
__global__ void scatter_phase_kernel(__grid_constant__ PhaseScatterParams const p, T const* out, T* dx) {
  index_t const total = p.n * p.extent_h * p.extent_w * p.channels;
  for (index_t e = index_t{blockIdx.x} * blockDim.x + threadIdx.x; e < total; e += index_t{gridDim.x} * blockDim.x) {
    index_t const c = e % p.channels;
    index_t const pixel = e / p.channels;
    index_t const j = pixel % p.extent_w;
    index_t const i = (pixel / p.extent_w) % p.extent_h;
    index_t const n = pixel / (p.extent_w * p.extent_h);
    index_t const from = ((n * p.out_p + p.crop_h + i) * p.out_q + p.crop_w + j) * p.channels + c;
    index_t const to = (n * p.dx_h + p.a + p.stride_h * i) * p.dx_w + p.b + p.stride_w * j;
    dx[to * p.ld + c] = out[from];
  }
}

}  // namespace tilefuse::conv
