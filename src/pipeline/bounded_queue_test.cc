#include "pipeline/bounded_queue.h"

#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace sluice {
namespace {

using std::chrono::milliseconds;

TEST(BoundedQueueTest, BlocksWhenFullAndPassesTheCloseStatus) {
  BoundedQueue<int> q(2, 1000);
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(q.Push(i, 10).ok());
    q.Close(Status::Unavailable("socket closed"));
  });
  int expect = 0;
  Status st;
  bool closed = false;
  while (true) {
    auto v = q.Pop(milliseconds(1000), &st, &closed);
    if (!v) {
      if (closed) break;
      continue;
    }
    EXPECT_LE(q.size(), 2u);
    EXPECT_EQ(*v, expect++);
  }
  producer.join();
  EXPECT_EQ(expect, 100);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(q.Push(1, 1).ok());
}

TEST(BoundedQueueTest, ByteLimitAdmitsOneOversizedItem) {
  BoundedQueue<std::string> q(10, 5);
  ASSERT_TRUE(q.Push("0123456789", 10).ok());  // oversized, but the queue was empty
  Status st;
  bool closed;
  auto v = q.Pop(milliseconds(10), &st, &closed);
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(q.Pop(milliseconds(10), &st, &closed).has_value());
  EXPECT_TRUE(st.ok());
  EXPECT_FALSE(closed);
}

}  // namespace
}  // namespace sluice
