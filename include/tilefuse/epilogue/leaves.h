// Leaf nodes of the epilogue visitor tree: the accumulator, scalars, broadcast vectors (bias),
// auxiliary matrices (residual C) and the element's coordinates. Leaves that take a run-time value
// carry a name ("alpha", "bias", "C") by which the user sets it.
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/core/data_type.h>
#include <tilefuse/epilogue/node_name.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/fragment.h>
#include <tilefuse/epilogue/stored_row.h>

namespace tilefuse::epilogue {

// What a node without global loads hands from load() to visit().
struct NothingLoaded {};

// The first step of a leaf that reads no memory: nothing loaded.
struct LeafWithoutLoads {
  template <int V>
  using Loaded = NothingLoaded;

  template <class P, int V>
  TILEFUSE_HOST_DEVICE static NothingLoaded load(P const&, Fragment<V> const&) {
    return {};
  }

  template <class P, int V>
  TILEFUSE_HOST_DEVICE static void load_async(P const&, Fragment<V> const&, NothingLoaded*) {}
};

// The accumulator of A*B (alpha and beta are not applied: write them into the tree).
struct Acc : LeafWithoutLoads {
  static constexpr NodeKind kKind = NodeKind::kAcc;
  using Children = NodeList<>;
  struct Params {};

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const& f, Loaded<V> const&) {
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
  using Loaded = float;

  template <int V>
  TILEFUSE_HOST_DEVICE static Loaded<V> load(Params const& p, Fragment<V> const&) {
    return p.pointer ? *p.pointer : p.value;
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static void load_async(Params const& p, Fragment<V> const& f, Loaded<V>* into) {
#if TILEFUSE_IS_DEVICE_CODE
    if (p.pointer) {
      arch::cp_async<4, true>(into, p.pointer);
      return;
    }
#endif
    *into = load<V>(p, f);
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const&, Loaded<V> const& value) {
    return Array<float, V>::filled(value);
  }
};

// A compile-time constant (what Python constants such as 0.5 lower to).
template <float Value>
struct Constant : LeafWithoutLoads {
  static constexpr NodeKind kKind = NodeKind::kConstant;
  using Children = NodeList<>;
  struct Params {};

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const&, Loaded<V> const&) {
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
  using Loaded = StoredRow<T, V>;

  template <int V>
  TILEFUSE_HOST_DEVICE static Loaded<V> load(Params const& p, Fragment<V> const& f) {
    return load_row<V>(p.data + f.batch * p.batch_stride + f.col, f.valid);
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static void load_async(Params const& p, Fragment<V> const& f, Loaded<V>* into) {
    load_row_async<V, true>(into, p.data + f.batch * p.batch_stride + f.col, f.valid);
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const&, Loaded<V> const& values) {
    return to_floats<V>(values);
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
  using Loaded = T;

  // A fragment past the output (valid <= 0) may lie past the vector: it reads nothing.
  template <int V>
  TILEFUSE_HOST_DEVICE static Loaded<V> load(Params const& p, Fragment<V> const& f) {
    return f.valid > 0 ? p.data[f.batch * p.batch_stride + f.row] : T{};
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static void load_async(Params const& p, Fragment<V> const& f, Loaded<V>* into) {
#if TILEFUSE_IS_DEVICE_CODE
    if constexpr (sizeof(T) >= 4) {
      if (f.valid > 0) {
        arch::cp_async<static_cast<int>(sizeof(T)), true>(into, p.data + f.batch * p.batch_stride + f.row);
        return;
      }
    }
#endif
    *into = load<V>(p, f);
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const&, Loaded<V> const& value) {
    return Array<float, V>::filled(to_float(value));
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

  template <int V>
  using Loaded = StoredRow<T, V>;

  template <int V>
  TILEFUSE_HOST_DEVICE static Loaded<V> load(Params const& p, Fragment<V> const& f) {
    T const* base = p.data + f.batch * p.batch_stride;
    if constexpr (cuda::std::is_same_v<Layout, RowMajor>) {
      return load_row<V>(base + f.row * p.ld + f.col, f.valid);
    } else {
      Array<T, V> out = Array<T, V>::filled(T{});
      for (int i = 0; i < V; ++i) {
        if (i < f.valid) out[i] = base[Layout::offset(f.row, f.col + i, p.ld)];
      }
      return cuda::std::bit_cast<Loaded<V>>(out);
    }
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static void load_async(Params const& p, Fragment<V> const& f, Loaded<V>* into) {
    if constexpr (cuda::std::is_same_v<Layout, RowMajor>) {
      load_row_async<V, false>(into, p.data + f.batch * p.batch_stride + f.row * p.ld + f.col, f.valid);
    } else {
      *into = load<V>(p, f);
    }
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const&, Loaded<V> const& values) {
    return to_floats<V>(values);
  }
};

// The element's coordinate as a value: Row, Col or Batch. Exact while the index is below 2^24
// (float has 24 significant bits); the device API refuses larger problems for trees that use them.
enum class Axis { kRow, kCol, kBatch };

template <Axis A>
struct Coordinate : LeafWithoutLoads {
  static constexpr NodeKind kKind = NodeKind::kCoordinate;
  static constexpr Axis kAxis = A;
  using Children = NodeList<>;
  struct Params {};

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const&, Fragment<V> const& f, Loaded<V> const&) {
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
