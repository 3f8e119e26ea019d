// gemm::Gemm's cache of Hopper plans (the last argument sets, keyed by their bytes) and the helpers that
// word a Hopper refusal as gemm::Gemm reports it. Host code.
#pragma once

#include <array>
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
