// The calls of a timed round (bench/common/round_schedule.hpp): with the same sets every op runs on the round's
// set in order (time_paired's fused-over-plain pairs); spread, the ops of a round run on distinct sets
// (whenever there are at least as many sets as ops), the order alternates from round to round, every op
// visits every set in turn, and no op runs on the set another op ran on in the round before it.
#include <set>

#include <gtest/gtest.h>

#include "round_schedule.hpp"

namespace tilefuse::bench {
namespace {

TEST(RoundSchedule, SameSetsRunEveryOpInOrderOnTheRoundsSet) {
  for (int round = 0; round < 7; ++round) {
    std::vector<RoundCall> const calls = round_calls(round, 2, 3, false);
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].op, 0u);
    EXPECT_EQ(calls[1].op, 1u);
    EXPECT_EQ(calls[0].set, round % 3);
    EXPECT_EQ(calls[1].set, round % 3);
  }
}

TEST(RoundSchedule, SpreadUsesDistinctSetsAndAlternatesTheOrder) {
  for (std::size_t ops : {1u, 2u, 3u}) {
    for (int sets : {2, 3, 4, 7, 12}) {
      if (static_cast<std::size_t>(sets) < ops) continue;
      SCOPED_TRACE(testing::Message() << ops << " ops, " << sets << " sets");
      std::vector<std::set<int>> visited(ops);
      std::vector<RoundCall> previous;
      for (int round = 0; round < 2 * sets; ++round) {
        std::vector<RoundCall> const calls = round_calls(round, ops, sets, true);
        ASSERT_EQ(calls.size(), ops);
        std::set<std::size_t> each_op;
        std::set<int> distinct;
        for (RoundCall const& c : calls) {
          each_op.insert(c.op);
          distinct.insert(c.set);
          visited[c.op].insert(c.set);
          ASSERT_GE(c.set, 0);
          ASSERT_LT(c.set, sets);
        }
        EXPECT_EQ(each_op.size(), ops) << "every op once per round";
        EXPECT_EQ(distinct.size(), ops) << "each op on its own set";
        EXPECT_EQ(calls.front().op, round % 2 == 0 ? 0u : ops - 1) << "the order alternates";
        // The op that opens this round does not run on the set the previous round ended on.
        if (!previous.empty() && ops > 1) EXPECT_NE(calls.front().set, previous.back().set) << "round " << round;
        previous = calls;
      }
      for (std::size_t op = 0; op < ops; ++op) EXPECT_EQ(visited[op].size(), static_cast<std::size_t>(sets)) << "op " << op;
    }
  }
}

}  // namespace
}  // namespace tilefuse::bench
