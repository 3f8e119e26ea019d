// HostAdapter::write_value32 / wait_value32 on a GPU (the signals of tilefuse.overlap's signalled schedules and
// the row-gated GEMM's flags): a stream held by a wait runs on only once another stream's write brings the word
// to the value, compared with wrap-around (an epoch after 0xffffffff is 0), and what it does next sees the write.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include <tilefuse/runtime/host_adapter.hpp>

#include "gpu_test_support.hpp"

namespace tilefuse::gpu_test {
namespace {

bool finished(cudaStream_t stream) {
  cudaError_t const state = cudaStreamQuery(stream);
  if (state == cudaErrorNotReady) return false;
  TILEFUSE_CUDA_CHECK(state);
  return true;
}

void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

// Writes `value` to the word when it goes out of scope, whatever failed before: a stream left waiting would hang
// the buffers' cudaFree and every test after this one.
class Release {
 public:
  Release(cudaStream_t stream, unsigned* word, unsigned value) : stream_(stream), word_(word), value_(value) {}
  ~Release() {
    if (!host_adapter().write_value32(stream_, word_, value_).ok()) {
      (void)cudaMemcpyAsync(word_, &value_, sizeof(value_), cudaMemcpyHostToDevice, stream_);
    }
    (void)cudaStreamSynchronize(stream_);
  }
  Release(Release const&) = delete;
  Release& operator=(Release const&) = delete;

 private:
  cudaStream_t stream_;
  unsigned* word_;
  unsigned value_;
};

// Waits up to 5 s for the held stream (released by then, if the operations work); past that, a failure, and
// the release value written once more by a plain copy, so that one broken case does not hang the whole run.
void await_released(cudaStream_t waiting, cudaStream_t writing, unsigned* word, unsigned value) {
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!finished(waiting)) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the waiting stream was still held 5 s after the word was written " << value;
      TILEFUSE_CUDA_CHECK(cudaMemcpyAsync(word, &value, sizeof(value), cudaMemcpyHostToDevice, writing));
      TILEFUSE_CUDA_CHECK(cudaStreamSynchronize(writing));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  TILEFUSE_CUDA_CHECK(cudaStreamSynchronize(waiting));
}

unsigned read(DeviceBuffer const& buffer, cudaStream_t stream) {
  unsigned value = 0;
  buffer.download(&value, stream);
  return value;
}

TEST(StreamMemoryOps, AWaitHoldsItsStreamUntilAnotherStreamsWriteReachesTheValue) {
  Stream waiting, writing;
  DeviceBuffer word(sizeof(unsigned)), marker(sizeof(unsigned));
  unsigned const first = 1u;
  word.upload(&first, writing.get());
  marker.fill_bytes(0, writing.get());
  writing.synchronize();
  Status s = host_adapter().wait_value32(waiting.get(), word.as<unsigned>(), 3u);
  ASSERT_TRUE(s.ok()) << s.to_string();
  {
    Release release(writing.get(), word.as<unsigned>(), 3u);
    TILEFUSE_CUDA_CHECK(cudaMemsetAsync(marker.get(), 0x01, sizeof(unsigned), waiting.get()));  // after the wait
    settle();
    EXPECT_FALSE(finished(waiting.get())) << "the wait for 3 passed with the word at 1";
    EXPECT_EQ(read(marker, writing.get()), 0u);
    s = host_adapter().write_value32(writing.get(), word.as<unsigned>(), 2u);  // still below: still held
    EXPECT_TRUE(s.ok()) << s.to_string();
    writing.synchronize();
    settle();
    EXPECT_FALSE(finished(waiting.get())) << "the wait for 3 passed with the word at 2";
  }  // 3 written
  await_released(waiting.get(), writing.get(), word.as<unsigned>(), 3u);
  EXPECT_EQ(read(word, writing.get()), 3u);
  EXPECT_EQ(read(marker, writing.get()), 0x01010101u);
}

TEST(StreamMemoryOps, TheWaitComparesWithWrapAround) {
  Stream waiting, writing;
  DeviceBuffer word(sizeof(unsigned)), passed(sizeof(unsigned)), released(sizeof(unsigned));
  unsigned const last = 0xffffffffu;
  word.upload(&last, writing.get());
  passed.fill_bytes(0, writing.get());
  released.fill_bytes(0, writing.get());
  writing.synchronize();
  {
    Release release(writing.get(), word.as<unsigned>(), 0u);
    // 0xffffffff is at or after 0xfffffff0: passes at once. 0 comes after 0xffffffff: held until written.
    Status s = host_adapter().wait_value32(waiting.get(), word.as<unsigned>(), 0xfffffff0u);
    EXPECT_TRUE(s.ok()) << s.to_string();
    TILEFUSE_CUDA_CHECK(cudaMemsetAsync(passed.get(), 0x01, sizeof(unsigned), waiting.get()));
    s = host_adapter().wait_value32(waiting.get(), word.as<unsigned>(), 0u);
    EXPECT_TRUE(s.ok()) << s.to_string();
    TILEFUSE_CUDA_CHECK(cudaMemsetAsync(released.get(), 0x01, sizeof(unsigned), waiting.get()));
    settle();
    EXPECT_EQ(read(passed, writing.get()), 0x01010101u) << "the wait for 0xfffffff0 held with the word at 0xffffffff";
    EXPECT_FALSE(finished(waiting.get())) << "the wait for 0 passed with the word at 0xffffffff";
    EXPECT_EQ(read(released, writing.get()), 0u);
  }  // 0 written
  await_released(waiting.get(), writing.get(), word.as<unsigned>(), 0u);
  EXPECT_EQ(read(released, writing.get()), 0x01010101u);
}

}  // namespace
}  // namespace tilefuse::gpu_test
