#include "stream/reconnect_backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice {
namespace {

using ms = std::chrono::milliseconds;

// A sink that fails the same transaction on every attempt (disk full in a large
// transaction's parts): each attempt connects and reads, but nothing commits. The wait grows
// to the cap instead of staying at the first step (the new-user test saw 19 cycles in 20 s).
TEST(ReconnectBackoff, ConnectingWithoutACommitIsNotProgress) {
  ReconnectBackoff b(ms(250), ms(10000));
  std::vector<long> waits;
  for (int i = 0; i < 8; ++i) waits.push_back(b.AfterFailure(/*moved=*/false, /*connected_for=*/ms(300)).count());
  EXPECT_EQ(waits, (std::vector<long>{250, 500, 1000, 2000, 4000, 8000, 10000, 10000}))
      << "connected for 300 ms each time, nothing committed";
  EXPECT_EQ(b.attempt(), 8);
}

// The server down: no connection at all, the same growth.
TEST(ReconnectBackoff, ServerDownGrowsToTheCap) {
  ReconnectBackoff b(ms(250), ms(1000));
  std::vector<long> waits;
  for (int i = 0; i < 5; ++i) waits.push_back(b.AfterFailure(false, ms(0)).count());
  EXPECT_EQ(waits, (std::vector<long>{250, 500, 1000, 1000, 1000}));
}

// A network cut after rows were applied: the next reconnect is quick again, whatever the
// wait had grown to before.
TEST(ReconnectBackoff, ACommitThatMovedThePositionResetsTheWait) {
  ReconnectBackoff b(ms(250), ms(10000));
  for (int i = 0; i < 5; ++i) (void)b.AfterFailure(false, ms(0));
  EXPECT_EQ(b.AfterFailure(/*moved=*/true, ms(100)).count(), 250) << "a commit moved the resume position";
  EXPECT_EQ(b.attempt(), 1);
  EXPECT_EQ(b.AfterFailure(false, ms(0)).count(), 500) << "then the server is down again";
}

// An idle stream that stayed connected longer than the longest wait, then was cut: healthy,
// so the wait starts over although no commit moved the position.
TEST(ReconnectBackoff, ASessionUpLongerThanTheCapResetsTheWait) {
  ReconnectBackoff b(ms(250), ms(10000));
  for (int i = 0; i < 5; ++i) (void)b.AfterFailure(false, ms(0));
  EXPECT_EQ(b.AfterFailure(false, ms(9999)).count(), 8000) << "up for less than the cap: still growing";
  EXPECT_EQ(b.AfterFailure(false, ms(10000)).count(), 250) << "up for the cap: progress";
}

}  // namespace
}  // namespace sluice
