// EpilogueArguments<Tree>: the named arguments of an epilogue tree, set on the host by name
//   args.set("alpha", 2.0f).set("bias", bias).set("C", c, {.ld = ldc}).set("D", d);
// and bound to the tree's device Params once the problem shape is known. Nothing is silently wrong:
// an unknown name, a pointer of the wrong element type, a read-only output, a missing argument or a
// leading dimension too small for the problem makes bind() fail with a sentence naming the argument.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tilefuse/core/data_type.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/tree_walk.hpp>

namespace tilefuse::epilogue {

// The output extent an epilogue runs over: rows x cols, `batch` times.
struct ProblemShape {
  index_t rows = 0;
  index_t cols = 0;
  index_t batch = 1;
};

// Strides of a matrix or vector argument, in elements. kPacked: the packed value for the problem
// (ld = cols for row-major, rows for column-major; batch_stride = one whole matrix or vector).
// A batch_stride of 0 shares one input across the batch (not allowed for outputs).
inline constexpr index_t kPacked = -1;
struct Strides {
  index_t ld = kPacked;
  index_t batch_stride = kPacked;
};

// One argument as given: a scalar value, or a pointer with its element type.
struct ArgumentValue {
  enum class Kind { kScalar, kPointer };
  Kind kind = Kind::kScalar;
  float scalar = 0.0f;
  void const* pointer = nullptr;
  bool writable = false;
  DataType dtype = DataType::kUnknown;
  Strides strides{};
};

template <class Tree>
class EpilogueArguments {
 public:
  using Params = typename Tree::Params;

  EpilogueArguments& set(std::string_view name, float value) {
    return set_value(name, ArgumentValue{ArgumentValue::Kind::kScalar, value});
  }
  template <class T>
  EpilogueArguments& set(std::string_view name, T* data, Strides strides = {}) {
    using Element = std::remove_const_t<T>;
    static_assert(data_type_of<Element> != DataType::kUnknown, "epilogue arguments need a tilefuse element type");
    return set_value(name, ArgumentValue{ArgumentValue::Kind::kPointer, 0.0f, data, !std::is_const_v<T>,
                                         data_type_of<Element>, strides});
  }
  // The type-erased form, for the runtime and Python. A later set of the same name replaces it.
  EpilogueArguments& set_value(std::string_view name, ArgumentValue const& value) {
    if (!has_argument(name)) {
      if (first_error_.empty()) {
        first_error_ = status_message("set(\"", name, "\"): this epilogue has no argument named \"", name,
                                      "\"; its arguments are: ", join(argument_names()));
      }
      return *this;
    }
    auto it = std::find_if(values_.begin(), values_.end(), [&](auto const& e) { return e.first == name; });
    if (it != values_.end()) {
      it->second = value;
    } else {
      values_.emplace_back(std::string(name), value);
    }
    return *this;
  }

  // The names this tree takes, in tree order, each once.
  static std::vector<std::string> argument_names() {
    std::vector<std::string> names;
    for_each_node_type<Tree>([&]<class Node>() {
      if constexpr (is_named_node<Node>()) {
        std::string name = node_name<Node>();
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    });
    return names;
  }

  // Checks every argument against the tree and the problem, and fills *params for the kernel.
  Status bind(ProblemShape const& shape, Params* params) const {
    if (!first_error_.empty()) return invalid_argument(first_error_);
    Status status;
    for_each_node<Tree>(*params, [&]<class Node>(typename Node::Params& p) {
      if constexpr (is_named_node<Node>()) {
        if (status.ok()) status = bind_node<Node>(shape, p);
      }
    });
    return status;
  }

  // Whether the tree takes an argument of this name, and whether one was set.
  static bool takes(std::string_view name) { return has_argument(name); }
  bool is_set(std::string_view name) const {
    return std::any_of(values_.begin(), values_.end(), [&](auto const& e) { return e.first == name; });
  }

 private:
  static bool has_argument(std::string_view name) {
    auto const names = argument_names();
    return std::find(names.begin(), names.end(), name) != names.end();
  }
  static std::string join(std::vector<std::string> const& names) {
    std::string out;
    for (auto const& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  ArgumentValue const* find(std::string_view name) const {
    for (auto const& [n, v] : values_) {
      if (n == name) return &v;
    }
    return nullptr;
  }

  template <class Node>
  Status bind_node(ProblemShape const& shape, typename Node::Params& p) const {
    constexpr NodeKind kind = Node::kKind;
    std::string const name = node_name<Node>();
    ArgumentValue const* v = find(name);
    if (v == nullptr) {
      return invalid_argument("epilogue argument \"", name, "\" was never set: call set(\"", name, "\", ...)");
    }
    if constexpr (kind == NodeKind::kScalar) {
      if (v->kind == ArgumentValue::Kind::kScalar) {
        p.value = v->scalar;
        p.pointer = nullptr;
        return {};
      }
      if (v->dtype != DataType::kF32) {
        return invalid_argument("epilogue scalar \"", name, "\" was given a ", name_of(v->dtype),
                                " pointer; a scalar read from memory must be a float32 pointer");
      }
      if (v->pointer == nullptr) return invalid_argument("epilogue scalar \"", name, "\" is a null pointer");
      p.pointer = static_cast<float const*>(v->pointer);
      return {};
    } else {
      using Element = typename Node::Element;
      constexpr bool is_output =
          kind == NodeKind::kStore || kind == NodeKind::kRowReduce || kind == NodeKind::kColReduce;
      if (v->kind != ArgumentValue::Kind::kPointer) {
        return invalid_argument("epilogue argument \"", name, "\" needs a pointer to ", name_of(data_type_of<Element>),
                                " data, but was given the scalar ", v->scalar);
      }
      if (v->dtype != data_type_of<Element>) {
        return invalid_argument("epilogue argument \"", name, "\" points to ", name_of(v->dtype),
                                " data, but this epilogue uses ", name_of(data_type_of<Element>),
                                ": convert the tensor or build the epilogue for ", name_of(v->dtype));
      }
      if (v->pointer == nullptr) return invalid_argument("epilogue argument \"", name, "\" is a null pointer");
      if (reinterpret_cast<std::uintptr_t>(v->pointer) % alignof(Element) != 0) {
        return misaligned("epilogue argument \"", name, "\" at address ", v->pointer, " is not aligned to its ",
                          sizeof(Element), "-byte element size");
      }
      if (is_output && !v->writable) {
        return invalid_argument("epilogue output \"", name, "\" was given a pointer to const: pass a writable pointer");
      }
      index_t length = 0;  // elements of one batch entry
      if constexpr (kind == NodeKind::kAuxLoad || kind == NodeKind::kStore) {
        using Layout = typename Node::LayoutTag;
        index_t const min_ld = Layout::packed_ld(shape.rows, shape.cols);
        index_t const ld = v->strides.ld == kPacked ? min_ld : v->strides.ld;
        if (ld < min_ld) {
          return invalid_argument("epilogue argument \"", name, "\" has ld = ", ld, ", but a ", Layout::kName, " ",
                                  shape.rows, " x ", shape.cols, " matrix needs ld >= ", min_ld);
        }
        p.ld = ld;
        length = (std::is_same_v<Layout, RowMajor> ? shape.rows : shape.cols) * ld;
      } else if constexpr (kind == NodeKind::kRowBroadcast || kind == NodeKind::kColReduce) {
        length = shape.cols;
      } else {
        length = shape.rows;
      }
      index_t const batch_stride = v->strides.batch_stride == kPacked ? length : v->strides.batch_stride;
      if (batch_stride < 0) {
        return invalid_argument("epilogue argument \"", name, "\" has a negative batch_stride = ", batch_stride);
      }
      if (is_output && shape.batch > 1 && batch_stride < length) {
        return invalid_argument("epilogue output \"", name, "\" has batch_stride = ", batch_stride,
                                ", so the ", shape.batch, " batch entries would overwrite each other: use at least ",
                                length);
      }
      if (!is_output && batch_stride != 0 && batch_stride < length && shape.batch > 1) {
        return invalid_argument("epilogue argument \"", name, "\" has batch_stride = ", batch_stride,
                                ", which overlaps batch entries of ", length,
                                " elements: use 0 to share one input across the batch, or at least ", length);
      }
      p.batch_stride = batch_stride;
      if constexpr (is_output) {
        p.data = static_cast<Element*>(const_cast<void*>(v->pointer));
      } else {
        p.data = static_cast<Element const*>(v->pointer);
      }
      return {};
    }
  }

  std::vector<std::pair<std::string, ArgumentValue>> values_;
  std::string first_error_;
};

}  // namespace tilefuse::epilogue
