// Where every field of an sm90 GemmKernel's Params lives, for a host that packs the parameters as bytes
// instead of filling the C++ struct: the Python JIT, whose kernels' Params types exist only inside
// NVRTC's compile. A one-thread kernel, compiled into the same CUBIN as the GEMM kernel, writes the byte
// offsets (from the start of Params) of each field into `out`; the host reads them once per kernel.
//
// out[0..15]   the header: kLayoutVersion, sizeof(Params), offsets of tma_a, tma_b, batch_mask_a,
//              batch_mask_b, problem.m, problem.n, problem.k, problem.batch, tiles_m, tiles_n, tiles,
//              then kThreads, kSmemBytes, and the number of named epilogue nodes;
// out[16 + 9 i ...]  named node i (Scalar, broadcasts, AuxLoad, Store, reductions), parents before children,
//              children in order: its NodeKind, the offsets of data (or pointer), ld, batch_stride and value
//              (-1 where the node has no such field), and its name in four 64-bit words (NodeName's).
// Index types: the offsets of problem / ld / batch_stride fields hold index_t (int64), tiles_* and
// batch_mask_* int, value float, data a pointer.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/tuple>
#include <cuda/std/utility>

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/fragment.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>

namespace tilefuse::gemm::sm90 {

inline constexpr long long kLayoutVersion = 1;
inline constexpr int kLayoutHeader = 16;
inline constexpr int kLayoutPerNode = 9;

namespace layout_detail {

TILEFUSE_DEVICE inline long long offset(void const* field, void const* base) {
  return static_cast<long long>(static_cast<char const*>(field) - static_cast<char const*>(base));
}

template <class Node>
TILEFUSE_DEVICE constexpr bool is_named() {
  constexpr epilogue::NodeKind k = Node::kKind;
  using K = epilogue::NodeKind;
  return k == K::kScalar || k == K::kRowBroadcast || k == K::kColBroadcast || k == K::kAuxLoad || k == K::kStore ||
         k == K::kRowReduce || k == K::kColReduce;
}

template <class NodeParams, class... Kids, cuda::std::size_t... I>
TILEFUSE_DEVICE void walk_children(NodeParams const& p, void const* base, long long* out, int& count,
                                   epilogue::NodeList<Kids...>, cuda::std::index_sequence<I...>);

// Writes the named nodes under (and including) Node; `count` is the next node's index.
template <class Node, class NodeParams>
TILEFUSE_DEVICE void walk(NodeParams const& p, void const* base, long long* out, int& count) {
  if constexpr (is_named<Node>()) {
    long long* slot = out + kLayoutHeader + kLayoutPerNode * count;
    slot[0] = static_cast<long long>(Node::kKind);
    if constexpr (requires { p.data; }) {
      slot[1] = offset(&p.data, base);
    } else if constexpr (requires { p.pointer; }) {
      slot[1] = offset(&p.pointer, base);
    } else {
      slot[1] = -1;
    }
    if constexpr (requires { p.ld; }) {
      slot[2] = offset(&p.ld, base);
    } else {
      slot[2] = -1;
    }
    if constexpr (requires { p.batch_stride; }) {
      slot[3] = offset(&p.batch_stride, base);
    } else {
      slot[3] = -1;
    }
    if constexpr (requires { p.value; }) {
      slot[4] = offset(&p.value, base);
    } else {
      slot[4] = -1;
    }
    constexpr epilogue::NodeName name = Node::kName;
    slot[5] = static_cast<long long>(name.w0);
    slot[6] = static_cast<long long>(name.w1);
    slot[7] = static_cast<long long>(name.w2);
    slot[8] = static_cast<long long>(name.w3);
    ++count;
  }
  if constexpr (Node::Children::kSize > 0) {
    walk_children(p, base, out, count, typename Node::Children{},
                  cuda::std::make_index_sequence<Node::Children::kSize>{});
  }
}

template <class NodeParams, class... Kids, cuda::std::size_t... I>
TILEFUSE_DEVICE void walk_children(NodeParams const& p, void const* base, long long* out, int& count,
                                   epilogue::NodeList<Kids...>, cuda::std::index_sequence<I...>) {
  (walk<Kids>(cuda::std::get<I>(p.children), base, out, count), ...);
}

}  // namespace layout_detail

template <class Kernel, class Epilogue>
__global__ void sm90_params_layout_kernel(long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  typename Kernel::Params const p{};
  void const* base = &p;
  using layout_detail::offset;
  out[0] = kLayoutVersion;
  out[1] = static_cast<long long>(sizeof(p));
  out[2] = offset(&p.tma_a, base);
  out[3] = offset(&p.tma_b, base);
  out[4] = offset(&p.batch_mask_a, base);
  out[5] = offset(&p.batch_mask_b, base);
  out[6] = offset(&p.problem.m, base);
  out[7] = offset(&p.problem.n, base);
  out[8] = offset(&p.problem.k, base);
  out[9] = offset(&p.problem.batch, base);
  out[10] = offset(&p.tiles_m, base);
  out[11] = offset(&p.tiles_n, base);
  out[12] = offset(&p.tiles, base);
  out[13] = Kernel::kThreads;
  out[14] = Kernel::kSmemBytes;
  int count = 0;
  layout_detail::walk<Epilogue>(p.epilogue, base, out, count);
  out[15] = count;
}

// An upper bound of the layout's size in 64-bit words for a tree with `named_nodes` named nodes.
TILEFUSE_HOST_DEVICE constexpr int params_layout_words(int named_nodes) {
  return kLayoutHeader + kLayoutPerNode * named_nodes;
}

}  // namespace tilefuse::gemm::sm90
