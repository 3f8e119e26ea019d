// tilefuse-epilogue-sweep: see sweep.cuh.
#include <cstdio>
#include <string_view>
#include <vector>

#include "random_fill.hpp"
#include "sweep.cuh"

namespace tilefuse::bench::sweep {
namespace {

Element* random_buffer(index_t count, unsigned seed) {
  Element* p = nullptr;
  cudaMalloc(&p, count * sizeof(Element));
  fill_normal(p, DType::kBF16, count, seed, 1.0f, nullptr);
  return p;
}

}  // namespace

void print_row(char const* tree, char const* kernel, Shape shape, double plain_ms, double ms) {
  std::printf("| %-20s | %-16s | %6lldx%5lldx%5lld | %8.4f | %8.4f | %+6.1f%% | %s |\n", tree, kernel,
              static_cast<long long>(shape.m), static_cast<long long>(shape.n), static_cast<long long>(shape.k),
              plain_ms, ms, (ms / plain_ms - 1.0) * 100.0, cudaGetErrorString(cudaGetLastError()));
  std::fflush(stdout);
}

}  // namespace tilefuse::bench::sweep

// No argument: every tree against plain on both kernels. "schedules": the two kernels against each other
// on the issue-5 shapes.
int main(int argc, char** argv) {
  using namespace tilefuse::bench::sweep;
  bool const schedules = argc > 1 && std::string_view(argv[1]) == "schedules";
  // GEMMs, and the GEMM shapes of two ResNet-50 convs at N=64 (56x56x64 -> 256 1x1; 28x28x128 -> 128 3x3).
  std::vector<Shape> const shapes = {{8192, 8192, 8192}, {4096, 4096, 4096}, {8192, 8192, 1024}, {200704, 256, 64},
                                     {50176, 128, 1152}};
  tilefuse::index_t const most = 16384ll * 8192;  // elements of the largest operand of any shape
  Buffers buffers;
  for (int i = 0; i < kSets; ++i) {
    unsigned const seed = 10u * static_cast<unsigned>(i);
    buffers.a[i] = random_buffer(most, seed + 1u);
    buffers.b[i] = random_buffer(most, seed + 2u);
    buffers.c[i] = random_buffer(most, seed + 3u);
    buffers.d[i] = random_buffer(most, seed + 4u);
    buffers.bias[i] = random_buffer(16384, seed + 5u);
  }
  if (schedules) {
    std::printf("| tree | m x n x k | coop 128x256 ms (A, A) | ping-pong 64x256 ms (B, B) | coop / ping-pong |\n"
                "|---|---|---:|---:|---:|\n");
    for (Shape const& shape : {Shape{8192, 8192, 8192}, Shape{4096, 4096, 4096}, Shape{2048, 2048, 2048},
                               Shape{4096, 14336, 4096}, Shape{8192, 8192, 1024}, Shape{16384, 8192, 1024}}) {
      sweep_schedules(buffers, shape);
    }
    return 0;
  }
  std::printf("| tree | kernel | m x n x k | plain ms | tree ms | tree over plain | status |\n"
              "|---|---|---|---:|---:|---:|---|\n");
  for (Shape const& shape : shapes) {
    sweep_bias(buffers, shape);
    sweep_bias_gelu(buffers, shape);
    sweep_residual(buffers, shape);
    sweep_bias_residual(buffers, shape);
    sweep_bias_gelu_residual(buffers, shape);
  }
  return 0;
}
