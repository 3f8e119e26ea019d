// Leaf nodes of the epilogue visitor tree: the accumulator, scalars, broadcast vectors (bias),
// auxiliary matrices (residual C) and the element's coordinates. Leaves that take a run-time value
// carry a name ("alpha", "bias", "C") by which the user sets it.
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/arch/prefetch.h>
#include <tilefuse/core/data_type.h>
#include <tilefuse/epilogue/node_name.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

// Reads `valid` consecutive elements as floats (the rest are 0): one vector load when the whole
// vector is inside the output and aligned, element by element otherwise.
template <int V, class T>
TILEFUSE_HOST_DEVICE inline Array<float, V> load_row(T const* src, int valid) {
  Array<float, V> out = Array<float, V>::filled(0.0f);
  if (valid == V && is_vector_aligned<T, V>(src)) {
    Array<T, V> const v = *reinterpret_cast<Array<T, V> const*>(src);
    for (int i = 0; i < V; ++i) out[i] = to_float(v[i]);
    return out;
  }
  for (int i = 0; i < V; ++i) {
    if (i < valid) out[i] = to_float(src[i]);
  }
  return out;
}

// The accumulator of A*B (alpha and beta are not applied: write them into the tree).
struct Acc {
  static constexpr NodeKind kKind = NodeKind::kAcc;
  using Children = NodeList<>;
  struct Params {};

  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const&, Fragment<V> const&) {}

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const& f) {
    return f.acc;
  }
};

// A run-time scalar: a value given on the host, or read from device memory when a pointer is given
// (e.g. an FP8 scale computed by an earlier kernel).
template <NodeName Name>
struct Scalar {
  static constexpr NodeKind kKind = NodeKind::kScalar;
  static constexpr auto kName = Name;
  using Children = NodeList<>;
  struct Params {
    float value = 0.0f;
    float const* pointer = nullptr;  // wins over value when set
  };

  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const&, Fragment<V> const&) {}

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const&) {
    return Array<float, V>::filled(p.pointer ? *p.pointer : p.value);
  }
};

// A compile-time constant (what Python constants such as 0.5 lower to).
template <float Value>
struct Constant {
  static constexpr NodeKind kKind = NodeKind::kConstant;
  using Children = NodeList<>;
  struct Params {};

  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const&, Fragment<V> const&) {}

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const&) {
    return Array<float, V>::filled(Value);
  }
};

// A vector with one value per column, the same for every row: value = data[batch * batch_stride + col].
// This is the per-output-channel bias of a GEMM or convolution.
template <NodeName Name, class T>
struct RowBroadcast {
  static constexpr NodeKind kKind = NodeKind::kRowBroadcast;
  static constexpr auto kName = Name;
  using Element = T;
  using Children = NodeList<>;
  struct Params {
    T const* data = nullptr;
    index_t batch_stride = 0;  // 0: one vector for the whole batch
  };

  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const&, Fragment<V> const&) {}

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const& f) {
    return load_row<V>(p.data + f.batch * p.batch_stride + f.col, f.valid);
  }
};

// A vector with one value per row, the same for every column: value = data[batch * batch_stride + row].
template <NodeName Name, class T>
struct ColBroadcast {
  static constexpr NodeKind kKind = NodeKind::kColBroadcast;
  static constexpr auto kName = Name;
  using Element = T;
  using Children = NodeList<>;
  struct Params {
    T const* data = nullptr;
    index_t batch_stride = 0;
  };

  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const&, Fragment<V> const&) {}

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const& f) {
    return Array<float, V>::filled(to_float(p.data[f.batch * p.batch_stride + f.row]));
  }
};

// An auxiliary input matrix of the output's shape (the residual C), row- or column-major.
template <NodeName Name, class T, class Layout = RowMajor>
struct AuxLoad {
  static constexpr NodeKind kKind = NodeKind::kAuxLoad;
  static constexpr auto kName = Name;
  using Element = T;
  using LayoutTag = Layout;
  using Children = NodeList<>;
  struct Params {
    T const* data = nullptr;
    index_t ld = 0;
    index_t batch_stride = 0;
  };

  // Asks L2 for the row segment a later visit() of the same fragment reads (row-major; a column-major
  // fragment touches V lines and is left to the visit). The Hopper kernel calls it before a tile's
  // mainloop so the residual arrives while the tensor cores run.
  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const& p, Fragment<V> const& f) {
    if constexpr (cuda::std::is_same_v<Layout, RowMajor>) {
      if (f.valid > 0) arch::prefetch_l2(p.data + f.batch * p.batch_stride + f.row * p.ld + f.col);
    }
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const& f) {
    T const* base = p.data + f.batch * p.batch_stride;
    if constexpr (cuda::std::is_same_v<Layout, RowMajor>) {
      return load_row<V>(base + f.row * p.ld + f.col, f.valid);
    } else {
      Array<float, V> out = Array<float, V>::filled(0.0f);
      for (int i = 0; i < V; ++i) {
        if (i < f.valid) out[i] = to_float(base[Layout::offset(f.row, f.col + i, p.ld)]);
      }
      return out;
    }
  }
};

// The element's coordinate as a value: Row, Col or Batch. Exact while the index is below 2^24
// (float has 24 significant bits); the device API refuses larger problems for trees that use them.
enum class Axis { kRow, kCol, kBatch };

template <Axis A>
struct Coordinate {
  static constexpr NodeKind kKind = NodeKind::kCoordinate;
  static constexpr Axis kAxis = A;
  using Children = NodeList<>;
  struct Params {};

  template <int V>
  TILEFUSE_HOST_DEVICE static void prefetch(Params const&, Fragment<V> const&) {}

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const& f) {
    Array<float, V> out;
    for (int i = 0; i < V; ++i) {
      if constexpr (A == Axis::kRow) out[i] = static_cast<float>(f.row);
      if constexpr (A == Axis::kCol) out[i] = static_cast<float>(f.col + i);
      if constexpr (A == Axis::kBatch) out[i] = static_cast<float>(f.batch);
    }
    return out;
  }
};

using Row = Coordinate<Axis::kRow>;
using Col = Coordinate<Axis::kCol>;
using Batch = Coordinate<Axis::kBatch>;

}  // namespace tilefuse::epilogue
