// A global test environment for the GPU tests: fails the whole run at once when no CUDA device is
// usable (instead of every test failing on its first allocation), and prints which device ran it.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <iostream>

namespace tilefuse::gpu_test {
namespace {

class GpuEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    int count = 0;
    cudaError_t const error = cudaGetDeviceCount(&count);
    ASSERT_EQ(error, cudaSuccess) << "no usable CUDA device: " << cudaGetErrorName(error) << " ("
                                  << cudaGetErrorString(error) << "); the GPU tests need one";
    ASSERT_GT(count, 0) << "no CUDA device; the GPU tests need one";
    int device = 0;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    cudaDeviceProp props{};
    ASSERT_EQ(cudaGetDeviceProperties(&props, device), cudaSuccess);
    int driver = 0;
    int runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    std::cout << "[ device   ] " << props.name << ", sm_" << props.major << props.minor << ", "
              << props.multiProcessorCount << " SMs, " << (props.totalGlobalMem >> 20) << " MiB; driver " << driver
              << ", runtime " << runtime << std::endl;
    ASSERT_GE(props.major, 8) << "the sm_80 GEMM path needs compute capability 8.0 or newer";
  }
};

::testing::Environment* const registered = ::testing::AddGlobalTestEnvironment(new GpuEnvironment);

}  // namespace
}  // namespace tilefuse::gpu_test
