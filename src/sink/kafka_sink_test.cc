// KafkaSink against librdkafka's mock cluster, in process: what a fatal error of the
// producer does to the open transaction. The end-to-end runs with broker faults and kills are
// in tests/integration/publish_test.cc.
#include "sink/kafka_sink.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <map>
#include <string>

#include "checkpoint/checkpoint.h"
#include "sink/sink_test_util.h"

namespace sluice {
namespace {

using sink_test::ShopItems;

Transaction InsertTxn(int64_t id, std::string checkpoint) {
  Transaction t;
  t.changes = {sink_test::ShopInsert(id, "item " + std::to_string(id))};
  t.checkpoint = std::move(checkpoint);
  return t;
}

class KafkaSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    ASSERT_EQ(rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err), RD_KAFKA_CONF_OK);
    cluster_rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    ASSERT_NE(cluster_rk_, nullptr) << err;
    cluster_ = rd_kafka_mock_cluster_new(cluster_rk_, 1);
    ASSERT_NE(cluster_, nullptr);
    bootstrap_ = rd_kafka_mock_cluster_bootstraps(cluster_);
  }
  void TearDown() override {
    if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
    if (cluster_rk_ != nullptr) rd_kafka_destroy(cluster_rk_);
  }

  // Open, the checkpoint loaded and shop.items prepared, as a run starts.
  std::unique_ptr<KafkaSink> Started(uint32_t group_max_records = 1000000) {
    auto sink = Open(group_max_records);
    if (sink == nullptr) return nullptr;
    EXPECT_TRUE(sink->LoadCheckpoint().ok());
    EXPECT_TRUE(sink->PrepareTable(*ShopItems()).ok());
    return sink;
  }

  std::unique_ptr<KafkaSink> Open(uint32_t group_max_records = 1000000) {
    KafkaSinkOptions o;
    o.bootstrap_servers = bootstrap_;
    o.transactional_id = "sluice-unit";
    o.create_topics = false;  // the mock creates topics when first written (no CreateTopics in 2.0.2)
    o.group_max_records = group_max_records;  // default: commits on Flush only
    o.group_max_ms = 3600000;
    o.delivery_timeout_ms = 10000;
    o.properties = {{"log_level", "0"}};
    auto sink = KafkaSink::Open(o);
    EXPECT_TRUE(sink.ok()) << sink.status().ToString();
    return sink.ok() ? std::move(*sink) : nullptr;
  }

  // The checkpoint the state topic holds now, read by a reader that fences nobody.
  std::string StoredCheckpoint() {
    KafkaSinkOptions o;
    o.bootstrap_servers = bootstrap_;
    o.state_key = "sluice-unit";
    o.properties = {{"log_level", "0"}};
    auto reader = KafkaSink::Open(o);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok()) return "?";
    auto stored = (*reader)->LoadCheckpoint();
    EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    return stored.ok() ? stored->value_or("") : "?";
  }

  // After a fault injected once transaction 1 is applied: applying transaction 2 fails
  // (kUnavailable), the same call made again succeeds, and after transaction 3 and a flush the
  // topic holds each key once and the state topic the last checkpoint.
  void ExpectSecondApplyFailsThenEachKeyOnce(KafkaSink& sink) {
    Status failed = sink.Apply(InsertTxn(2, "cp2"));
    EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
    Status again = sink.Apply(InsertTxn(2, "cp2"));
    ASSERT_TRUE(again.ok()) << again.ToString();
    ASSERT_TRUE(sink.Apply(InsertTxn(3, "cp3")).ok());
    ASSERT_TRUE(sink.Flush().ok());
    EXPECT_EQ(Keys(), (std::map<std::string, int>{{"{\"id\":1}", 1}, {"{\"id\":2}", 1}, {"{\"id\":3}", 1}}));
    EXPECT_EQ(StoredCheckpoint(), "cp3");
  }

  // Record count per key of the items topic (the mock keeps no transaction markers, so
  // this is what any reader sees, aborted transactions included).
  std::map<std::string, int> Keys() {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "unit-reader", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    rd_kafka_topic_t* topic = rd_kafka_topic_new(c, "sluice.shop.items", nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    EXPECT_EQ(rd_kafka_metadata(c, 0, topic, &md, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
    const int partitions = md != nullptr && md->topic_cnt == 1 ? md->topics[0].partition_cnt : 0;
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(topic);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
      rd_kafka_topic_partition_list_add(list, "sluice.shop.items", p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(c, list);
    rd_kafka_topic_partition_list_destroy(list);
    std::map<std::string, int> keys;
    for (int polls = 0, open = partitions; polls < 200 && open > 0; ++polls) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) --open;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) ++keys[std::string(static_cast<const char*>(m->key), m->key_len)];
      rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return keys;
  }

  rd_kafka_t* cluster_rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::string bootstrap_;
};

// CI met librdkafka's fatal "sequence desynchronization" / "rewound sequence number" errors
// after injected broker faults, and the run stopped (exit 1). A fatal error other than a
// fencing fails the call (kUnavailable, nothing of it kept); the same call made again starts
// a new producer and publishes the open group and the call once each.
TEST_F(KafkaSinkTest, AFatalProducerErrorIsRetriedWithANewProducerExactlyOnce) {
  auto sink = Started();
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->Apply(InsertTxn(1, "cp1")).ok());
  sink->FailProducerForTest(RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
  ExpectSecondApplyFailsThenEachKeyOnce(*sink);
}

// The same at commit time: Flush fails, and Flush again commits the whole group once.
TEST_F(KafkaSinkTest, AFatalProducerErrorAtCommitIsRetriedWithANewProducer) {
  auto sink = Started();
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->ApplyGroup({InsertTxn(1, "cp1"), InsertTxn(2, "cp2")}).ok());
  sink->FailProducerForTest(RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
  EXPECT_EQ(sink->Flush().code(), StatusCode::kUnavailable);
  Status again = sink->Flush();
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(Keys(), (std::map<std::string, int>{{"{\"id\":1}", 1}, {"{\"id\":2}", 1}}));
  EXPECT_EQ(StoredCheckpoint(), "cp2");
}

// A commit whose answer is a fatal error (EndTxn: INVALID_TXN_STATE) after its checkpoint
// record is visible (the mock writes no abort markers, so it shows it): the new producer
// finds that commit's kCommitHeader in the state topic and produces nothing again, and the
// failed call made again is a no-op. (On a real cluster the new producer's init_transactions
// aborts such a transaction, its checkpoint record is not visible, and the group is produced
// again: the path of the tests above.)
TEST_F(KafkaSinkTest, ACommitThatWentThroughIsNotProducedAgain) {
  auto sink = Started(/*group_max_records=*/3);  // the second Apply commits
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->Apply(InsertTxn(1, "cp1")).ok());
  rd_kafka_mock_push_request_errors(cluster_, 26 /* EndTxn */, 1, RD_KAFKA_RESP_ERR_INVALID_TXN_STATE);
  ExpectSecondApplyFailsThenEachKeyOnce(*sink);
}

// An idle stream (Sink::Idle) commits the open transaction at once: before, it stayed open
// (invisible to read_committed consumers, its checkpoint not stored) until the next
// transaction arrived, however long that took.
TEST_F(KafkaSinkTest, IdleCommitsTheOpenTransaction) {
  auto sink = Started();
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->Apply(InsertTxn(1, "cp1")).ok());
  EXPECT_EQ(StoredCheckpoint(), "");
  ASSERT_TRUE(sink->Idle().ok());
  EXPECT_EQ(StoredCheckpoint(), "cp1");
  ASSERT_TRUE(sink->Idle().ok());  // nothing open: nothing to do
}

// A fencing (another producer took the transactional_id) stops the sink for good.
TEST_F(KafkaSinkTest, AFencedProducerStops) {
  auto sink = Started();
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->Apply(InsertTxn(1, "cp1")).ok());
  sink->FailProducerForTest(RD_KAFKA_RESP_ERR__FENCED);
  EXPECT_EQ(sink->Flush().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(sink->Apply(InsertTxn(2, "cp2")).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace sluice
