// Allocation and random initialisation of the conv2d operand sets.
#include "conv_operands.hpp"

#include "conv_elementwise.hpp"

namespace tilefuse::bench {

ConvOperandPool::ConvOperandPool(ConvProblem const& p, std::int64_t l2_bytes, std::size_t memory_budget,
                                 std::uint64_t seed, cudaStream_t stream) {
  auto const e = static_cast<std::size_t>(element_bytes(p.dtype));
  ConvMode const mode = p.shape.mode;
  bool const fused = p.epilogue == ConvEpilogue::kBiasReluResidual;
  bool const reads_x = mode != ConvMode::kDgrad;
  bool const reads_w = mode != ConvMode::kWgrad;
  bool const reads_dy = mode != ConvMode::kFprop;
  auto const activation = static_cast<std::size_t>(activation_elements(p));
  auto const filter = static_cast<std::size_t>(filter_elements(p));
  auto const output = static_cast<std::size_t>(output_elements(p));
  auto const channels = static_cast<std::size_t>(p.shape.K);
  OutputMatrix const om = output_matrix(p);

  std::size_t const x_bytes = reads_x ? e * activation : 0;
  std::size_t const w_bytes = reads_w ? e * filter : 0;
  std::size_t const dy_bytes = reads_dy ? e * output : 0;
  std::size_t const out_bytes = e * static_cast<std::size_t>(om.rows * om.cols);
  std::size_t const bias_bytes = fused ? e * channels : 0;
  std::size_t const bias_float_bytes = fused ? sizeof(float) * channels : 0;
  std::size_t const residual_bytes = fused ? e * output : 0;
  std::size_t const bytes_per_set =
      SetCarver::bytes_for({x_bytes, w_bytes, dy_bytes, out_bytes, bias_bytes, bias_float_bytes, residual_bytes});
  build(bytes_per_set, out_bytes, l2_bytes, memory_budget, seed, stream, [&](SetCarver& carve, std::uint64_t set_seed) {
    ConvOperands ops;
    ops.x = carve.take(x_bytes);
    ops.w = carve.take(w_bytes);
    ops.dy = carve.take(dy_bytes);
    ops.out = carve.take(out_bytes);
    ops.bias = carve.take(bias_bytes);
    ops.bias_float = carve.take(bias_float_bytes);
    ops.residual = carve.take(residual_bytes);
    auto fill = [&](void const* data, std::size_t elements, int tensor) {
      fill_set_tensor(data, p.dtype, static_cast<std::int64_t>(elements), set_seed, tensor, stream);
    };
    fill(ops.x, activation, 1);
    fill(ops.w, filter, 2);
    fill(ops.dy, output, 3);
    fill(ops.bias, channels, 4);
    fill(ops.residual, output, 5);
    if (fused) {
      widen_to_float(ops.bias, p.dtype, static_cast<float*>(const_cast<void*>(ops.bias_float)),
                     static_cast<std::int64_t>(channels), stream);
    }
    return ops;
  });
}

}  // namespace tilefuse::bench
