// Device code that instantiates the device-side headers: compiled by nvcc for every target arch
// (tests/compile) and by NVRTC (tests/nvrtc), so both compilers see the same templates.
#include <tilefuse/core/array.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm90_staged_aux.h>

namespace tilefuse::smoke {

using namespace tilefuse::epilogue;

// Every node kind in one tree: bias, residual, region activation by row, aux output, reductions.
using Z = Store<"aux", bfloat16_t, Add<Mul<Scalar<"alpha">, Acc>, RowBroadcast<"bias", half_t>>>;
using Activated = Where<Less<Row, Scalar<"r0">>, Sigmoid<Z>, Tanh<Add<GeluTanh<Acc>, AuxLoad<"C", half_t>>>>;
using Tree = Store<"D", bfloat16_t,
                   RowReduce<"rowsum", reduce::Sum,
                             ColReduce<"amax", reduce::AbsMax,
                                       Clamp<Add<Activated, Mul<Col, Batch>>, Constant<-8.0f>, Constant<8.0f>>>>>;
using Tree2 = Store<"D", float_e4m3_t,
                    ColReduce<"colmax", reduce::Max,
                              LeakyRelu<Silu<GeluErf<Div<Acc, ColBroadcast<"scale", float>>>>, Constant<0.01f>>>>;

__global__ void epilogue_smoke(Tree::Params p, Tree2::Params p2, int rows, int cols) {
  Fragment<8> f;
  f.row = blockIdx.x * blockDim.x + threadIdx.x;
  f.col = 8 * blockIdx.y;
  f.batch = blockIdx.z;
  f.valid = cols - static_cast<int>(f.col);
  if (f.row >= rows) return;
  for (int i = 0; i < 8; ++i) f.acc[i] = static_cast<float>(i);
  epilogue::evaluate<Tree>(p, f);
  epilogue::evaluate<Tree2>(p2, f);
}

// load_async (the Hopper kernel's staged loads) for every node kind, into shared memory, then the visit.
__global__ void staged_load_smoke(Tree::Params p, Tree2::Params p2, int cols) {
  __shared__ Tree::Loaded<8> slot;
  __shared__ Tree2::Loaded<8> slot2;
  Fragment<8> f;
  f.row = threadIdx.x;
  f.col = 8 * blockIdx.y;
  f.valid = cols - static_cast<int>(f.col);
  Tree::load_async(p, f, &slot);
  Tree2::load_async(p2, f, &slot2);
  arch::cp_async_commit();
  arch::cp_async_wait<0>();
  Tree::visit(p, f, slot);
  Tree2::visit(p2, f, slot2);
}

// The sm90 packed epilogue's per-pair loads (sm90_staged_aux.h: row values, the staged column vector,
// the staged residual chunk) and its Params finders, on a tree with each kind of per-element input.
// (NVRTC refused templated lambdas there, which nvcc accepts: this is where that shows.)
using PackedInput = Add<Mul<Add<Acc, RowBroadcast<"bias", bfloat16_t>>, ColBroadcast<"scale", float>>, AuxLoad<"C", bfloat16_t>>;
__global__ void packed_loads_smoke(PackedInput::Params p, char const* column, float const* chunk, float* out) {
  using gemm::sm90::StagedChunk;
  using gemm::sm90::StagedColumn;
  Fragment<2> f;
  f.row = threadIdx.x;
  f.col = 2 * threadIdx.y;
  f.acc[0] = 1.0f, f.acc[1] = 2.0f;
  auto const rows = gemm::sm90::RowLoad<PackedInput>::load(p, f);
  auto const columns = gemm::sm90::StagedColumnLoad<PackedInput>::load(p, f, StagedColumn{column, 0, true});
  auto const plain = gemm::sm90::ColumnLoad<PackedInput>::load(p, f);
  auto const loaded = gemm::sm90::StagedAuxLoad<PackedInput>::load(p, f, StagedChunk{chunk, 0, 0, false}, columns, rows);
  Array<float, 2> const x = PackedInput::visit(p, f, loaded);
  Array<float, 2> const y = PackedInput::visit(p, f, gemm::sm90::StagedAuxLoad<PackedInput>::load(p, f, StagedChunk{chunk, 0, 0, true}, plain, rows));
  bool const found = gemm::sm90::staged_column_params<PackedInput>(p) != nullptr && gemm::sm90::staged_aux_params<PackedInput>(p) != nullptr;
  out[threadIdx.x] = x[0] + x[1] + y[0] + (found ? 1.0f : 0.0f);
}

__global__ void conversion_smoke(float const* in, half_t* h, bfloat16_t* b, float_e4m3_t* e4, float_e5m2_t* e5,
                                 tfloat32_t* t) {
  int const i = threadIdx.x;
  h[i] = convert<half_t>(in[i]);
  b[i] = convert<bfloat16_t>(in[i]);
  e4[i] = convert<float_e4m3_t>(to_float(b[i]));
  e5[i] = convert<float_e5m2_t>(to_float(h[i]));
  t[i] = convert<tfloat32_t>(to_float(e4[i]) + to_float(e5[i]));
}

}  // namespace tilefuse::smoke
