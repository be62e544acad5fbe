#include "sink/publish_util.h"

#include <gtest/gtest.h>

namespace sluice::publish {
namespace {

TEST(RecordIdentity, IgnoresOnlyTheProcessingTime) {
  const std::string a = R"({"before":null,"after":{"id":1},"op":"c","ts_ms":1000,"source":{"pos":4,"ts_ms":7}})";
  const std::string b = R"({"before":null,"after":{"id":1},"op":"c","ts_ms":2000,"source":{"pos":4,"ts_ms":7}})";
  const std::string other_pos = R"({"before":null,"after":{"id":1},"op":"c","ts_ms":1000,"source":{"pos":5,"ts_ms":7}})";
  const std::string other_event_time = R"({"before":null,"after":{"id":1},"op":"c","ts_ms":1000,"source":{"pos":4,"ts_ms":8}})";
  EXPECT_EQ(RecordIdentity(R"({"id":1})", true, a, true), RecordIdentity(R"({"id":1})", true, b, true));
  EXPECT_NE(RecordIdentity(R"({"id":1})", true, a, true), RecordIdentity(R"({"id":1})", true, other_pos, true));
  EXPECT_NE(RecordIdentity(R"({"id":1})", true, a, true), RecordIdentity(R"({"id":1})", true, other_event_time, true));
  EXPECT_NE(RecordIdentity(R"({"id":1})", true, a, true), RecordIdentity(R"({"id":2})", true, a, true));
  EXPECT_NE(RecordIdentity("", false, a, true), RecordIdentity("", true, a, true));
}

TEST(RecordIdentity, SchemaWrappedTombstonesAndNonJson) {
  const std::string a = R"({"schema":{"type":"struct"},"payload":{"op":"u","ts_ms":1,"source":{"pos":9}}})";
  const std::string b = R"({"schema":{"type":"struct"},"payload":{"op":"u","ts_ms":2,"source":{"pos":9}}})";
  EXPECT_EQ(RecordIdentity("k", true, a, true), RecordIdentity("k", true, b, true));
  EXPECT_EQ(RecordIdentity("k", true, "", false), RecordIdentity("k", true, "", false));
  EXPECT_NE(RecordIdentity("k", true, "", false), RecordIdentity("k", true, "", true));
  EXPECT_NE(RecordIdentity("k", true, "not json 1", true), RecordIdentity("k", true, "not json 2", true));
}

TEST(KafkaOffsets, RoundTripAndBadEntries) {
  std::map<std::pair<std::string, int32_t>, int64_t> offsets = {
      {{"sluice.shop.items", 0}, 41}, {{"sluice.shop.items", 3}, 7}, {{"sluice", 0}, 2}};
  const std::string text = FormatKafkaOffsets(offsets);
  EXPECT_EQ(text, "sluice:0:2,sluice.shop.items:0:41,sluice.shop.items:3:7");
  Result<std::map<std::pair<std::string, int32_t>, int64_t>> back = ParseKafkaOffsets(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, offsets);
  EXPECT_TRUE(ParseKafkaOffsets("")->empty());
  for (const char* bad : {"topic", "topic:1", ":1:2", "t:x:2", "t:1:", "t:1:2,u"}) {
    Result<std::map<std::pair<std::string, int32_t>, int64_t>> r = ParseKafkaOffsets(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << bad;
    EXPECT_NE(r.status().message().find("bad entry"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace sluice::publish
