// gemm::Gemm's device API instantiated by a consumer with the README's epilogue tree: every kernel its planner
// can pick, compiled for every tilefuse arch (not launched: CI has no GPU). Built by the package route only
// (CMakeLists.txt): the other routes give the same headers and flags, and this is the consumer's longest compile.
#include <cstdio>

#include <tilefuse/gemm/device/gemm.hpp>

#include "readme_epilogue.hpp"

namespace {

using namespace tilefuse;
using Bf16Gemm = gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, consumer::ReadmeEpilogue>;

}  // namespace

int main() {
  // Taking the operation's address makes nvcc compile its kernels for every arch.
  auto run = &Bf16Gemm::run;
  std::printf("device_gemm: gemm::Gemm compiled (%p); not launched here\n", reinterpret_cast<void*>(run));
  return run != nullptr ? 0 : 1;
}
