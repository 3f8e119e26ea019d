// The sm90 packed epilogue's staged matrix input (opt-in; docs/notes/gemm_sm90.md, packed loads): a tree
// with one 16-bit row-major AuxLoad (the residual, C) gets it through shared memory, so that each
// accumulator pair reads its two elements with one 4-byte shared load instead of a global one.
//   StagedAux<Tree>        the tree's AuxLoad nodes: how many, and the first one's type;
//   staged_aux_params(p)   where that node's Params sit inside the tree's Params;
//   ColumnLoad<Node>       the part of a node's load() that depends only on the columns (bias, scalars):
//                          loaded once per 8-column group at the start of a chunk;
//   RowLoad<Node>          the part of a node's load() that depends only on the row (a per-row scale,
//                          ColBroadcast): loaded once per tile for each of a lane's two rows;
//   StagedAuxLoad<Node>    a node's load(), with the AuxLoad answered from the staged chunk, a
//                          ColBroadcast taken from the row loads and the rest from the column loads.
//                          Trees without an AuxLoad (bias, per-row and per-column scales) use it too.
//   StagedColumnNodes, staged_column_params, StagedColumnLoad: the same for the tree's one column
//                          vector (the bias) where the TMA residual brings it along (sm90_gemm.h kTmaColumn).
// The staged chunk is 16 rows x 64 columns in the packed staging layout, or in TMA's 128-byte swizzle
// (sm90_epilogue_staging.h).
#pragma once

#include <cuda/std/cstring>
#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include <tilefuse/core/platform.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/compute.h>
#include <tilefuse/epilogue/fragment.h>
#include <tilefuse/epilogue/leaves.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>

namespace tilefuse::gemm::sm90 {

namespace detail {
template <class... Ts>
struct FirstNonVoid {
  using type = void;
};
template <class T, class... Ts>
struct FirstNonVoid<T, Ts...> {
  using type = cuda::std::conditional_t<cuda::std::is_void_v<T>, typename FirstNonVoid<Ts...>::type, T>;
};
}  // namespace detail

// The nodes of one kind in a sink-free tree (Compute nodes and leaves): how many, and the first one's type.
template <epilogue::NodeKind Kind, class Node>
struct NodesOfKind {
  static constexpr int kCount = Node::kKind == Kind ? 1 : 0;
  using Type = cuda::std::conditional_t<Node::kKind == Kind, Node, void>;
};

template <epilogue::NodeKind Kind, class Op, class... Inputs>
struct NodesOfKind<Kind, epilogue::Compute<Op, Inputs...>> {
  static constexpr int kCount = (NodesOfKind<Kind, Inputs>::kCount + ... + 0);
  using Type = typename detail::FirstNonVoid<typename NodesOfKind<Kind, Inputs>::Type...>::type;
};

// The tree's AuxLoad nodes (matrix inputs: the residual).
template <class Node>
using StagedAux = NodesOfKind<epilogue::NodeKind::kAuxLoad, Node>;

// Whether the tree's matrix input can be staged: exactly one AuxLoad, 16-bit and row-major.
template <class Tree>
TILEFUSE_HOST_DEVICE constexpr bool has_stageable_aux() {
  if constexpr (StagedAux<Tree>::kCount != 1) {
    return false;
  } else {
    using Aux = typename StagedAux<Tree>::Type;
    return sizeof(typename Aux::Element) == 2 && cuda::std::is_same_v<typename Aux::LayoutTag, RowMajor>;
  }
}

namespace detail {
// (Helpers with index_sequence parameters rather than templated lambdas: NVRTC takes an unannotated
// lambda for a host function.)
template <class Target, class Node>
TILEFUSE_HOST_DEVICE inline typename Target::Params const* find_node_params(typename Node::Params const& p);

template <class Target, class Node, class... Inputs, cuda::std::size_t... I>
TILEFUSE_HOST_DEVICE inline typename Target::Params const* find_in_children(typename Node::Params const& p,
                                                                            epilogue::NodeList<Inputs...>,
                                                                            cuda::std::index_sequence<I...>) {
  typename Target::Params const* found = nullptr;
  ((found = found != nullptr ? found : find_node_params<Target, Inputs>(cuda::std::get<I>(p.children))), ...);
  return found;
}

// The Params of node Target inside `p`, the Params of Node (nullptr where Node's subtree has none).
template <class Target, class Node>
TILEFUSE_HOST_DEVICE inline typename Target::Params const* find_node_params(typename Node::Params const& p) {
  if constexpr (cuda::std::is_same_v<Node, Target>) {
    return &p;
  } else if constexpr (Node::Children::kSize == 0) {
    (void)p;
    return nullptr;
  } else {
    return find_in_children<Target, Node>(p, typename Node::Children{}, cuda::std::make_index_sequence<Node::Children::kSize>{});
  }
}
}  // namespace detail

// The Params of the tree's first AuxLoad (the tree must have one).
template <class Tree>
TILEFUSE_HOST_DEVICE inline auto staged_aux_params(typename Tree::Params const& p) {
  return detail::find_node_params<typename StagedAux<Tree>::Type, Tree>(p);
}

// The RowBroadcast nodes (column vectors: the bias) of a sink-free tree: how many, and the first one's
// type. With the TMA residual (sm90_gemm.h kTmaAux), a tree with exactly one, of 16- or 32-bit values,
// gets it by a bulk copy beside each residual sub-tile (StagedColumn below).
template <class Node>
using StagedColumnNodes = NodesOfKind<epilogue::NodeKind::kRowBroadcast, Node>;

template <class Tree>
TILEFUSE_HOST_DEVICE constexpr bool has_stageable_column() {
  if constexpr (StagedColumnNodes<Tree>::kCount != 1) {
    return false;
  } else {
    constexpr auto bytes = sizeof(typename StagedColumnNodes<Tree>::Type::Element);
    return bytes == 2 || bytes == 4;
  }
}

// The Params of the tree's one RowBroadcast (has_stageable_column).
template <class Tree>
TILEFUSE_HOST_DEVICE inline auto staged_column_params(typename Tree::Params const& p) {
  return detail::find_node_params<typename StagedColumnNodes<Tree>::Type, Tree>(p);
}

// Where a chunk's column vector sits when it was copied beside the residual's sub-tile: the values of
// columns col0 .. col0 + 63 at `base` (on: the copy was made; otherwise loaded from global memory).
struct StagedColumn {
  char const* base = nullptr;
  index_t col0 = 0;
  bool on = false;
};

// Where a pair (row, col) of a chunk whose element (0, 0) is output (row0, col0) finds its staged
// elements: a 16 x 64 chunk of 16-bit values in the packed staging layout.
struct StagedChunk {
  float const* base = nullptr;
  index_t row0 = 0;
  index_t col0 = 0;
  bool tma_layout = false;  // written by TMA with the 128-byte swizzle (tma_swizzled_group_offset)
};

// Which leaves a partial load reads: kColumns the leaves that depend only on the pair's columns (the
// bias, RowBroadcast, and Scalars), kRows those that depend only on its row (ColBroadcast, e.g. FP8's
// row-wise scale of A). AuxLoad depends on both and is never read here (StagedAuxLoad answers it).
enum class LoadPart { kColumns, kRows };

// The part `Part` of a node's load() for a pair; the other leaves are left default.
//   ColumnLoad: loaded once per 8-column group at a chunk's start (beside the wait for its staged
//     residual), instead of per pair between the stmatrix stores (which order memory, so each such
//     load's latency was waited for in turn);
//   RowLoad: a lane's pairs lie on two rows per tile, so these are loaded once per tile.
template <LoadPart Part, class Node>
struct PartialLoad {
  static constexpr bool kReads = Part == LoadPart::kRows
                                     ? Node::kKind == epilogue::NodeKind::kColBroadcast
                                     : Node::kKind != epilogue::NodeKind::kAuxLoad &&
                                           Node::kKind != epilogue::NodeKind::kColBroadcast;
  TILEFUSE_DEVICE static typename Node::template Loaded<2> load(typename Node::Params const& p,
                                                                 epilogue::Fragment<2> const& f) {
    if constexpr (kReads) {
      return Node::load(p, f);
    } else {
      (void)p, (void)f;
      return {};
    }
  }
};

template <LoadPart Part, class Op, class... Inputs>
struct PartialLoad<Part, epilogue::Compute<Op, Inputs...>> {
  using Node = epilogue::Compute<Op, Inputs...>;
  TILEFUSE_DEVICE static typename Node::template Loaded<2> load(typename Node::Params const& p,
                                                                 epilogue::Fragment<2> const& f) {
    return load_inputs(p, f, cuda::std::index_sequence_for<Inputs...>{});
  }
  template <cuda::std::size_t... I>
  TILEFUSE_DEVICE static typename Node::template Loaded<2> load_inputs(typename Node::Params const& p,
                                                                       epilogue::Fragment<2> const& f,
                                                                       cuda::std::index_sequence<I...>) {
    return typename Node::template Loaded<2>{PartialLoad<Part, Inputs>::load(cuda::std::get<I>(p.children), f)...};
  }
};

template <class Node>
using ColumnLoad = PartialLoad<LoadPart::kColumns, Node>;
template <class Node>
using RowLoad = PartialLoad<LoadPart::kRows, Node>;

// ColumnLoad, with the RowBroadcast read from the staged column vector where it was copied.
template <class Node>
struct StagedColumnLoad {
  TILEFUSE_DEVICE static typename Node::template Loaded<2> load(typename Node::Params const& p,
                                                                 epilogue::Fragment<2> const& f, StagedColumn const& c) {
    if constexpr (Node::kKind == epilogue::NodeKind::kRowBroadcast) {
      if (c.on) {
        using T = typename Node::Element;
        return *reinterpret_cast<typename Node::template Loaded<2> const*>(c.base + (f.col - c.col0) * sizeof(T));
      }
    }
    return ColumnLoad<Node>::load(p, f);
  }
};

template <class Op, class... Inputs>
struct StagedColumnLoad<epilogue::Compute<Op, Inputs...>> {
  using Node = epilogue::Compute<Op, Inputs...>;
  TILEFUSE_DEVICE static typename Node::template Loaded<2> load(typename Node::Params const& p,
                                                                 epilogue::Fragment<2> const& f, StagedColumn const& c) {
    return load_inputs(p, f, c, cuda::std::index_sequence_for<Inputs...>{});
  }
  template <cuda::std::size_t... I>
  TILEFUSE_DEVICE static typename Node::template Loaded<2> load_inputs(typename Node::Params const& p,
                                                                 epilogue::Fragment<2> const& f, StagedColumn const& c, cuda::std::index_sequence<I...>) {
    return typename Node::template Loaded<2>{StagedColumnLoad<Inputs>::load(cuda::std::get<I>(p.children), f, c)...};
  }
};

// Node::load for a pair (Fragment<2>): the one AuxLoad read from the staged chunk, a ColBroadcast
// taken from the pair's row loads (RowLoad), everything else from its column loads (ColumnLoad).
template <class Node>
struct StagedAuxLoad {
  using Loaded = typename Node::template Loaded<2>;
  TILEFUSE_DEVICE static Loaded load(typename Node::Params const&, epilogue::Fragment<2> const&, StagedChunk const&,
                                     Loaded const& column, Loaded const& row) {
    if constexpr (Node::kKind == epilogue::NodeKind::kColBroadcast) {
      return row;
    } else {
      return column;
    }
  }
};

template <epilogue::NodeName Name, class T>
struct StagedAuxLoad<epilogue::AuxLoad<Name, T, RowMajor>> {
  using Node = epilogue::AuxLoad<Name, T, RowMajor>;
  using Loaded = typename Node::template Loaded<2>;
  TILEFUSE_DEVICE static Loaded load(typename Node::Params const&, epilogue::Fragment<2> const& f,
                                     StagedChunk const& chunk, Loaded const&, Loaded const&) {
    int const r = static_cast<int>(f.row - chunk.row0);
    int const c = static_cast<int>(f.col - chunk.col0);  // even: the pair's first column
    int const group = chunk.tma_layout ? tma_swizzled_group_offset(r, c / 8) : packed_group_offset(r, c / 8);
    auto const* at = reinterpret_cast<char const*>(chunk.base + group) + (c % 8) * sizeof(T);
    return *reinterpret_cast<Loaded const*>(at);
  }
};

template <class Op, class... Inputs>
struct StagedAuxLoad<epilogue::Compute<Op, Inputs...>> {
  using Node = epilogue::Compute<Op, Inputs...>;
  using Loaded = typename Node::template Loaded<2>;
  TILEFUSE_DEVICE static Loaded load(typename Node::Params const& p, epilogue::Fragment<2> const& f,
                                     StagedChunk const& chunk, Loaded const& column, Loaded const& row) {
    return load_inputs(p, f, chunk, column, row, cuda::std::index_sequence_for<Inputs...>{});
  }
  template <cuda::std::size_t... I>
  TILEFUSE_DEVICE static Loaded load_inputs(typename Node::Params const& p, epilogue::Fragment<2> const& f,
                                     StagedChunk const& chunk, Loaded const& column, Loaded const& row, cuda::std::index_sequence<I...>) {
    return Loaded{StagedAuxLoad<Inputs>::load(cuda::std::get<I>(p.children), f, chunk, cuda::std::get<I>(column),
                                                cuda::std::get<I>(row))...};
  }
};

}  // namespace tilefuse::gemm::sm90
