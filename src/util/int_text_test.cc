#include "util/int_text.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace sluice {
namespace {

std::string Fast(uint64_t v) {
  char buf[24];
  return std::string(buf, WriteDecimal(v, buf));
}
std::string Fast(int64_t v) {
  char buf[24];
  return std::string(buf, WriteDecimal(v, buf));
}
template <typename T>
std::string Std(T v) {
  char buf[24];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

TEST(IntText, Edges) {
  EXPECT_EQ(Fast(uint64_t{0}), "0");
  EXPECT_EQ(Fast(int64_t{0}), "0");
  EXPECT_EQ(Fast(int64_t{-1}), "-1");
  EXPECT_EQ(Fast(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(Fast(std::numeric_limits<int64_t>::max()), "9223372036854775807");
  EXPECT_EQ(Fast(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
}

// Every width: 10^k - 1, 10^k and 10^k + 1 and a mixed-digit value of each width, both signs,
// against std::to_chars; the digit count is where an estimate from the bit width can be off.
TEST(IntText, EveryWidthMatchesToChars) {
  uint64_t p = 1;
  for (int k = 0; k <= 19; ++k) {
    for (uint64_t v : {p - 1, p, p + 1, p * 9 + p / 7, p * 2 - 1}) {
      EXPECT_EQ(Fast(v), Std(v)) << "unsigned " << v << " (10^" << k << " area)";
      const auto s = static_cast<int64_t>(v);
      EXPECT_EQ(Fast(s), Std(s)) << "signed " << s;
      if (s != std::numeric_limits<int64_t>::min()) {
        EXPECT_EQ(Fast(-s), Std(-s)) << "signed " << -s;
      }
    }
    if (k < 19) p *= 10;
  }
  // Every power of two and its neighbours (each bit width).
  for (int b = 0; b < 64; ++b) {
    const uint64_t v = uint64_t{1} << b;
    for (uint64_t x : {v - 1, v, v + 1}) {
      EXPECT_EQ(Fast(x), Std(x)) << "unsigned " << x;
      EXPECT_EQ(Fast(static_cast<int64_t>(x)), Std(static_cast<int64_t>(x))) << "signed " << x;
    }
  }
  for (uint64_t v = 0; v < 100000; ++v) ASSERT_EQ(Fast(v), Std(v)) << v;
}

}  // namespace
}  // namespace sluice
