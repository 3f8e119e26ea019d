// Device code of a consumer: the README's epilogue tree evaluated in a kernel, built for every tilefuse arch
// (compiled and loaded, not launched: CI has no GPU). Every route builds it; gemm::Gemm's instantiation, the
// same headers and flags by any route, is device_gemm.cu's (the package route's).
#include <cstdio>

#include <tilefuse/gemm/device/gemm.hpp>

#include "readme_epilogue.hpp"

namespace {

using namespace tilefuse;
using namespace tilefuse::epilogue;
using Epilogue = consumer::ReadmeEpilogue;

__global__ void apply(Epilogue::Params params, Fragment<8> f) { evaluate<Epilogue>(params, f); }

}  // namespace

int main() {
  // Taking the kernel's address makes nvcc compile it for every arch.
  void const* kernel = reinterpret_cast<void const*>(&apply);
  std::printf("device_epilogue: kernel compiled (%p); not launched here\n", kernel);
  return kernel != nullptr ? 0 : 1;
}
