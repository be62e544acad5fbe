// ProgressRate: the snapshot's progress lines follow the copy's recent rate, not the average
// since the start (probe10 F4: a stale rate and ETA long after a stall).
#include <gtest/gtest.h>

#include "snapshot/coordinator.h"

namespace sluice {
namespace {

TEST(ProgressRate, FollowsTheRecentRateAfterAStall) {
  ProgressRate rate;
  EXPECT_EQ(rate.Update(0, 0), 0);
  EXPECT_DOUBLE_EQ(rate.Update(50'000, 5), 10'000);
  // The sink waits for disk space for 60 s: no rows, no rate (so no ETA).
  for (int i = 2; i <= 13; ++i) EXPECT_EQ(rate.Update(50'000, 5.0 * i), 0) << "line " << i;
  // Copying again at 20,000 rows/s: the first line after the stall says so. The average
  // since the start would say 1,538 rows/s (100,000 rows in 65 s).
  EXPECT_DOUBLE_EQ(rate.Update(150'000, 70), 20'000);
  // Then half the weight goes to each new window.
  EXPECT_DOUBLE_EQ(rate.Update(200'000, 75), 15'000);
  EXPECT_DOUBLE_EQ(rate.Update(250'000, 80), 12'500);
}

TEST(ProgressRate, ResumedCopyCountsOnlyItsOwnRows) {
  // A resumed snapshot starts from the rows of the earlier runs: the caller passes the rows
  // of this run, so the first line is this run's rate, not 10 M rows in 5 s.
  ProgressRate rate;
  EXPECT_EQ(rate.Update(0, 0), 0);
  EXPECT_DOUBLE_EQ(rate.Update(25'000, 5), 5'000);
  // Two lines at the same moment (the final one right after a periodic one): no division by 0.
  EXPECT_DOUBLE_EQ(rate.Update(25'000, 5), 5'000);
}

}  // namespace
}  // namespace sluice
