// The argument checks every GEMM device operation makes of an operand: resolve the packed defaults
// of the leading dimension and batch stride, refuse overlapping or too-small ones, and require device
// memory. Each operation adds what its kernel needs on top (e.g. TMA's 16-byte alignment).
#pragma once

#include <type_traits>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/runtime/pointer_check.hpp>

namespace tilefuse::gemm::detail {

// `name` is rows x cols in Layout, stored with ld_in and stride_in (kPacked: the packed value; a batch
// stride of 0: one matrix shared by the batch). op names the operation in messages ("gemm").
template <class Layout, class T>
Status resolve_operand(char const* op, char const* name, T const* data, index_t rows, index_t cols, index_t batch,
                       index_t ld_in, index_t stride_in, index_t* ld, index_t* stride) {
  if (data == nullptr) return invalid_argument(op, ": ", name, " is a null pointer");
  index_t const min_ld = Layout::packed_ld(rows, cols);
  *ld = ld_in == epilogue::kPacked ? min_ld : ld_in;
  if (*ld < min_ld) {
    return invalid_argument(op, ": ld", name, " = ", *ld, " is smaller than ", min_ld, ", the smallest leading ",
                            "dimension of a ", Layout::kName, " ", rows, " x ", cols, " ", name, "; pass ld", name,
                            " >= ", min_ld);
  }
  index_t const matrix = (std::is_same_v<Layout, RowMajor> ? rows : cols) * *ld;
  *stride = stride_in == epilogue::kPacked ? matrix : stride_in;
  if (*stride < 0 || (batch > 1 && *stride != 0 && *stride < matrix)) {
    return invalid_argument(op, ": batch_stride_", name, " = ", *stride, " overlaps the ", batch, " matrices of ",
                            matrix, " elements; use 0 (shared) or at least ", matrix);
  }
  return check_device_pointer(op, name, data);
}

}  // namespace tilefuse::gemm::detail
