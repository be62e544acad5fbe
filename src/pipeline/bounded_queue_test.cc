#include "pipeline/bounded_queue.h"

#include <string>
#include <thread>
#include <vector>

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

// Batched wake-ups: items arrive in order and in batches; fewer than a batch are still
// delivered after the linger time; a closed queue ends the wait at once.
TEST(BoundedQueueTest, BatchedWakeUpsDeliverEverythingInOrder) {
  BoundedQueue<int> q(1000, 1u << 20);
  q.set_wake_batch(64, milliseconds(5));
  std::thread producer([&] {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(q.Push(i, 1).ok());
  });
  std::vector<int> got;
  Status st;
  bool closed = false;
  size_t calls = 0;
  while (got.size() < 1000) {
    ++calls;
    q.PopBatch(&got, 100, milliseconds(1000), &st, &closed);
    ASSERT_FALSE(closed);
  }
  producer.join();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(got[i], i);
  EXPECT_LT(calls, 1000u) << "no batching: one call per item";

  // Three items, fewer than a batch: delivered after the linger time, not the whole wait.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.Push(i, 1).ok());
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> few;
  EXPECT_EQ(q.PopBatch(&few, 100, milliseconds(5000), &st, &closed), 3u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  // Pop waits for one item likewise, and Close ends an empty wait.
  ASSERT_TRUE(q.Push(7, 1).ok());
  auto one = q.Pop(milliseconds(5000), &st, &closed);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(*one, 7);
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    q.Close(Status::Ok());
  });
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(q.PopBatch(&few, 100, milliseconds(5000), &st, &closed), 0u);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  closer.join();
}

}  // namespace
}  // namespace sluice
