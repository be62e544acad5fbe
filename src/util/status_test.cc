#include "util/status.h"

#include <gtest/gtest.h>

#include "util/byte_reader.h"

namespace sluice {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument(fmt::format("{} is odd", x));
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Status::Corruption("bad");
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "Corruption: bad");
  EXPECT_EQ(s.WithContext("file x").message(), "file x: bad");
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "3 is odd");
}

TEST(ByteReaderTest, ChecksBoundsAndNamesOffset) {
  const uint8_t bytes[] = {0x01, 0x02, 0x03, 0xFC, 0x10, 0x00};
  ByteReader r(bytes, 100, "TEST_EVENT");
  EXPECT_EQ(*r.ReadLe16(), 0x0201);
  EXPECT_EQ(*r.ReadU8(), 3);
  EXPECT_EQ(*r.ReadLenEnc(), 16u);
  auto bad = r.ReadLe32();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("TEST_EVENT at offset 106"), std::string::npos)
      << bad.status().message();
  ByteReader be(bytes);
  EXPECT_EQ(*be.ReadBe(3), 0x010203u);
}

}  // namespace
}  // namespace sluice
