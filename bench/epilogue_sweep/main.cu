// tilefuse-epilogue-sweep: see sweep.cuh.
#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "sweep.cuh"

namespace tilefuse::bench::sweep {
namespace {

__global__ void fill_normal(Element* data, index_t count, unsigned seed) {
  for (index_t i = index_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += index_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 16, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    unsigned g = h * 747796405u + 2891336453u;
    float const u1 = (static_cast<float>(h >> 8) + 1.0f) / 16777217.0f;
    float const u2 = static_cast<float>(g >> 8) / 16777216.0f;
    data[i] = convert<Element>(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

Element* random_buffer(index_t count, unsigned seed) {
  Element* p = nullptr;
  cudaMalloc(&p, count * sizeof(Element));
  fill_normal<<<1024, 256>>>(p, count, seed);
  return p;
}

}  // namespace

double median_ms(void (*run)(void const*, int), void const* context) {
  for (int i = 0; i < 2 * kSets; ++i) run(context, i);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 7 * kSets; ++i) {
    cudaEventRecord(start);
    run(context, i);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start), cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

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
