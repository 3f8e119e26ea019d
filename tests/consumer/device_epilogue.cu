// Device code of a consumer: the README's epilogue tree evaluated in a kernel, and gemm::Gemm's device
// API instantiated (compiled, not launched: CI has no GPU), built for every tilefuse arch.
#include <cstdio>

#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/gemm.hpp>

namespace {

using namespace tilefuse;
using namespace tilefuse::epilogue;
using Epilogue = Store<"D", bfloat16_t,
    Add<Relu<Add<Mul<Scalar<"alpha">, Acc>, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"C", bfloat16_t>>>;

__global__ void apply(Epilogue::Params params, Fragment<8> f) { evaluate<Epilogue>(params, f); }

using Bf16Gemm = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, Epilogue>;

}  // namespace

int main() {
  // Taking the kernel's and the operation's addresses makes nvcc compile them for every arch.
  void const* kernel = reinterpret_cast<void const*>(&apply);
  auto run = &Bf16Gemm::run;
  std::printf("device_epilogue: kernels compiled (%p, %p); not launched here\n", kernel, reinterpret_cast<void*>(run));
  return kernel != nullptr && run != nullptr ? 0 : 1;
}
