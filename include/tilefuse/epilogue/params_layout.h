// Where each named node of an epilogue tree keeps its fields inside a kernel's Params, for hosts that
// pack the parameters as bytes instead of filling the C++ struct (the Python JIT: its kernels' Params
// types exist only inside NVRTC's compile). A kernel family's layout kernel (gemm/kernel/
// sm90_params_layout.h, conv/kernel/conv_params_layout.h) writes its own header, then calls
// write_node_layouts for the tree.
//
// Per named node (Scalar, broadcasts, AuxLoad, Store, reductions), parents before children, children in
// order, kNodeLayoutWords 64-bit words: its NodeKind, the byte offsets (from the start of Params) of data
// (or pointer), ld, batch_stride and value (-1 where the node has no such field), and its name in four
// words (NodeName's). Index types: ld / batch_stride hold index_t (int64), value float, data a pointer.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/tuple>
#include <cuda/std/utility>

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

inline constexpr int kNodeLayoutWords = 9;

namespace layout_detail {

TILEFUSE_DEVICE inline long long offset(void const* field, void const* base) {
  return static_cast<long long>(static_cast<char const*>(field) - static_cast<char const*>(base));
}

template <class Node>
TILEFUSE_DEVICE constexpr bool is_named() {
  constexpr NodeKind k = Node::kKind;
  return k == NodeKind::kScalar || k == NodeKind::kRowBroadcast || k == NodeKind::kColBroadcast ||
         k == NodeKind::kAuxLoad || k == NodeKind::kStore || k == NodeKind::kRowReduce || k == NodeKind::kColReduce;
}

template <class NodeParams, class... Kids, cuda::std::size_t... I>
TILEFUSE_DEVICE void walk_children(NodeParams const& p, void const* base, long long* nodes, int& count,
                                   NodeList<Kids...>, cuda::std::index_sequence<I...>);

// Writes the named nodes under (and including) Node; `count` is the next node's index.
template <class Node, class NodeParams>
TILEFUSE_DEVICE void walk(NodeParams const& p, void const* base, long long* nodes, int& count) {
  if constexpr (is_named<Node>()) {
    long long* slot = nodes + kNodeLayoutWords * count;
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
    constexpr NodeName name = Node::kName;
    slot[5] = static_cast<long long>(name.w0);
    slot[6] = static_cast<long long>(name.w1);
    slot[7] = static_cast<long long>(name.w2);
    slot[8] = static_cast<long long>(name.w3);
    ++count;
  }
  if constexpr (Node::Children::kSize > 0) {
    walk_children(p, base, nodes, count, typename Node::Children{},
                  cuda::std::make_index_sequence<Node::Children::kSize>{});
  }
}

template <class NodeParams, class... Kids, cuda::std::size_t... I>
TILEFUSE_DEVICE void walk_children(NodeParams const& p, void const* base, long long* nodes, int& count,
                                   NodeList<Kids...>, cuda::std::index_sequence<I...>) {
  (walk<Kids>(cuda::std::get<I>(p.children), base, nodes, count), ...);
}

}  // namespace layout_detail

// Writes the layout of every named node of `Epilogue` (whose Params is `params`, a member of the kernel
// Params starting at `base`) to `nodes`; returns how many nodes it wrote.
template <class Epilogue>
TILEFUSE_DEVICE int write_node_layouts(typename Epilogue::Params const& params, void const* base, long long* nodes) {
  int count = 0;
  layout_detail::walk<Epilogue>(params, base, nodes, count);
  return count;
}

}  // namespace tilefuse::epilogue
