// Sink nodes: stores (D and any number of auxiliary outputs) and row/column reductions. A sink
// passes its input through unchanged, so `Relu<Store<"pre_act", bf16, X>>` stores X and goes on;
// the root of every tree is the Store of D.
#pragma once

#include <tilefuse/core/data_type.h>
#include <tilefuse/epilogue/node_name.h>
#include <tilefuse/core/math.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/fragment.h>

#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/tuple>

namespace tilefuse::epilogue {

// The first three steps of a sink (Params with `children`, its one input's): a sink reads no memory of
// its own, so it loads what its input does.
template <class Input>
struct SinkOfInput {
  template <int V>
  using Loaded = typename Input::template Loaded<V>;

  template <class P, int V>
  TILEFUSE_HOST_DEVICE static Loaded<V> load(P const& p, Fragment<V> const& f) {
    return Input::load(cuda::std::get<0>(p.children), f);
  }

  template <class P, int V>
  TILEFUSE_HOST_DEVICE static void load_async(P const& p, Fragment<V> const& f, Loaded<V>* into) {
    Input::load_async(cuda::std::get<0>(p.children), f, into);
  }
};

// Writes its input, converted to T (round to nearest even; FP8 saturates), into an output matrix.
// Values are passed on unrounded: a later node sees the float, not the stored T.
template <NodeName Name, class T, class Input, class Layout = RowMajor>
struct Store : SinkOfInput<Input> {
  static constexpr NodeKind kKind = NodeKind::kStore;
  static constexpr auto kName = Name;
  using Element = T;
  using LayoutTag = Layout;
  using Children = NodeList<Input>;
  struct Params {
    cuda::std::tuple<typename Input::Params> children;
    T* data = nullptr;
    index_t ld = 0;
    index_t batch_stride = 0;
  };

  template <int V>
  using Loaded = typename Input::template Loaded<V>;  // as SinkOfInput's (a dependent base's names are not found here)

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const& f, Loaded<V> const& loaded) {
    Array<float, V> const x = Input::visit(cuda::std::get<0>(p.children), f, loaded);
    Array<T, V> out;
    for (int i = 0; i < V; ++i) out[i] = convert<T>(x[i]);
    T* base = p.data + f.batch * p.batch_stride;
    if constexpr (cuda::std::is_same_v<Layout, RowMajor>) {
      T* dst = base + f.row * p.ld + f.col;
      if (f.valid == V && is_vector_aligned<T, V>(dst)) {  // one 16-byte store for 8 bf16
        *reinterpret_cast<Array<T, V>*>(dst) = out;
        return x;
      }
    }
    for (int i = 0; i < V; ++i) {
      if (i < f.valid) base[Layout::offset(f.row, f.col + i, p.ld)] = out[i];
    }
    return x;
  }
};

// ---- reductions ----

namespace reduce {

// Whether a reduction is a max of non-negative values (Reduction::kNonNegativeMax), which combine_into
// does with one atomicMax on the bits.
template <class Reduction>
TILEFUSE_HOST_DEVICE constexpr bool is_non_negative_max() {
  if constexpr (requires { Reduction::kNonNegativeMax; }) {
    return Reduction::kNonNegativeMax;
  } else {
    return false;
  }
}

// Combines `value` into *target: plainly on the host, atomically on the device. `combine` must be
// the reduction's own (associative, commutative) operation.
template <class Reduction>
TILEFUSE_HOST_DEVICE inline void combine_into(float* target, float value) {
#if TILEFUSE_IS_DEVICE_CODE
  if constexpr (Reduction::kIsSum) {
    atomicAdd(target, value);
  } else if constexpr (is_non_negative_max<Reduction>()) {
    // Non-negative floats (NaN with its sign cleared included, above every number) order as their bits
    // do, so a max is one atomicMax on the word instead of a compare-and-swap loop.
    atomicMax(reinterpret_cast<unsigned int*>(target), __float_as_uint(value));
  } else {
    // NOTES: a compare-and-swap loop rather than atomicMax on the bits, so NaN propagates and
    // negative values order correctly.
    auto* word = reinterpret_cast<unsigned int*>(target);
    unsigned int seen = *word;
    while (true) {
      float const current = __uint_as_float(seen);
      float const next = Reduction::combine(current, value);
      if (__float_as_uint(next) == seen) break;
      unsigned int const previous = atomicCAS(word, seen, __float_as_uint(next));
      if (previous == seen) break;
      seen = previous;
    }
  }
#else
  *target = Reduction::combine(*target, value);
#endif
}

struct Sum {
  static constexpr bool kIsSum = true;
  TILEFUSE_HOST_DEVICE static constexpr float identity() { return 0.0f; }
  TILEFUSE_HOST_DEVICE static float transform(float x) { return x; }
  TILEFUSE_HOST_DEVICE static float combine(float a, float b) { return a + b; }
};

struct Max {
  static constexpr bool kIsSum = false;
  TILEFUSE_HOST_DEVICE static constexpr float identity() { return -cuda::std::numeric_limits<float>::infinity(); }
  TILEFUSE_HOST_DEVICE static float transform(float x) { return x; }
  TILEFUSE_HOST_DEVICE static float combine(float a, float b) { return math::max(a, b); }
};

// max |x|: the amax an FP8 recipe turns into its next scale. NaN propagates.
struct AbsMax {
  static constexpr bool kIsSum = false;
  static constexpr bool kNonNegativeMax = true;  // a max of values >= 0 (or NaN): combine_into's atomicMax
  TILEFUSE_HOST_DEVICE static constexpr float identity() { return 0.0f; }
  TILEFUSE_HOST_DEVICE static float transform(float x) { return math::abs(x); }
  TILEFUSE_HOST_DEVICE static float combine(float a, float b) { return math::max(a, b); }
};

}  // namespace reduce

// Reduces its input to one value per row (kRowReduce: out[batch * batch_stride + row], over the row's
// columns) or one value per column (kColReduce: out[batch * batch_stride + col], over the rows).
// The output must hold R::identity() before the kernel runs (the host driver and device ops do that).
template <NodeName Name, class R, NodeKind Kind, class Input>
struct Reduce : SinkOfInput<Input> {
  static_assert(Kind == NodeKind::kRowReduce || Kind == NodeKind::kColReduce);
  static constexpr NodeKind kKind = Kind;
  static constexpr auto kName = Name;
  using Element = float;
  using Reduction = R;
  using Children = NodeList<Input>;
  struct Params {
    cuda::std::tuple<typename Input::Params> children;
    float* data = nullptr;
    index_t batch_stride = 0;
  };

  template <int V>
  using Loaded = typename Input::template Loaded<V>;  // as SinkOfInput's (a dependent base's names are not found here)

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const& f, Loaded<V> const& loaded) {
    Array<float, V> const x = Input::visit(cuda::std::get<0>(p.children), f, loaded);
    float* out = p.data + f.batch * p.batch_stride;
    if constexpr (Kind == NodeKind::kRowReduce) {
      // Reduce the vector first: one combine per vector instead of one per element.
      if (f.valid > 0) {
        float partial = R::identity();
        for (int i = 0; i < V; ++i) {
          if (i < f.valid) partial = R::combine(partial, R::transform(x[i]));
        }
        reduce::combine_into<R>(out + f.row, partial);
      }
    } else {
      for (int i = 0; i < V; ++i) {
        if (i < f.valid) reduce::combine_into<R>(out + f.col + i, R::transform(x[i]));
      }
    }
    return x;
  }
};

// NOTES: structs, not alias templates: nvcc's host stubs cannot spell an alias template that forwards a
// NodeName (the kernel fails to compile with "__T0 was not declared").
template <NodeName Name, class R, class Input>
struct RowReduce : Reduce<Name, R, NodeKind::kRowReduce, Input> {};
template <NodeName Name, class R, class Input>
struct ColReduce : Reduce<Name, R, NodeKind::kColReduce, Input> {};

}  // namespace tilefuse::epilogue
