// The library's launchers (templates compiled by nvcc into the caller) reach the GPU only through the installed
// HostAdapter: driven here with an adapter that records each launch and runs nothing, so no GPU is needed. A
// launcher that called the CUDA runtime itself would bypass the recorder and fail these tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/pack_operand.hpp>
#include <tilefuse/gemm/device/skinny_launch.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

namespace {

using namespace tilefuse;

class RecordingAdapter final : public HostAdapter {
 public:
  char const* name() const override { return "recording"; }
  Status encode_tensor_map_tiled(TensorMapTiledArgs const&, CUtensorMap*) override { return refused(); }
  Status encode_tensor_map_im2col(TensorMapIm2colArgs const&, CUtensorMap*) override { return refused(); }
  Status launch(LaunchConfig const& config, void const* kernel, void** kernel_args) override {
    configs.push_back(config);
    kernels.push_back(kernel);
    first_argument.push_back(kernel_args != nullptr ? kernel_args[0] : nullptr);
    return Status::success();
  }
  static Status refused() { return {StatusCode::kDriverError, "the recording adapter encodes no tensor maps"}; }

  std::vector<LaunchConfig> configs;
  std::vector<void const*> kernels;
  std::vector<void*> first_argument;  // valid only during the launch: read it there, or copy what it points to
};

class Installed {
 public:
  Installed() : adapter(std::make_shared<RecordingAdapter>()) { set_host_adapter(adapter); }
  ~Installed() { set_host_adapter(nullptr); }
  Installed(Installed const&) = delete;
  Installed& operator=(Installed const&) = delete;
  std::shared_ptr<RecordingAdapter> adapter;
};

// Addresses the launchers check (16-byte aligned) but never read: nothing runs.
template <class T>
T* fake_address(std::uintptr_t at) {
  return reinterpret_cast<T*>(at);
}

TEST(LauncherAdapter, PackKMajorLaunchesThroughTheInstalledAdapter) {
  Installed installed;
  cudaStream_t const stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5000});
  // 70 rows of k = 13, 3 batches, padded to 16: two 64-row tiles by one 64-column tile, z = 3.
  ASSERT_TRUE(gemm::pack_k_major<half_t>(fake_address<half_t const>(0x1000), 70, 13, 13, 1, 3, 70 * 13,
                                         fake_address<half_t>(0x2000), 16, stream)
                  .ok());
  RecordingAdapter const& a = *installed.adapter;
  ASSERT_EQ(a.configs.size(), 1u);
  EXPECT_EQ(a.kernels[0], reinterpret_cast<void const*>(&gemm::pack_k_major_kernel<half_t>));
  EXPECT_EQ(a.configs[0].grid.x, 2u);
  EXPECT_EQ(a.configs[0].grid.z, 3u);
  EXPECT_EQ(a.configs[0].block.x, static_cast<unsigned>(gemm::kPackThreads));
  EXPECT_EQ(a.configs[0].stream, stream);
}

TEST(LauncherAdapter, PackKMajorOfNothingLaunchesNothing) {
  Installed installed;
  ASSERT_TRUE(gemm::pack_k_major<half_t>(fake_address<half_t const>(0x1000), 70, 13, 13, 1, 0, 0,
                                         fake_address<half_t>(0x2000), 16, nullptr)
                  .ok());
  EXPECT_TRUE(installed.adapter->configs.empty());
}

TEST(LauncherAdapter, SkinnyGemmLaunchesThroughTheInstalledAdapter) {
  using Tree = epilogue::Store<"D", bfloat16_t, epilogue::Acc>;
  Installed installed;
  GemmCoord const problem{4, 100, 64, 2};  // m, n, k, batch: ceil(100 / 8) blocks of columns, z = 2
  typename Tree::Params params{};
  ASSERT_TRUE((gemm::launch_skinny<bfloat16_t, Tree>(problem, fake_address<bfloat16_t const>(0x10000), 64, 4 * 64,
                                                     fake_address<bfloat16_t const>(0x20000), 64, 100 * 64, params,
                                                     nullptr))
                  .ok());
  RecordingAdapter const& a = *installed.adapter;
  ASSERT_EQ(a.configs.size(), 1u);
  EXPECT_EQ(a.kernels[0], reinterpret_cast<void const*>(&gemm::skinny::skinny_gemm_kernel<bfloat16_t, Tree>));
  EXPECT_EQ(a.configs[0].grid.x, 13u);
  EXPECT_EQ(a.configs[0].grid.z, 2u);
  EXPECT_EQ(a.configs[0].block.x, static_cast<unsigned>(gemm::skinny::kSkinnyThreads));
}

TEST(LauncherAdapter, SkinnyGemmRefusesBeforeLaunching) {
  using Tree = epilogue::Store<"D", bfloat16_t, epilogue::Acc>;
  Installed installed;
  typename Tree::Params params{};
  Status const s = gemm::launch_skinny<bfloat16_t, Tree>(GemmCoord{4, 100, 64, 1}, fake_address<bfloat16_t const>(0x10002),
                                                         64, 0, fake_address<bfloat16_t const>(0x20000), 64, 0, params,
                                                         nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("16-byte-aligned bases"), std::string::npos) << s.message();
  EXPECT_TRUE(installed.adapter->configs.empty());
}

}  // namespace
