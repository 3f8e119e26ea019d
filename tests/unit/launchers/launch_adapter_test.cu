// The library's launchers (templates compiled by nvcc into the caller) reach the GPU only through the installed
// HostAdapter: driven here with the host tests' FakeAdapter, which records each launch and runs nothing, so no GPU
// is needed. A launcher that called the CUDA runtime itself would bypass the recorder and fail these tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/pack_operand.hpp>
#include <tilefuse/gemm/device/skinny_launch.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

#include "../runtime/fake_host_adapter.hpp"

namespace {

using namespace tilefuse;

// Addresses the launchers check (16-byte aligned) but never read: nothing runs.
template <class T>
T* fake_address(std::uintptr_t at) {
  return reinterpret_cast<T*>(at);
}

TEST(LauncherAdapter, PackKMajorLaunchesThroughTheInstalledAdapter) {
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  cudaStream_t const stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5000});
  // 70 rows of k = 13, 3 batches, padded to 16: two 64-row tiles by one 64-column tile, z = 3.
  ASSERT_TRUE(gemm::pack_k_major<half_t>(fake_address<half_t const>(0x1000), 70, 13, 13, 1, 3, 70 * 13,
                                         fake_address<half_t>(0x2000), 16, stream)
                  .ok());
  FakeAdapter const& a = *fake;
  ASSERT_EQ(a.launches.size(), 1u);
  EXPECT_EQ(a.kernels[0], reinterpret_cast<void const*>(&gemm::pack_k_major_kernel<half_t>));
  EXPECT_EQ(a.launches[0].grid.x, 2u);
  EXPECT_EQ(a.launches[0].grid.z, 3u);
  EXPECT_EQ(a.launches[0].block.x, static_cast<unsigned>(gemm::kPackThreads));
  EXPECT_EQ(a.launches[0].stream, stream);
}

TEST(LauncherAdapter, PackKMajorOfNothingLaunchesNothing) {
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  ASSERT_TRUE(gemm::pack_k_major<half_t>(fake_address<half_t const>(0x1000), 70, 13, 13, 1, 0, 0,
                                         fake_address<half_t>(0x2000), 16, nullptr)
                  .ok());
  EXPECT_TRUE(fake->launches.empty());
}

TEST(LauncherAdapter, SkinnyGemmLaunchesThroughTheInstalledAdapter) {
  using Tree = epilogue::Store<"D", bfloat16_t, epilogue::Acc>;
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  GemmCoord const problem{4, 100, 64, 2};  // m, n, k, batch: ceil(100 / 8) blocks of columns, z = 2
  typename Tree::Params params{};
  ASSERT_TRUE((gemm::launch_skinny<bfloat16_t, Tree>(problem, fake_address<bfloat16_t const>(0x10000), 64, 4 * 64,
                                                     fake_address<bfloat16_t const>(0x20000), 64, 100 * 64, params,
                                                     nullptr))
                  .ok());
  FakeAdapter const& a = *fake;
  ASSERT_EQ(a.launches.size(), 1u);
  EXPECT_EQ(a.kernels[0], reinterpret_cast<void const*>(&gemm::skinny::skinny_gemm_kernel<bfloat16_t, Tree>));
  EXPECT_EQ(a.launches[0].grid.x, 13u);
  EXPECT_EQ(a.launches[0].grid.z, 2u);
  EXPECT_EQ(a.launches[0].block.x, static_cast<unsigned>(gemm::skinny::kSkinnyThreads));
}

TEST(LauncherAdapter, SkinnyGemmRefusesBeforeLaunching) {
  using Tree = epilogue::Store<"D", bfloat16_t, epilogue::Acc>;
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  typename Tree::Params params{};
  Status const s = gemm::launch_skinny<bfloat16_t, Tree>(GemmCoord{4, 100, 64, 1}, fake_address<bfloat16_t const>(0x10002),
                                                         64, 0, fake_address<bfloat16_t const>(0x20000), 64, 0, params,
                                                         nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("16-byte-aligned bases"), std::string::npos) << s.message();
  EXPECT_TRUE(fake->launches.empty());
}

}  // namespace
