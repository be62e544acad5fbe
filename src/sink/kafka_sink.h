// KafkaSink: records (record.h) to Apache Kafka through librdkafka.
//
// Destinations: changes, tombstones and truncates of table db.t go to the topic named by
// `topic_template` ("{prefix}.{db}.{table}"; characters outside [A-Za-z0-9._-] become '_'; a
// table whose topic another table publishes to is kFailedPrecondition, publish_util.h);
// schema changes to "<prefix>", transaction metadata to "<prefix>.transaction". Records
// with a key are partitioned by the key's murmur2 hash (the Java client's partitioner, so
// Java producers and consumers agree); records of a table without a primary key all go to
// partition 0, which keeps their order.
// The producer is idempotent with acks=all, so librdkafka's retries (transient broker and
// network errors, with backoff) neither duplicate nor reorder records of a partition.
//
// Checkpoint: stored as a record (key = state_key, value = checkpoint text) in the state
// topic (default "<prefix>.sluice_state", created compacted with one partition when
// create_topics). LoadCheckpoint reads the last value for state_key back from Kafka.
//  - Without transactional_id (at-least-once): a checkpoint is written to the state topic
//    only after delivery reports confirmed every record before it, and counts as stored once
//    its own delivery is confirmed. A crash re-sends what came after the stored checkpoint.
//  - With transactional_id (exactly-once): the records of a group of source transactions
//    (up to group_max_records records or group_max_ms) and the group's last checkpoint are
//    one Kafka transaction. A crash aborts the open transaction (the next run's
//    init_transactions fences it), and the restart resumes from the last committed
//    checkpoint, so a read_committed consumer sees every change once. A commit that fails
//    with an abortable error is aborted and the group produced again (up to 5 attempts,
//    backoff 0.5 s doubling); the group's records are kept in memory for that.
//    This does not depend on the broker's abort markers: a group's records are delivered
//    before its checkpoint record is produced; the checkpoint record's header
//    "sluice-offsets" lists each partition's last offset up to it, and "sluice-commit" names
//    the commit attempt (so that a new producer can tell whether a commit whose answer was
//    lost went through); LoadCheckpoint (and a retry after an abort) reads, read_committed,
//    what follows those offsets, and records regenerated after the checkpoint that are
//    already there (same key, same value but for ts_ms, first in line for their key) are not
//    produced again (docs/sinks.md).
// Back-pressure: the producer queue is bounded (queue_max_kbytes); when it is full, Apply
// waits for deliveries. Errors: kFailedPrecondition for definite errors (authorisation,
// unknown or misconfigured topic, record too large, a fenced producer), naming the topic and
// the record's key (or the start of its value); after one the sink refuses further calls
// with it and the run stops (the next run resumes from the stored checkpoint).
//  - With transactional_id, kUnavailable when a call's records or its commit failed after
//    the retries in place (records not delivered in delivery_timeout_ms, a broker error, a
//    fatal error of the producer other than fencing): none of the call is kept, and the next
//    call first starts a new producer (its init_transactions ends the old transaction), reads
//    the checkpoint back and produces the kept group again, or learns that it committed. So
//    the caller makes the same call again (sink_retry.h), and nothing is lost or repeated.
//  - Without it, a record not delivered is kFailedPrecondition: the run stops, and the next
//    one sends again what followed the stored checkpoint (at-least-once).
// Ownership/thread safety: one thread at a time; librdkafka's own threads only run
// callbacks that this class serves from its calls (rd_kafka_poll).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sink/record.h"
#include "sink/sink.h"

namespace sluice {

struct KafkaSinkOptions {
  std::string bootstrap_servers;
  std::string topic_prefix = "sluice";
  std::string topic_template = "{prefix}.{db}.{table}";
  std::string transactional_id;  // empty: idempotent producer, at-least-once
  std::string state_topic;       // default "<prefix>.sluice_state"
  std::string state_key;         // default: transactional_id, else topic_prefix
  RecordOptions records;         // Open() turns tombstones and split_key_changes on when
                                 // records_defaults is left true
  bool records_defaults = true;
  bool create_topics = false;    // create missing topics through the Admin API (state topic
                                 // compacted); off: the broker auto-creates them
  int partitions = 1;            // for created topics
  int replication_factor = 1;    // for created topics (-1: the broker's default)
  uint32_t group_max_records = 10000;
  uint32_t group_max_ms = 200;
  uint32_t delivery_timeout_ms = 60000;
  uint32_t queue_max_kbytes = 65536;
  // Extra librdkafka properties (security.protocol, sasl.*, ssl.*, ...), applied last. The
  // secret ones (KafkaPropertyIsSecret) come from the environment (sink.kafka.properties_env),
  // and no error message shows their value.
  std::vector<std::pair<std::string, std::string>> properties;
  std::function<int64_t()> now_ms;  // envelope ts_ms; default: the system clock
};

// Whether the librdkafka property `name` holds a secret: a name with "password" or "secret"
// in it (sasl.password, ssl.key.password, ssl.keystore.password,
// sasl.oauthbearer.client.secret), or ssl.key.pem (a private key itself).
bool KafkaPropertyIsSecret(std::string_view name);

// Topic name for db.table under `options` (template applied, characters sanitised).
std::string KafkaTopicFor(const KafkaSinkOptions& options, std::string_view db,
                          std::string_view table);

// The topic holding the checkpoint: `state_topic`, else "<prefix>.sluice_state".
std::string KafkaStateTopic(const KafkaSinkOptions& options);

class KafkaSink : public Sink {
 public:
  // Connects (and, with transactional_id, initialises transactions, fencing older
  // producers with the same id). Errors: kInvalidArgument (bad properties), kUnavailable.
  [[nodiscard]] static Result<std::unique_ptr<KafkaSink>> Open(KafkaSinkOptions options);
  ~KafkaSink() override;

  Result<std::optional<std::string>> LoadCheckpoint() override;
  void KnowTables(const std::vector<std::pair<std::string, std::string>>& tables) override;
  // Topic + schema-change record. kFailedPrecondition when another table publishes to the
  // table's topic (a table created or renamed while streaming; publish_util.h).
  Status PrepareTable(const TableSchema& table) override;
  Status Apply(const Transaction& txn) override;
  // The group's records and last checkpoint inside one Kafka transaction (never committed
  // in the middle of the group): a failure leaves none of it, and the retry sends it whole.
  Status ApplyGroup(const std::vector<Transaction>& group) override;
  Status ResetTable(const TableSchema& table, const std::string& checkpoint) override;
  Status TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) override;
  bool KeepsRecordsPastTheCheckpoint() const override;
  // Prepares each new definition (a table dropped or renamed away leaves its topic to the
  // next), then saves the checkpoint; what was delivered stays as it is.
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) override;
  Status SaveCheckpoint(const std::string& checkpoint) override;
  Status Flush() override;  // waits for every delivery / commits the open transaction
  // Exactly-once: commits the open transaction. At-least-once: stores the newest checkpoint
  // whose records are confirmed (without waiting for the others).
  Status Idle() override;

  // Tests only: makes the current producer fail as librdkafka fails one for good (a fatal
  // error with code `error`, an rd_kafka_resp_err_t; rd_kafka_test_fatal_error).
  void FailProducerForTest(int error);

  class Impl;

 private:
  explicit KafkaSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
