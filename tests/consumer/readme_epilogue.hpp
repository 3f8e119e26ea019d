// The README's epilogue tree, D = relu(alpha * acc + bias[col]) + C stored as bf16: what every consumer program
// here builds (on the host, in a kernel, in gemm::Gemm).
#pragma once

#include <tilefuse/epilogue/evt.h>

namespace consumer {

using tilefuse::bfloat16_t;
using namespace tilefuse::epilogue;
using ReadmeEpilogue = Store<"D", bfloat16_t,
    Add<Relu<Add<Mul<Scalar<"alpha">, Acc>, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"C", bfloat16_t>>>;

}  // namespace consumer
