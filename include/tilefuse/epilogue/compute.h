// Compute nodes: an element-wise op (ops.h) applied to the values of its children, and short
// aliases so that a tree reads like the formula: Relu<Add<Mul<Scalar<"alpha">, Acc>, Bias>>.
#pragma once

#include <cuda/std/tuple>
#include <cuda/std/utility>

#include <tilefuse/epilogue/fragment.h>
#include <tilefuse/epilogue/ops.h>

namespace tilefuse::epilogue {

template <class Op, class... Inputs>
struct Compute {
  static_assert(Op::kArity == sizeof...(Inputs), "an epilogue op got the wrong number of inputs");
  static constexpr NodeKind kKind = NodeKind::kCompute;
  using Operation = Op;
  using Children = NodeList<Inputs...>;
  struct Params {
    cuda::std::tuple<typename Inputs::Params...> children;
  };

  template <int V>
  using Loaded = cuda::std::tuple<typename Inputs::template Loaded<V>...>;

  template <int V>
  TILEFUSE_HOST_DEVICE static Loaded<V> load(Params const& p, Fragment<V> const& f) {
    return load_inputs(p, f, cuda::std::index_sequence_for<Inputs...>{});
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static void load_async(Params const& p, Fragment<V> const& f, Loaded<V>* into) {
    load_inputs_async(p, f, into, cuda::std::index_sequence_for<Inputs...>{});
  }

  template <int V>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit(Params const& p, Fragment<V> const& f, Loaded<V> const& loaded) {
    return visit_inputs(p, f, loaded, cuda::std::index_sequence_for<Inputs...>{});
  }

 private:
  template <int V, cuda::std::size_t... I>
  TILEFUSE_HOST_DEVICE static Loaded<V> load_inputs(Params const& p, Fragment<V> const& f, cuda::std::index_sequence<I...>) {
    return Loaded<V>{Inputs::load(cuda::std::get<I>(p.children), f)...};
  }

  template <int V, cuda::std::size_t... I>
  TILEFUSE_HOST_DEVICE static void load_inputs_async(Params const& p, Fragment<V> const& f, Loaded<V>* into,
                                                     cuda::std::index_sequence<I...>) {
    (Inputs::load_async(cuda::std::get<I>(p.children), f, &cuda::std::get<I>(*into)), ...);
  }

  template <int V, cuda::std::size_t... I>
  TILEFUSE_HOST_DEVICE static Array<float, V> visit_inputs(Params const& p, Fragment<V> const& f, Loaded<V> const& loaded,
                                                           cuda::std::index_sequence<I...>) {
    // Braced initialisation evaluates the inputs left to right, so sinks below run in tree order.
    Array<float, V> const in[] = {Inputs::visit(cuda::std::get<I>(p.children), f, cuda::std::get<I>(loaded))...};
    Array<float, V> out;
    for (int i = 0; i < V; ++i) out[i] = Op::apply(in[I][i]...);
    return out;
  }
};

template <class A, class B> using Add = Compute<op::Add, A, B>;
template <class A, class B> using Sub = Compute<op::Sub, A, B>;
template <class A, class B> using Mul = Compute<op::Mul, A, B>;
template <class A, class B> using Div = Compute<op::Div, A, B>;
template <class A, class B> using FloorDiv = Compute<op::FloorDiv, A, B>;
template <class A, class B> using Mod = Compute<op::Mod, A, B>;
template <class A, class B> using Min = Compute<op::Min, A, B>;
template <class A, class B> using Max = Compute<op::Max, A, B>;
template <class A, class B> using Less = Compute<op::Less, A, B>;
template <class A, class B> using LessEqual = Compute<op::LessEqual, A, B>;
template <class A, class B> using Greater = Compute<op::Greater, A, B>;
template <class A, class B> using GreaterEqual = Compute<op::GreaterEqual, A, B>;
template <class A, class B> using Equal = Compute<op::Equal, A, B>;
template <class A, class B> using NotEqual = Compute<op::NotEqual, A, B>;
template <class X, class Slope> using LeakyRelu = Compute<op::LeakyRelu, X, Slope>;
template <class X> using Negate = Compute<op::Negate, X>;
template <class X> using Abs = Compute<op::Abs, X>;
template <class X> using Exp = Compute<op::Exp, X>;
template <class X> using Tanh = Compute<op::Tanh, X>;
template <class X> using Relu = Compute<op::Relu, X>;
template <class X> using Sigmoid = Compute<op::Sigmoid, X>;
template <class X> using Silu = Compute<op::Silu, X>;
template <class X> using GeluErf = Compute<op::GeluErf, X>;
template <class X> using GeluTanh = Compute<op::GeluTanh, X>;
template <class X, class Lo, class Hi> using Clamp = Compute<op::Clamp, X, Lo, Hi>;
template <class Cond, class A, class B> using Where = Compute<op::Where, Cond, A, B>;

}  // namespace tilefuse::epilogue
