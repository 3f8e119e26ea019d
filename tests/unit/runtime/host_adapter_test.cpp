// Host adapter: installation, validation before every adapter, and the default adapter's one-time,
// thread-safe driver entry point resolution (with fake driver functions of the exact PFN types).
#include <tilefuse/runtime/default_host_adapter.hpp>
#include <tilefuse/runtime/host_adapter.hpp>
#include <tilefuse/runtime/tensor_map.hpp>

#include <cudaTypedefs.h>
#include <gtest/gtest.h>

#include "fake_host_adapter.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace tilefuse {
namespace {

void* fake_address() { return reinterpret_cast<void*>(std::uintptr_t{1} << 20); }

TensorMapTiledArgs bf16_matrix() {
  return tiled_args_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, fake_address(), 128, 256, 512, 64, 64,
                       CU_TENSOR_MAP_SWIZZLE_128B);
}

TensorMapIm2colArgs nhwc_half() {
  TensorMapIm2colArgs a;
  a.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  a.rank = 4;
  a.global_address = fake_address();
  a.global_dim[0] = 64;
  a.global_dim[1] = 32;
  a.global_dim[2] = 32;
  a.global_dim[3] = 8;
  a.global_strides[0] = 64 * 2;
  a.global_strides[1] = 32 * 64 * 2;
  a.global_strides[2] = 32 * 32 * 64 * 2;
  a.pixel_box_lower_corner[0] = -1;
  a.pixel_box_lower_corner[1] = -2;
  a.pixel_box_upper_corner[0] = -1;
  a.pixel_box_upper_corner[1] = 0;
  a.channels_per_pixel = 64;
  a.pixels_per_column = 128;
  a.element_strides[1] = 2;
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  a.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  return a;
}

// ---- installation ----

TEST(HostAdapter, DefaultIsInstalledUntilReplacedAndNullptrRestoresIt) {
  EXPECT_STREQ(host_adapter().name(), "default");
  EXPECT_EQ(&host_adapter(), &default_host_adapter());
  auto fake = std::make_shared<FakeAdapter>();
  set_host_adapter(fake);
  EXPECT_STREQ(host_adapter().name(), "fake");
  EXPECT_EQ(&host_adapter(), fake.get());
  set_host_adapter(nullptr);
  EXPECT_STREQ(host_adapter().name(), "default");
  EXPECT_EQ(&host_adapter(), &default_host_adapter());
}

TEST(HostAdapter, ReplacedAdapterStaysAliveForReferencesHandedOut) {
  auto first = std::make_shared<FakeAdapter>();
  std::weak_ptr<FakeAdapter> watch = first;
  set_host_adapter(first);
  HostAdapter& held = host_adapter();
  set_host_adapter(std::make_shared<FakeAdapter>());
  set_host_adapter(nullptr);
  first.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_STREQ(held.name(), "fake");
}

TEST(HostAdapter, ConcurrentReadersSeeSomeInstalledAdapter) {
  auto fake = std::make_shared<FakeAdapter>();
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        std::string const name = host_adapter().name();
        if (name != "fake" && name != "default") bad.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) set_host_adapter(i % 2 ? nullptr : std::shared_ptr<HostAdapter>(fake));
  stop.store(true);
  for (auto& r : readers) r.join();
  set_host_adapter(nullptr);
  EXPECT_EQ(bad.load(), 0);
}

// ---- make_tensor_map_* validate, then reach whichever adapter is installed ----

TEST(HostAdapter, ValidTiledArgsReachTheAdapterUnchanged) {
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  TensorMapTiledArgs const args = bf16_matrix();
  CUtensorMap map;
  ASSERT_TRUE(make_tensor_map_tiled(args, &map).ok());
  ASSERT_EQ(fake->tiled.size(), 1u);
  EXPECT_TRUE(fake->tiled[0] == args) << to_string(fake->tiled[0]);
  EXPECT_EQ(fake->outs[0], &map);
  EXPECT_TRUE(fake->im2col.empty());
}

TEST(HostAdapter, ValidIm2colArgsReachTheAdapterUnchanged) {
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  TensorMapIm2colArgs const args = nhwc_half();
  CUtensorMap map;
  ASSERT_TRUE(make_tensor_map_im2col(args, &map).ok());
  ASSERT_EQ(fake->im2col.size(), 1u);
  EXPECT_TRUE(fake->im2col[0] == args) << to_string(fake->im2col[0]);
  EXPECT_EQ(fake->outs[0], &map);
}

TEST(HostAdapter, InvalidArgsNeverReachTheAdapter) {
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  CUtensorMap map;

  TensorMapTiledArgs bad_stride = bf16_matrix();
  bad_stride.global_strides[0] = 1000;
  Status s = make_tensor_map_tiled(bad_stride, &map);
  EXPECT_EQ(s.code(), StatusCode::kMisaligned);
  EXPECT_NE(s.message().find("global_strides[0] = 1000"), std::string::npos) << s.message();

  TensorMapTiledArgs bad_box = bf16_matrix();
  bad_box.box_dim[1] = 0;
  EXPECT_EQ(make_tensor_map_tiled(bad_box, &map).code(), StatusCode::kInvalidArgument);

  TensorMapIm2colArgs bad_pixels = nhwc_half();
  bad_pixels.pixels_per_column = 2048;
  EXPECT_EQ(make_tensor_map_im2col(bad_pixels, &map).code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(make_tensor_map_tiled(bf16_matrix(), nullptr).code(), StatusCode::kInvalidArgument);
  alignas(128) unsigned char buffer[sizeof(CUtensorMap) + 128];
  auto* shifted = reinterpret_cast<CUtensorMap*>(buffer + 32);
  EXPECT_EQ(make_tensor_map_tiled(bf16_matrix(), shifted).code(), StatusCode::kMisaligned);

  EXPECT_TRUE(fake->tiled.empty());
  EXPECT_TRUE(fake->im2col.empty());
}

TEST(HostAdapter, AdapterFailureIsReturnedAsIs) {
  auto fake = std::make_shared<FakeAdapter>();
  fake->result = Status(StatusCode::kDriverError, "fake driver says no");
  ScopedAdapter scope(fake);
  CUtensorMap map;
  Status const s = make_tensor_map_tiled(bf16_matrix(), &map);
  EXPECT_EQ(s.code(), StatusCode::kDriverError);
  EXPECT_EQ(s.message(), "fake driver says no");
}

// The adapter installed is the one host_adapter() hands out; that the library's launchers use it is
// tests/unit/launchers/launch_adapter_test.cu's (they are templates compiled by nvcc).
TEST(HostAdapter, HostAdapterHandsOutTheInstalledOne) {
  auto fake = std::make_shared<FakeAdapter>();
  ScopedAdapter scope(fake);
  LaunchConfig config;
  config.grid = dim3(8, 4, 1);
  config.block = dim3(128, 1, 1);
  config.cluster = dim3(2, 1, 1);
  config.dynamic_smem_bytes = 4096;
  int marker = 0;
  ASSERT_TRUE(host_adapter().launch(config, &marker, nullptr).ok());
  ASSERT_EQ(fake->launches.size(), 1u);
  EXPECT_EQ(fake->launches[0].grid.x, 8u);
  EXPECT_EQ(fake->launches[0].cluster.x, 2u);
  EXPECT_EQ(fake->launches[0].dynamic_smem_bytes, 4096u);
  EXPECT_EQ(fake->kernels[0], &marker);
}

// ---- the default launch (CUDA runtime) ----

TEST(DefaultLaunch, NullKernelFails) {
  Status const s = default_host_adapter().launch(LaunchConfig{}, nullptr, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kernel is null"), std::string::npos) << s.message();
}

TEST(DefaultLaunch, ClusterThatDoesNotDivideTheGridFails) {
  LaunchConfig config;
  config.grid = dim3(3, 2, 1);
  config.cluster = dim3(2, 1, 1);
  int not_a_kernel = 0;
  Status const s = default_host_adapter().launch(config, &not_a_kernel, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cluster = (2, 1, 1)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("grid = (3, 2, 1)"), std::string::npos) << s.message();
}

bool machine_has_gpu() {
  int count = 0;
  cudaError_t const error = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  return error == cudaSuccess && count > 0;
}

TEST(DefaultLaunch, ClusterShapeBecomesALaunchAttribute) {
  LaunchConfig config;
  config.grid = dim3(8, 6, 1);
  config.block = dim3(256, 1, 1);
  config.dynamic_smem_bytes = 1234;
  config.stream = reinterpret_cast<cudaStream_t>(0x5000);
  config.cluster = dim3(2, 3, 1);
  detail::LaunchAttributes attributes{};
  cudaLaunchConfig_t const c = detail::to_cuda_launch_config(config, attributes);
  EXPECT_EQ(c.gridDim.x, 8u);
  EXPECT_EQ(c.gridDim.y, 6u);
  EXPECT_EQ(c.blockDim.x, 256u);
  EXPECT_EQ(c.dynamicSmemBytes, 1234u);
  EXPECT_EQ(c.stream, config.stream);
  ASSERT_EQ(c.numAttrs, 1u);
  ASSERT_EQ(c.attrs, attributes.data());
  EXPECT_EQ(attributes[0].id, cudaLaunchAttributeClusterDimension);
  EXPECT_EQ(attributes[0].val.clusterDim.x, 2u);
  EXPECT_EQ(attributes[0].val.clusterDim.y, 3u);
  EXPECT_EQ(attributes[0].val.clusterDim.z, 1u);

  config.after_previous_early = true;  // a cluster and programmatic serialization: both attributes
  cudaLaunchConfig_t const both = detail::to_cuda_launch_config(config, attributes);
  ASSERT_EQ(both.numAttrs, 2u);
  EXPECT_EQ(attributes[0].id, cudaLaunchAttributeClusterDimension);
  EXPECT_EQ(attributes[1].id, cudaLaunchAttributeProgrammaticStreamSerialization);
  EXPECT_EQ(attributes[1].val.programmaticStreamSerializationAllowed, 1);

  config.cluster = dim3(1, 1, 1);  // programmatic alone: the first attribute
  cudaLaunchConfig_t const early = detail::to_cuda_launch_config(config, attributes);
  ASSERT_EQ(early.numAttrs, 1u);
  EXPECT_EQ(attributes[0].id, cudaLaunchAttributeProgrammaticStreamSerialization);

  config.after_previous_early = false;  // neither: no attribute
  cudaLaunchConfig_t const plain = detail::to_cuda_launch_config(config, attributes);
  EXPECT_EQ(plain.numAttrs, 0u);
  EXPECT_EQ(plain.attrs, nullptr);
}

// A host function is no kernel: the runtime refuses it (no device, or an invalid device function),
// and the error must come back as a Status without lingering in cudaGetLastError. (Without a
// driver the runtime reports its initialization error on every call, so only a GPU machine can
// check that nothing lingers.)
TEST(DefaultLaunch, RuntimeFailureBecomesACudaErrorStatus) {
  bool const gpu = machine_has_gpu();
  LaunchConfig config;
  config.grid = dim3(4, 1, 1);
  config.cluster = dim3(2, 1, 1);
  int not_a_kernel = 0;
  Status const s = default_host_adapter().launch(config, &not_a_kernel, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kCudaError);
  EXPECT_NE(s.message().find("cudaLaunchKernelExC"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cluster = (2, 1, 1)"), std::string::npos) << s.message();
  if (gpu) {
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  }
}

// ---- DefaultHostAdapter with fake driver functions ----

// What the fake driver functions saw, rebuilt into the argument structs.
struct DriverLog {
  std::mutex mutex;
  TensorMapTiledArgs tiled;
  TensorMapIm2colArgs im2col;
  CUtensorMap* out = nullptr;
  std::atomic<int> tiled_calls{0};
  std::atomic<int> im2col_calls{0};
  std::atomic<CUresult> result{CUDA_SUCCESS};

  void reset() {
    std::lock_guard<std::mutex> lock(mutex);
    tiled = {};
    im2col = {};
    out = nullptr;
    tiled_calls = 0;
    im2col_calls = 0;
    result = CUDA_SUCCESS;
  }
};
DriverLog g_driver;

constexpr std::uint64_t kEncodedMarker = 0x7117'f05e'0000'0001;

CUresult CUDAAPI fake_encode_tiled(CUtensorMap* tensor_map, CUtensorMapDataType data_type,
                                   cuuint32_t rank, void* global_address, cuuint64_t const* global_dim,
                                   cuuint64_t const* global_strides, cuuint32_t const* box_dim,
                                   cuuint32_t const* element_strides, CUtensorMapInterleave interleave,
                                   CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2_promotion,
                                   CUtensorMapFloatOOBfill oob_fill) {
  g_driver.tiled_calls.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_driver.mutex);
  TensorMapTiledArgs& a = g_driver.tiled;
  a = {};
  a.data_type = data_type;
  a.rank = static_cast<int>(rank);
  a.global_address = global_address;
  for (cuuint32_t i = 0; i < rank; ++i) {
    a.global_dim[i] = global_dim[i];
    a.box_dim[i] = box_dim[i];
    a.element_strides[i] = element_strides[i];
    if (i + 1 < rank) a.global_strides[i] = global_strides[i];
  }
  a.interleave = interleave;
  a.swizzle = swizzle;
  a.l2_promotion = l2_promotion;
  a.oob_fill = oob_fill;
  g_driver.out = tensor_map;
  tensor_map->opaque[0] = kEncodedMarker;
  return g_driver.result.load();
}

CUresult CUDAAPI fake_encode_im2col(CUtensorMap* tensor_map, CUtensorMapDataType data_type,
                                    cuuint32_t rank, void* global_address, cuuint64_t const* global_dim,
                                    cuuint64_t const* global_strides, int const* lower_corner,
                                    int const* upper_corner, cuuint32_t channels_per_pixel,
                                    cuuint32_t pixels_per_column, cuuint32_t const* element_strides,
                                    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                    CUtensorMapL2promotion l2_promotion,
                                    CUtensorMapFloatOOBfill oob_fill) {
  g_driver.im2col_calls.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_driver.mutex);
  TensorMapIm2colArgs& a = g_driver.im2col;
  a = {};
  a.data_type = data_type;
  a.rank = static_cast<int>(rank);
  a.global_address = global_address;
  for (cuuint32_t i = 0; i < rank; ++i) {
    a.global_dim[i] = global_dim[i];
    a.element_strides[i] = element_strides[i];
    if (i + 1 < rank) a.global_strides[i] = global_strides[i];
  }
  for (cuuint32_t j = 0; j + 2 < rank; ++j) {
    a.pixel_box_lower_corner[j] = lower_corner[j];
    a.pixel_box_upper_corner[j] = upper_corner[j];
  }
  a.channels_per_pixel = channels_per_pixel;
  a.pixels_per_column = pixels_per_column;
  a.interleave = interleave;
  a.swizzle = swizzle;
  a.l2_promotion = l2_promotion;
  a.oob_fill = oob_fill;
  g_driver.out = tensor_map;
  tensor_map->opaque[0] = kEncodedMarker;
  return g_driver.result.load();
}

// The fakes must have the driver's exact signatures, or the adapter's casts would hide a mismatch.
static_assert(std::is_same_v<decltype(&fake_encode_tiled), PFN_cuTensorMapEncodeTiled_v12000>);
static_assert(std::is_same_v<decltype(&fake_encode_im2col), PFN_cuTensorMapEncodeIm2col_v12000>);

// Counts look-ups per symbol and hands out the fakes.
struct CountingLookup {
  std::atomic<int> tiled{0};
  std::atomic<int> im2col{0};
  std::atomic<int> other{0};

  DefaultHostAdapter::EntryPointLookup function() {
    return [this](char const* symbol, void** fn) -> Status {
      if (std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0) {
        tiled.fetch_add(1);
        *fn = reinterpret_cast<void*>(&fake_encode_tiled);
        return Status::success();
      }
      if (std::strcmp(symbol, "cuTensorMapEncodeIm2col") == 0) {
        im2col.fetch_add(1);
        *fn = reinterpret_cast<void*>(&fake_encode_im2col);
        return Status::success();
      }
      other.fetch_add(1);
      return {StatusCode::kDriverError, std::string("unexpected symbol ") + symbol};
    };
  }
};

class DefaultHostAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override { g_driver.reset(); }
};

TEST_F(DefaultHostAdapterTest, ForwardsEveryArgumentToTheDriverFunctions) {
  CountingLookup lookup;
  DefaultHostAdapter adapter(lookup.function());
  EXPECT_STREQ(adapter.name(), "default");

  TensorMapTiledArgs const tiled = bf16_matrix();
  CUtensorMap tiled_map{};
  ASSERT_TRUE(adapter.encode_tensor_map_tiled(tiled, &tiled_map).ok());
  EXPECT_TRUE(g_driver.tiled == tiled) << to_string(g_driver.tiled);
  EXPECT_EQ(g_driver.out, &tiled_map);
  EXPECT_EQ(tiled_map.opaque[0], kEncodedMarker);

  TensorMapIm2colArgs const im2col = nhwc_half();
  CUtensorMap im2col_map{};
  ASSERT_TRUE(adapter.encode_tensor_map_im2col(im2col, &im2col_map).ok());
  EXPECT_TRUE(g_driver.im2col == im2col) << to_string(g_driver.im2col);
  EXPECT_EQ(g_driver.out, &im2col_map);
  EXPECT_EQ(im2col_map.opaque[0], kEncodedMarker);
}

TEST_F(DefaultHostAdapterTest, LooksEachEntryPointUpOnceAcross1000EncodesFrom8Threads) {
  CountingLookup lookup;
  DefaultHostAdapter adapter(lookup.function());
  EXPECT_EQ(lookup.tiled.load() + lookup.im2col.load(), 0);  // nothing resolved before first use

  constexpr int kThreads = 8;
  constexpr int kEncodesPerThread = 125;
  TensorMapTiledArgs const tiled = bf16_matrix();
  TensorMapIm2colArgs const im2col = nhwc_half();
  std::atomic<int> failures{0};
  std::latch start(kThreads);  // all threads race for the first resolution
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      CUtensorMap map;
      for (int i = 0; i < kEncodesPerThread; ++i) {
        bool const use_tiled = (i + t) % 2 == 0;
        Status const s = use_tiled ? adapter.encode_tensor_map_tiled(tiled, &map)
                                   : adapter.encode_tensor_map_im2col(im2col, &map);
        if (!s.ok()) failures.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(lookup.tiled.load(), 1);
  EXPECT_EQ(lookup.im2col.load(), 1);
  EXPECT_EQ(lookup.other.load(), 0);
  EXPECT_EQ(g_driver.tiled_calls.load() + g_driver.im2col_calls.load(), kThreads * kEncodesPerThread);
  EXPECT_EQ(g_driver.tiled_calls.load(), kThreads * kEncodesPerThread / 2);
  EXPECT_TRUE(g_driver.tiled == tiled);
  EXPECT_TRUE(g_driver.im2col == im2col);
}

TEST_F(DefaultHostAdapterTest, LookupFailureNamesTheEntryPointAndIsNotRetried) {
  std::atomic<int> calls{0};
  DefaultHostAdapter adapter([&](char const*, void** fn) -> Status {
    calls.fetch_add(1);
    *fn = nullptr;
    return {StatusCode::kDriverError, "symbol not found in this driver"};
  });
  CUtensorMap map;
  for (int i = 0; i < 3; ++i) {
    Status const s = adapter.encode_tensor_map_tiled(bf16_matrix(), &map);
    EXPECT_EQ(s.code(), StatusCode::kDriverError);
    EXPECT_NE(s.message().find("cuTensorMapEncodeTiled"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("symbol not found in this driver"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("CUDA 12.0"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("tilefuse::set_host_adapter"), std::string::npos) << s.message();
  }
  EXPECT_EQ(calls.load(), 1);
  Status const s = adapter.encode_tensor_map_im2col(nhwc_half(), &map);
  EXPECT_EQ(s.code(), StatusCode::kDriverError);
  EXPECT_NE(s.message().find("cuTensorMapEncodeIm2col"), std::string::npos) << s.message();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(g_driver.tiled_calls.load() + g_driver.im2col_calls.load(), 0);
}

TEST_F(DefaultHostAdapterTest, LookupReturningANullPointerIsADriverError) {
  DefaultHostAdapter adapter([](char const*, void** fn) -> Status {
    *fn = nullptr;
    return Status::success();
  });
  CUtensorMap map;
  Status const s = adapter.encode_tensor_map_tiled(bf16_matrix(), &map);
  EXPECT_EQ(s.code(), StatusCode::kDriverError);
  EXPECT_NE(s.message().find("cuTensorMapEncodeTiled"), std::string::npos) << s.message();
}

TEST_F(DefaultHostAdapterTest, EncodeFailureNamesTheCallTheResultAndTheArguments) {
  CountingLookup lookup;
  DefaultHostAdapter adapter(lookup.function());
  g_driver.result = CUDA_ERROR_INVALID_VALUE;
  CUtensorMap map;
  Status const s = adapter.encode_tensor_map_tiled(bf16_matrix(), &map);
  EXPECT_EQ(s.code(), StatusCode::kDriverError);
  EXPECT_NE(s.message().find("cuTensorMapEncodeTiled returned CUDA_ERROR_INVALID_VALUE (1)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("global_dim={256, 128}"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("box_dim={64, 64}"), std::string::npos) << s.message();

  // Called directly with arguments that break a rule, the message says which.
  TensorMapIm2colArgs bad = nhwc_half();
  bad.channels_per_pixel = 300;
  Status const s2 = adapter.encode_tensor_map_im2col(bad, &map);
  EXPECT_EQ(s2.code(), StatusCode::kDriverError);
  EXPECT_NE(s2.message().find("cuTensorMapEncodeIm2col returned CUDA_ERROR_INVALID_VALUE (1)"),
            std::string::npos)
      << s2.message();
  EXPECT_NE(s2.message().find("channels_per_pixel = 300"), std::string::npos) << s2.message();
}

TEST_F(DefaultHostAdapterTest, InvalidContextIsEncodedAgainOnlyWhereAContextCanBeMadeCurrent) {
  // A thread with no current context (the autograd engine's on a first backward) gets
  // CUDA_ERROR_INVALID_CONTEXT: the adapter makes the device's primary context current and encodes once
  // more. Without a device there is no context to make current: one call, and the driver's result.
  CountingLookup lookup;
  DefaultHostAdapter adapter(lookup.function());
  g_driver.result = CUDA_ERROR_INVALID_CONTEXT;
  int devices = 0;
  bool const has_device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  (void)cudaGetLastError();
  CUtensorMap map;
  Status const s = adapter.encode_tensor_map_tiled(bf16_matrix(), &map);
  EXPECT_EQ(g_driver.tiled_calls.load(), has_device ? 2 : 1);
  EXPECT_NE(s.message().find("CUDA_ERROR_INVALID_CONTEXT"), std::string::npos) << s.message();
  Status const s2 = adapter.encode_tensor_map_im2col(nhwc_half(), &map);
  EXPECT_EQ(g_driver.im2col_calls.load(), has_device ? 2 : 1);
  EXPECT_FALSE(s2.ok());
}

// ---- the real default adapter ----

// write_value32 (the row-gated GEMM's flags): resolved once by name, the arguments forwarded, flags 0 (the
// write keeps its memory fence), a driver failure and bad addresses reported; other adapters refuse it.
struct WriteValueCall {
  CUstream stream = nullptr;
  CUdeviceptr address = 0;
  cuuint32_t value = 0;
  unsigned flags = 99;
  int calls = 0;
  CUresult result = CUDA_SUCCESS;
};
WriteValueCall g_write;
WriteValueCall g_wait;
// A fake cuStreamWriteValue32 / cuStreamWaitValue32 (one signature) recording its call in `call`.
template <WriteValueCall& call>
CUresult CUDAAPI record_value32(CUstream stream, CUdeviceptr address, cuuint32_t value, unsigned flags) {
  call.stream = stream;
  call.address = address;
  call.value = value;
  call.flags = flags;
  ++call.calls;
  return call.result;
}
constexpr auto fake_write_value32 = &record_value32<g_write>;
constexpr auto fake_wait_value32 = &record_value32<g_wait>;
static_assert(std::is_same_v<decltype(fake_write_value32), PFN_cuStreamWriteValue32_v11070 const>);
static_assert(std::is_same_v<decltype(fake_wait_value32), PFN_cuStreamWaitValue32_v11070 const>);

TEST(DefaultHostAdapterWriteValue, ForwardsTheWriteOnceResolved) {
  g_write = {};
  int lookups = 0;
  DefaultHostAdapter adapter([&](char const* symbol, void** fn) -> Status {
    ++lookups;
    if (std::strcmp(symbol, "cuStreamWriteValue32") != 0) return {StatusCode::kDriverError, "unexpected symbol"};
    *fn = reinterpret_cast<void*>(fake_write_value32);
    return Status::success();
  });
  auto* const stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5000});
  auto* const flag = reinterpret_cast<unsigned*>(std::uintptr_t{1} << 24);
  ASSERT_TRUE(adapter.write_value32(stream, flag, 7u).ok());
  ASSERT_TRUE(adapter.write_value32(stream, flag + 1, 1u).ok());
  EXPECT_EQ(lookups, 1);
  EXPECT_EQ(g_write.calls, 2);
  EXPECT_EQ(g_write.stream, reinterpret_cast<CUstream>(stream));
  EXPECT_EQ(g_write.address, static_cast<CUdeviceptr>((std::uintptr_t{1} << 24) + 4));
  EXPECT_EQ(g_write.value, 1u);
  EXPECT_EQ(g_write.flags, 0u);  // not CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: the copies land first

  g_write.result = CUDA_ERROR_NOT_SUPPORTED;
  Status const refused = adapter.write_value32(stream, flag, 1u);
  EXPECT_EQ(refused.code(), StatusCode::kDriverError);
  EXPECT_NE(refused.message().find("cuStreamWriteValue32"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << refused.message();

  int const calls = g_write.calls;
  EXPECT_EQ(adapter.write_value32(stream, nullptr, 1u).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(adapter.write_value32(stream, reinterpret_cast<unsigned*>(std::uintptr_t{(1u << 24) + 2}), 1u).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g_write.calls, calls);  // refused before the driver
}

TEST(HostAdapter, OtherAdaptersRefuseStreamWrites) {
  FakeAdapter fake;
  unsigned word = 0;
  Status const s = fake.write_value32(nullptr, &word, 1u);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported);
  EXPECT_NE(s.message().find("fake"), std::string::npos) << s.message();
  Status const w = fake.wait_value32(nullptr, &word, 1u);
  EXPECT_EQ(w.code(), StatusCode::kNotSupported);
  EXPECT_NE(w.message().find("wait_value32"), std::string::npos) << w.message();
}

// wait_value32 (a peer's epoch signal): resolved once by name, the arguments forwarded with the wrap-around
// "greater or equal" comparison, a driver failure and bad addresses reported.
TEST(DefaultHostAdapterWaitValue, ForwardsTheWaitOnceResolved) {
  g_wait = {};
  int lookups = 0;
  DefaultHostAdapter adapter([&](char const* symbol, void** fn) -> Status {
    ++lookups;
    if (std::strcmp(symbol, "cuStreamWaitValue32") != 0) return {StatusCode::kDriverError, "unexpected symbol"};
    *fn = reinterpret_cast<void*>(fake_wait_value32);
    return Status::success();
  });
  auto* const stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x6000});
  auto const* const signal = reinterpret_cast<unsigned const*>(std::uintptr_t{1} << 24);
  ASSERT_TRUE(adapter.wait_value32(stream, signal, 3u).ok());
  ASSERT_TRUE(adapter.wait_value32(stream, signal + 2, 4u).ok());
  EXPECT_EQ(lookups, 1);
  EXPECT_EQ(g_wait.calls, 2);
  EXPECT_EQ(g_wait.stream, reinterpret_cast<CUstream>(stream));
  EXPECT_EQ(g_wait.address, static_cast<CUdeviceptr>((std::uintptr_t{1} << 24) + 8));
  EXPECT_EQ(g_wait.value, 4u);
  EXPECT_EQ(g_wait.flags, static_cast<unsigned>(CU_STREAM_WAIT_VALUE_GEQ));

  g_wait.result = CUDA_ERROR_NOT_SUPPORTED;
  Status const refused = adapter.wait_value32(stream, signal, 1u);
  EXPECT_EQ(refused.code(), StatusCode::kDriverError);
  EXPECT_NE(refused.message().find("cuStreamWaitValue32"), std::string::npos) << refused.message();

  int const calls = g_wait.calls;
  EXPECT_EQ(adapter.wait_value32(stream, nullptr, 1u).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(adapter.wait_value32(stream, reinterpret_cast<unsigned const*>(std::uintptr_t{(1u << 24) + 1}), 1u).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g_wait.calls, calls);  // refused before the driver
}

TEST(RealDefaultHostAdapter, EncodesOnAGpuAndFailsCleanlyWithout) {
  ASSERT_EQ(&host_adapter(), &default_host_adapter());
  bool const gpu = machine_has_gpu();
  void* device = nullptr;
  if (gpu) {
    ASSERT_EQ(cudaMalloc(&device, std::size_t{1} << 20), cudaSuccess);
  }
  void* const base = gpu ? device : fake_address();

  TensorMapTiledArgs tiled = bf16_matrix();
  tiled.global_address = base;
  CUtensorMap map;
  Status const s = make_tensor_map_tiled(tiled, &map);
  TensorMapIm2colArgs im2col = nhwc_half();
  im2col.global_address = base;
  Status const s2 = make_tensor_map_im2col(im2col, &map);
  if (gpu) {
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_TRUE(s2.ok()) << s2.to_string();
    EXPECT_EQ(cudaFree(device), cudaSuccess);
  } else {
    EXPECT_EQ(s.code(), StatusCode::kDriverError) << s.to_string();
    EXPECT_NE(s.message().find("cuTensorMapEncodeTiled"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("cudaGetDriverEntryPointByVersion"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("tilefuse::set_host_adapter"), std::string::npos) << s.message();
    EXPECT_EQ(s2.code(), StatusCode::kDriverError) << s2.to_string();
    EXPECT_NE(s2.message().find("cuTensorMapEncodeIm2col"), std::string::npos) << s2.message();
  }
  if (gpu) {
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  }
}

TEST(RealDefaultHostAdapter, RuntimeLookupReportsWhyItFailed) {
  void* fn = reinterpret_cast<void*>(1);
  Status const s = cuda_runtime_entry_point_lookup("cuTensorMapEncodeTiled", &fn);
  if (machine_has_gpu()) {
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_NE(fn, nullptr);
    Status const missing = cuda_runtime_entry_point_lookup("cuNoSuchEntryPoint", &fn);
    EXPECT_EQ(missing.code(), StatusCode::kDriverError);
    EXPECT_NE(missing.message().find("cudaDriverEntryPointSymbolNotFound"), std::string::npos)
        << missing.message();
  } else {
    EXPECT_EQ(s.code(), StatusCode::kDriverError);
    EXPECT_EQ(fn, nullptr);
    EXPECT_NE(s.message().find("\"cuTensorMapEncodeTiled\""), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace tilefuse
