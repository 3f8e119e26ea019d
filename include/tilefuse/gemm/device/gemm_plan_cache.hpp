// gemm::Gemm's cache of Hopper plans (the last argument sets, keyed by their bytes) and the helpers that
// word a Hopper refusal as gemm::Gemm reports it. Host code.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>

namespace tilefuse::gemm {

namespace detail {

// Counts of a PlanCache's look-ups, for tests and the benchmark.
struct PlanCacheStats {
  long long hits = 0;
  long long misses = 0;
};

// The last kSlots (key -> value) pairs, replaced round robin; every member is thread-safe.
template <class Value, int kSlots = 16>
class PlanCache {
 public:
  bool find(std::string const& key, Value* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Slot const& slot : slots_) {
      if (slot.used && slot.key == key) {
        *out = slot.value;
        ++stats_.hits;
        return true;
      }
    }
    ++stats_.misses;
    return false;
  }
  void insert(std::string const& key, Value const& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Slot& slot : slots_) {
      if (slot.used && slot.key == key) {
        slot.value = value;
        return;
      }
    }
    Slot& slot = slots_[next_++ % kSlots];
    slot = Slot{true, key, value};
  }
  PlanCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  struct Slot {
    bool used = false;
    std::string key;
    Value value{};
  };
  std::mutex mutex_;
  std::array<Slot, kSlots> slots_{};
  unsigned next_ = 0;
  PlanCacheStats stats_;
};

template <class T>
void append_key_bytes(std::string& key, T const& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<char const*>(&value), sizeof(value));
}

// gemm::Gemm's plan-cache key: every byte a plan depends on but the workspace's address (a plan that uses the
// workspace remembers it, and is made again for another). The epilogue enters as its bound Params (zeroed
// first, so that padding compares equal); false when the epilogue does not bind (the sm_80 path reports it).
template <class Epilogue, class Arguments>
bool gemm_plan_key(Arguments const& args, bool with_workspace, std::string* key) {
  typename Epilogue::Params params;
  std::memset(static_cast<void*>(&params), 0, sizeof(params));
  auto const& p = args.problem;
  if (!args.epilogue.bind({p.m, p.n, p.batch}, &params).ok()) return false;
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) (void)cudaGetLastError();
  key->clear();
  key->reserve(112 + sizeof(params));
  append_key_bytes(*key, device);
  append_key_bytes(*key, p);
  append_key_bytes(*key, args.a);
  append_key_bytes(*key, args.lda);
  append_key_bytes(*key, args.batch_stride_a);
  append_key_bytes(*key, args.b);
  append_key_bytes(*key, args.ldb);
  append_key_bytes(*key, args.batch_stride_b);
  append_key_bytes(*key, args.split_k);
  append_key_bytes(*key, args.family);
  append_key_bytes(*key, with_workspace);
  key->append(reinterpret_cast<char const*>(&params), sizeof(params));
  return true;
}

// The Plan of the Hopper operation when there is one (no instantiation otherwise).
template <bool kHopper, class Hopper>
struct HopperPlanOf {
  using type = char;
};
template <class Hopper>
struct HopperPlanOf<true, Hopper> {
  using type = typename Hopper::Plan;
};

// "gemm_sm90: lda = 4093 ... which TMA needs; pad it or use gemm::Gemm (the sm80 kernel)" ->
// "lda = 4093 ... which TMA needs; pad it": the Hopper kernel's refusal as gemm::Gemm reports it.
inline std::string hopper_refusal(std::string message) {
  constexpr std::string_view kPrefix = "gemm_sm90: ";
  if (message.rfind(kPrefix, 0) == 0) message.erase(0, kPrefix.size());
  std::size_t const use = message.find("use gemm::Gemm");
  if (use != std::string::npos) {
    message.erase(use);
    for (std::string_view tail : {" or ", "; ", ", ", " "}) {
      if (message.size() >= tail.size() && message.compare(message.size() - tail.size(), tail.size(), tail) == 0) {
        message.erase(message.size() - tail.size());
      }
    }
  }
  return message;
}

}  // namespace detail

}  // namespace tilefuse::gemm
