// Counting shared-memory bank conflicts of one warp-wide access, as the shared-memory unit serves it:
// in phases of 128 bytes' worth of lanes (16 lanes for 8-byte accesses, 8 for 16-byte ones); a phase
// takes as many wavefronts as the most distinct 4-byte words any one of the 32 banks holds among its
// lanes' words. Used by the staging layout tests of both kernels.
#pragma once

#include <algorithm>
#include <array>
#include <set>

namespace tilefuse::test {

constexpr int kWarpLanes = 32;

// One warp-wide access: each lane's first float index and the access width in floats.
struct Access {
  std::array<int, kWarpLanes> first{};
  int width = 1;
};

inline int wavefronts(Access const& a) {
  int const lanes_per_phase = 32 / a.width;
  int total = 0;
  for (int phase = 0; phase < kWarpLanes; phase += lanes_per_phase) {
    std::array<std::set<int>, 32> words_in_bank;
    for (int lane = phase; lane < phase + lanes_per_phase; ++lane) {
      for (int w = 0; w < a.width; ++w) words_in_bank[(a.first[lane] + w) % 32].insert(a.first[lane] + w);
    }
    std::size_t most = 0;
    for (auto const& words : words_in_bank) most = std::max(most, words.size());
    total += static_cast<int>(most);
  }
  return total;
}

}  // namespace tilefuse::test
