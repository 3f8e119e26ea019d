// Non-owning strided views: batched row/column-major matrices, and 4-D tensors with a contiguous
// innermost dimension (NHWC activations, KRSC filters). A view never allocates; it only maps a
// coordinate to an element.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse {

// Layout tags. `ld` is the leading dimension: the distance between rows (row-major) or columns.
struct RowMajor {
  static constexpr char const* kName = "row-major";
  TILEFUSE_HOST_DEVICE static constexpr index_t offset(index_t row, index_t col, index_t ld) {
    return row * ld + col;
  }
  // The smallest leading dimension a rows x cols matrix can have.
  TILEFUSE_HOST_DEVICE static constexpr index_t packed_ld(index_t /*rows*/, index_t cols) { return cols; }
};
struct ColumnMajor {
  static constexpr char const* kName = "column-major";
  TILEFUSE_HOST_DEVICE static constexpr index_t offset(index_t row, index_t col, index_t ld) {
    return col * ld + row;
  }
  TILEFUSE_HOST_DEVICE static constexpr index_t packed_ld(index_t rows, index_t /*cols*/) { return rows; }
};

// A batch of matrices: element (row, col) of matrix `batch` is data[batch * batch_stride + offset].
template <class T, class Layout>
struct MatrixRef {
  using Element = T;
  using LayoutTag = Layout;

  T* data = nullptr;
  index_t rows = 0;
  index_t cols = 0;
  index_t ld = 0;
  index_t batch_stride = 0;

  // A packed batch: matrices stored one after another with the smallest leading dimension.
  TILEFUSE_HOST_DEVICE static constexpr MatrixRef packed(T* data, index_t rows, index_t cols) {
    index_t const ld = Layout::packed_ld(rows, cols);
    index_t const stride = rows * cols;
    return MatrixRef{data, rows, cols, ld, stride};
  }

  TILEFUSE_HOST_DEVICE constexpr index_t offset(index_t row, index_t col, index_t batch = 0) const {
    return batch * batch_stride + Layout::offset(row, col, ld);
  }
  TILEFUSE_HOST_DEVICE constexpr T& at(index_t row, index_t col, index_t batch = 0) const {
    return data[offset(row, col, batch)];
  }
};

// A 4-D tensor whose innermost dimension (c) has unit stride. extent = (n, h, w, c) for NHWC,
// (k, r, s, c) for KRSC; stride0..2 are the element strides of the three outer dimensions.
template <class T>
struct Tensor4DRef {
  using Element = T;

  T* data = nullptr;
  Coord4D extent{};
  index_t stride0 = 0;
  index_t stride1 = 0;
  index_t stride2 = 0;

  TILEFUSE_HOST_DEVICE static constexpr Tensor4DRef packed(T* data, Coord4D extent) {
    index_t const s2 = extent.d3;
    index_t const s1 = extent.d2 * s2;
    index_t const s0 = extent.d1 * s1;
    return Tensor4DRef{data, extent, s0, s1, s2};
  }

  TILEFUSE_HOST_DEVICE constexpr index_t element_count() const {
    return extent.d0 * extent.d1 * extent.d2 * extent.d3;
  }
  TILEFUSE_HOST_DEVICE constexpr index_t offset(Coord4D c) const {
    return c.d0 * stride0 + c.d1 * stride1 + c.d2 * stride2 + c.d3;
  }
  TILEFUSE_HOST_DEVICE constexpr T& at(Coord4D c) const { return data[offset(c)]; }
  TILEFUSE_HOST_DEVICE constexpr T& at(index_t i0, index_t i1, index_t i2, index_t i3) const {
    return data[offset(Coord4D{i0, i1, i2, i3})];
  }
};

// Activations are NHWC: extent = (N, H, W, C).
template <class T>
using TensorNHWC = Tensor4DRef<T>;
// Filters are KRSC: extent = (K, R, S, C).
template <class T>
using TensorKRSC = Tensor4DRef<T>;

}  // namespace tilefuse
