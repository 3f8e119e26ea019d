// StoredRow<T, V>: V consecutive elements of T as they are stored in memory. This is what a leaf's
// load() hands to its visit() (a bias or residual row stays bf16 until it is used), and load_row reads it.
//
// Elements narrower than 32 bits are held as whole 32-bit words (PackedRow) and unpacked only where the
// visit reads them. load_row has two paths, one vector load or element by element, and the compiler
// joins them after the branch. Held as Array<bf16, 8>, the join was on eight 16-bit values: each
// vector's elements were unpacked (PRMT) right after its load, so every vector waited for its load
// before the next vector's loads were issued, and batching the loads did nothing
// (docs/notes/gemm_sm80.md, the epilogue's loads batched).
#pragma once

#include <cuda/std/bit>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/core/array.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

// V elements of a 1- or 2-byte T in V * sizeof(T) / 4 words, element i in the bits a little-endian
// load puts it in (so the bytes are exactly the stored ones, and a vector load fills it as is).
template <class T, int V>
struct PackedRow {
  static constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
  static constexpr int kElementBits = 8 * static_cast<int>(sizeof(T));
  using Bits = cuda::std::conditional_t<sizeof(T) == 1, cuda::std::uint8_t, cuda::std::uint16_t>;
  Array<cuda::std::uint32_t, V / kPerWord> words;

  TILEFUSE_HOST_DEVICE T operator[](int i) const {
    return cuda::std::bit_cast<T>(static_cast<Bits>(words[i / kPerWord] >> (kElementBits * (i % kPerWord))));
  }
  // Sets element i of a row whose element i is still zero.
  TILEFUSE_HOST_DEVICE void insert(int i, T value) {
    words[i / kPerWord] |= cuda::std::uint32_t{cuda::std::bit_cast<Bits>(value)} << (kElementBits * (i % kPerWord));
  }
};

template <class T, int V>
inline constexpr bool kPacksIntoWords = sizeof(T) < 4 && (V * sizeof(T)) % 4 == 0;

template <class T, int V>
using StoredRow = cuda::std::conditional_t<kPacksIntoWords<T, V>, PackedRow<T, V>, Array<T, V>>;

static_assert(sizeof(PackedRow<bfloat16_t, 8>) == sizeof(Array<bfloat16_t, 8>) &&
                  alignof(PackedRow<bfloat16_t, 8>) == alignof(Array<bfloat16_t, 8>),
              "a packed row has the bytes and the alignment of the stored elements");

// Reads `valid` consecutive elements as they are stored (the rest are zero): one vector load when the
// whole vector is inside the output and aligned, element by element otherwise.
template <int V, class T>
TILEFUSE_HOST_DEVICE inline StoredRow<T, V> load_row(T const* src, int valid) {
  using Row = StoredRow<T, V>;
  if (valid == V && is_vector_aligned<T, V>(src)) return *reinterpret_cast<Row const*>(src);
  Row out{};  // zero bits: every T's zero
  for (int i = 0; i < V; ++i) {
    if (i < valid) {
      if constexpr (kPacksIntoWords<T, V>) {
        out.insert(i, src[i]);
      } else {
        out[i] = src[i];
      }
    }
  }
  return out;
}

// load_row's asynchronous form, for kernels that stage a fragment's inputs in shared memory (`into`, a
// StoredRow<T, V> or any type with its bytes) ahead of its visit: a whole, aligned vector is copied by
// cp.async (the caller commits and waits for the group before reading `into`); anything else, and
// every host call, is loaded and stored here. kReused: many threads read the same elements (a bias), so
// they are kept in L1.
template <int V, bool kReused, class T, class Row>
TILEFUSE_HOST_DEVICE inline void load_row_async(Row* into, T const* src, int valid) {
  static_assert(sizeof(Row) == sizeof(StoredRow<T, V>), "`into` holds the V elements' bytes");
#if TILEFUSE_IS_DEVICE_CODE
  constexpr int kPiece = static_cast<int>(alignof(StoredRow<T, V>));
  if constexpr (kPiece >= 4) {
    if (valid == V && is_vector_aligned<T, V>(src)) {
      for (int b = 0; b < static_cast<int>(sizeof(Row)); b += kPiece) {
        arch::cp_async<kPiece, kReused>(reinterpret_cast<char*>(into) + b, reinterpret_cast<char const*>(src) + b);
      }
      return;
    }
  }
#endif
  *into = cuda::std::bit_cast<Row>(load_row<V>(src, valid));
}

template <int V, class Row>
TILEFUSE_HOST_DEVICE inline Array<float, V> to_floats(Row const& v) {
  Array<float, V> out;
  for (int i = 0; i < V; ++i) out[i] = to_float(v[i]);
  return out;
}

}  // namespace tilefuse::epilogue
