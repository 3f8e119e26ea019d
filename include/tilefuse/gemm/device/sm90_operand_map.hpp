// The TMA tensor map of one K-major operand of the sm90 GEMM (A: m x k row-major, B: k x n column-major):
// the operand as a 3D tensor (k, rows, batch), innermost first, read in boxes of box_k x box_rows with
// the 128-byte swizzle the kernel's shared-memory tiles use. Shared by GemmSm90 and the Python runtime
// module (tilefuse._C), which packs the parameters of JIT-compiled kernels itself.
// Host code.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums only; the encode goes through the host adapter

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include <tilefuse/arch/tma.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/runtime/tensor_map.hpp>

namespace tilefuse::gemm {

// element_bytes: 2 for bf16 / fp16 (data_type BFLOAT16 / FLOAT16), 1 for FP8 (UINT8: TMA only moves
// the bytes; the wgmma reads the type). ld and batch_stride in elements; batch_stride 0 (or batch 1)
// means one matrix for the whole batch.
inline Status encode_sm90_operand(char const* name, CUtensorMapDataType data_type, int element_bytes,
                                  void const* data, index_t k, index_t rows, index_t batch, index_t ld,
                                  index_t batch_stride, int box_k, int box_rows, CUtensorMap* out) {
  auto const bytes = static_cast<std::uint64_t>(element_bytes);
  TensorMapTiledArgs t;
  t.data_type = data_type;
  t.rank = 3;
  t.global_address = const_cast<void*>(data);
  t.global_dim[0] = static_cast<cuuint64_t>(k);
  t.global_dim[1] = static_cast<cuuint64_t>(rows);
  // One matrix (batch 1, or batch_stride 0: shared by the batch, the kernel then asks for batch 0
  // only) is a batch extent of 1 with the packed stride, which is never used.
  bool const one_matrix = batch == 1 || batch_stride == 0;
  t.global_dim[2] = static_cast<cuuint64_t>(one_matrix ? 1 : batch);
  t.global_strides[0] = static_cast<cuuint64_t>(ld) * bytes;
  t.global_strides[1] = static_cast<cuuint64_t>(one_matrix ? rows * ld : batch_stride) * bytes;
  t.box_dim[0] = static_cast<cuuint32_t>(box_k);
  t.box_dim[1] = static_cast<cuuint32_t>(box_rows);
  t.box_dim[2] = 1;
  t.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  t.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  t.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  Status const s = make_tensor_map_tiled(t, out);
  if (!s.ok()) return {s.code(), status_message("gemm_sm90: tensor map of ", name, ": ", s.message())};
  return {};
}

// The same for a matrix of Element (bf16, fp16, or a 1-byte FP8 type), written into the kernel
// parameter's descriptor.
template <class Element>
Status encode_sm90_operand(char const* name, Element const* data, index_t k, index_t rows, index_t batch, index_t ld,
                           index_t batch_stride, int box_k, int box_rows, arch::TmaDescriptor* out) {
  static_assert(sizeof(CUtensorMap) == sizeof(arch::TmaDescriptor), "a tensor map is 128 bytes");
  CUtensorMapDataType const type = std::is_same_v<Element, bfloat16_t> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : std::is_same_v<Element, half_t>   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                       : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  CUtensorMap map;
  TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand(name, type, static_cast<int>(sizeof(Element)), data, k, rows, batch, ld,
                                               batch_stride, box_k, box_rows, &map));
  std::memcpy(out, &map, sizeof(map));
  return {};
}

// ANDed with the batch index by the kernels: 0 where one matrix serves the whole batch (its map has a
// batch extent of 1), -1 where each batch entry has its own.
inline int tma_batch_mask(index_t batch, index_t batch_stride) { return batch == 1 || batch_stride == 0 ? 0 : -1; }

// Whether a 16-bit matrix's base, leading dimension and batch stride (in elements) are whole 16-byte
// pieces, as TMA needs (a batch of 1, or batch stride 0 for one matrix shared by the batch, has no
// batch stride to check).
inline bool tma_rows_aligned(void const* data, index_t ld, index_t batch, index_t batch_stride) {
  bool const one_matrix = batch == 1 || batch_stride == 0;
  return reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && ld % 8 == 0 && (one_matrix || batch_stride % 8 == 0);
}

// Why TMA cannot read a 16-bit residual at data with leading dimension ld (empty: it can). The one text of
// this fact: conv::Conv2d, gemm::Gemm and the Python package (tilefuse._C) all ask it here.
inline std::string tma_residual_unaligned(void const* data, index_t ld, index_t batch, index_t batch_stride) {
  if (tma_rows_aligned(data, ld, batch, batch_stride)) return {};
  return status_message("the residual, loaded by TMA, needs a 16-byte-aligned base and a leading dimension (and "
                        "batch stride) that are multiples of 8 elements (ld = ", ld, ")");
}

// Kernels whose config asks for the TMA residual (Kernel::kTmaAux): the tensor map of the epilogue's staged
// residual, an m x n row-major 16-bit matrix (per batch) read in boxes of 64 columns x TileM rows, into
// params->tma_aux. Other kernels: nothing to do. `who` names the operation in messages.
// Why Kernel cannot load the residual bound in `epilogue` (its tree's Params) by TMA (empty: it can, or
// Kernel does not load it so).
template <class Kernel, class EpilogueParams>
std::string sm90_aux_unaligned(EpilogueParams const& epilogue, index_t batch) {
  if constexpr (Kernel::kTmaAux) {
    auto const* aux = Kernel::staged_aux(epilogue);
    return tma_residual_unaligned(aux->data, aux->ld, batch, aux->batch_stride);
  } else {
    (void)epilogue, (void)batch;
  }
  return {};
}

// Whether the column vector (bias) of n values per batch entry can ride along by bulk copies of whole
// 16-byte pieces: its base, batch stride and n keep every chunk's piece 16-byte aligned and inside it.
inline bool column_copyable_by_tma(void const* data, int element_bytes, index_t n, index_t batch, index_t batch_stride) {
  index_t const per_piece = 16 / element_bytes;
  return reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && n % per_piece == 0 &&
         (batch == 1 || batch_stride % per_piece == 0);
}

template <class Kernel>
Status encode_sm90_aux(char const* who, index_t m, index_t n, index_t batch, typename Kernel::Params* params) {
  if constexpr (Kernel::kTmaAux) {
    std::string const unaligned = sm90_aux_unaligned<Kernel>(params->epilogue, batch);
    if (!unaligned.empty()) return not_supported(who, ": ", unaligned);
    auto const* aux = Kernel::staged_aux(params->epilogue);
    static_assert(sizeof(*aux->data) == 2, "the staged residual is 16-bit");
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand("residual", aux->data, n, m, batch, aux->ld, aux->batch_stride, 64,
                                                 Kernel::kTileM, &params->tma_aux));
    params->batch_mask_aux = tma_batch_mask(batch, aux->batch_stride);
    if constexpr (Kernel::kTmaColumn) {
      // The column vector (bias) rides along by bulk copies of whole 16-byte pieces: its base, batch
      // stride and n must keep every chunk's piece 16-byte aligned and inside the vector.
      auto const* c = Kernel::staged_column(params->epilogue);
      params->column_by_tma = column_copyable_by_tma(c->data, static_cast<int>(sizeof(*c->data)), n, batch, c->batch_stride);
    }
  } else {
    (void)who, (void)m, (void)n, (void)batch, (void)params;
  }
  return {};
}

// Kernels that copy D out by TMA stores (Kernel::kTmaStore): D's tensor map (an m x n row-major 16-bit
// matrix per batch, written in boxes of 64 columns x 16 rows) into params->tma_d and d_by_tma = 1, where
// TMA can describe D (a 16-byte-aligned base, a leading dimension and batch stride of whole 16-byte
// pieces, one matrix per batch entry) and n is a multiple of 8: a TMA store writes the whole 16-byte
// piece holding a row's last column, past n into the padding (the GPU tests' guard regions caught it
// with n = 257); otherwise d_by_tma = 0 and the kernel's lanes store D. Other kernels:
// nothing to do. Call after the epilogue's arguments are bound.
// Whether TMA stores of 16-bit D (m x n row-major per batch entry; ld, batch_stride in elements) write
// exactly D: a 16-byte-aligned base, rows and batch entries whole 16-byte pieces apart, one matrix per
// batch entry, and n a multiple of 8 (the piece holding a row's last column is written whole).
inline bool d_storable_by_tma(void const* data, index_t n, index_t ld, index_t batch, index_t batch_stride) {
  return tma_rows_aligned(data, ld, batch, batch_stride) && n % 8 == 0 && (batch == 1 || batch_stride != 0);
}

template <class Kernel>
void encode_sm90_store(index_t m, index_t n, index_t batch, typename Kernel::Params* params) {
  if constexpr (Kernel::kTmaStore) {
    auto const& d = params->epilogue;
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(d.data)>>;
    static_assert(sizeof(T) == 2, "the packed epilogue stores 16-bit D");
    params->d_by_tma = 0;
    if (!d_storable_by_tma(d.data, n, d.ld, batch, d.batch_stride)) return;
    CUtensorMapDataType const type = std::is_same_v<T, bfloat16_t> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                  : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    CUtensorMap map;
    if (!encode_sm90_operand("D", type, 2, d.data, n, m, batch, d.ld, d.batch_stride, 64, 16, &map).ok()) return;
    static_assert(sizeof(map) == sizeof(params->tma_d), "a tensor map is 128 bytes");
    std::memcpy(&params->tma_d, &map, sizeof(map));
    params->d_by_tma = 1;
  } else {
    (void)m, (void)n, (void)batch, (void)params;
  }
}

}  // namespace tilefuse::gemm
