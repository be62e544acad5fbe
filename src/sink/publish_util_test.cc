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

SchemaChange Change(SchemaChange::Kind kind, const char* before, const char* after) {
  auto table = [](const char* name) -> TableSchemaPtr {
    if (name == nullptr) return nullptr;
    auto t = std::make_shared<TableSchema>();
    t->db = "d";
    t->table = name;
    return t;
  };
  SchemaChange c;
  c.kind = kind;
  c.before = table(before);
  c.after = table(after);
  return c;
}

// Two tables whose names reduce to one subject (`we ird`, we_ird) must not both publish
// there; a table dropped or renamed away leaves its subject to the next one.
TEST(DestinationOwners, ASecondTableInOneDestinationIsRefusedUntilTheFirstLeaves) {
  NatsSinkOptions o;
  o.subject_prefix = "p";
  DestinationOwners owners = DestinationOwners::ForNats(o);
  using K = SchemaChange::Kind;
  ASSERT_TRUE(owners.Claim("d", "we ird").ok());
  ASSERT_TRUE(owners.Claim("d", "we ird").ok()) << "the same table again";
  Status st = owners.Claim("d", "we_ird");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  for (const char* word : {"`d`.`we ird`", "`d`.`we_ird`", "NATS subject p.d.we_ird", "source.exclude"})
    EXPECT_NE(st.message().find(word), std::string::npos) << word << " in " << st.message();
  ASSERT_TRUE(owners.Claim("d", "o t").ok());

  // Renamed away: the subject is free; renamed back in: taken again.
  owners.Leave(Change(K::kRename, "we ird", "moved"));
  ASSERT_TRUE(owners.Claim("d", "moved").ok());
  ASSERT_TRUE(owners.Claim("d", "we_ird").ok());
  EXPECT_FALSE(owners.Claim("d", "we ird").ok());
  // A drop of a table that does not hold the subject leaves it to its holder.
  owners.Leave(Change(K::kDrop, "we ird", nullptr));
  EXPECT_FALSE(owners.Claim("d", "we ird").ok());
  owners.Leave(Change(K::kDrop, "we_ird", nullptr));
  EXPECT_TRUE(owners.Claim("d", "we ird").ok());
  // An ALTER that keeps the name keeps the subject.
  owners.Leave(Change(K::kAlter, "o t", "o t"));
  EXPECT_EQ(owners.Claim("d", "o_t").code(), StatusCode::kFailedPrecondition);

  // Tables known from before the run: the first of two that meet keeps the subject (the
  // start refuses two that both exist; cli/run.h).
  DestinationOwners known = DestinationOwners::ForNats(o);
  known.Know("d", "a b");
  known.Know("d", "a_b");
  EXPECT_TRUE(known.Claim("d", "a b").ok());
  EXPECT_FALSE(known.Claim("d", "a_b").ok());

  // Kafka keeps '.', so `a.b`.c and a.`b.c` meet; the topic template counts.
  KafkaSinkOptions k;
  DestinationOwners topics = DestinationOwners::ForKafka(k);
  ASSERT_TRUE(topics.Claim("a.b", "c").ok());
  Status dots = topics.Claim("a", "b.c");
  EXPECT_NE(dots.message().find("Kafka topic sluice.a.b.c"), std::string::npos) << dots.message();
  k.topic_template = "{prefix}.{table}";
  DestinationOwners no_db = DestinationOwners::ForKafka(k);
  ASSERT_TRUE(no_db.Claim("d1", "t").ok());
  EXPECT_FALSE(no_db.Claim("d2", "t").ok());
}

}  // namespace
}  // namespace sluice::publish
