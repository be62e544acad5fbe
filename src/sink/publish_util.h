// Pieces the Kafka and NATS sinks and `sluice tail` share: clocks, printable excerpts of
// record bytes for error messages, destination names, and the read_committed Kafka reader
// that the sink (checkpoint and tail read-back) and `sluice tail` both use.
// Not a public interface: only src/sink/*.cc include it.
// Ownership: a reader returned by NewKafkaReader belongs to the caller (rd_kafka_destroy
// after rd_kafka_consumer_close). Thread safety: the functions keep no state.
#pragma once

#include <librdkafka/rdkafka.h>
#include <nats/nats.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "sink/kafka_sink.h"
#include "sink/nats_sink.h"
#include "util/status.h"

namespace sluice::publish {

int64_t SystemNowMs();  // wall clock, ms since the epoch (envelope ts_ms)
int64_t SteadyMs();     // monotonic ms (group timers, deadlines)

// At most `max` bytes of `s` with control characters as spaces and "..." when cut.
std::string Printable(std::string_view s, size_t max = 200);
// "key <key>" when the record has one, else "value <start of the value>".
std::string RecordExcerpt(const char* key, size_t key_size, const char* value, size_t value_size);

// `s` with every character outside [A-Za-z0-9_-] as '_' ("_" for an empty name).
std::string NatsToken(std::string_view s);
// The stream name a NATS sink uses: `stream`, else the prefix as a token in upper case.
std::string NatsStreamName(const NatsSinkOptions& o);
// The message of a refused librdkafka property: "<prefix>property <name>: <err>", the value of a
// secret property masked in `err` should librdkafka quote it.
Status KafkaPropertyError(std::string_view prefix, const std::string& name, const std::string& value,
                          std::string err);
// Sets o.user/o.password or o.token on `opts` (nothing when neither is set).
natsStatus SetNatsCredentials(natsOptions* opts, const NatsSinkOptions& o);
// Sets the servers of o.url, a comma-separated list of URLs (natsOptions_SetURL takes one), on
// `opts`; empty items are skipped.
natsStatus SetNatsServers(natsOptions* opts, const NatsSinkOptions& o);

// Which source table publishes to each topic/subject of a Kafka or NATS sink. Both name a
// table's destination after it with the characters a name cannot hold as '_', so two tables
// can meet in one (`we ird` and we_ird); their records would mix under equal keys, and a
// delete in one would send a tombstone for a live row of the other. The start refuses two
// such tables (cli/run.h CheckNameCollisions); this refuses one that comes later: created or
// renamed in while streaming, or copied by a re-read. One sink thread at a time.
class DestinationOwners {
 public:
  static DestinationOwners ForKafka(const KafkaSinkOptions& o);
  static DestinationOwners ForNats(const NatsSinkOptions& o);
  // db.table publishes to its destination from now on. kFailedPrecondition naming both
  // tables and the destination when another table does (the run stops: exclude one).
  [[nodiscard]] Status Claim(std::string_view db, std::string_view table);
  // db.table published before this run and is still there (the stream's schema history):
  // it holds its destination unless a table there already does.
  void Know(std::string_view db, std::string_view table);
  // Before `change` is followed: a table dropped or renamed away (its `before` under another
  // name than its `after`) no longer holds its destination.
  void Leave(const SchemaChange& change);

 private:
  DestinationOwners(std::string what, std::string how, std::function<std::string(std::string_view, std::string_view)> name);
  std::string what_;  // "Kafka topic", "NATS subject"
  std::string how_;   // how names become destinations, for the message
  std::function<std::string(std::string_view, std::string_view)> name_;
  std::map<std::string, std::pair<std::string, std::string>> owners_;  // destination -> (db, table)
};

// A transient failure (kUnavailable) that the sink cannot retry from where it is, made the
// definite stop of the run (kFailedPrecondition): "<message>; the run stops, and the next one
// resumes from the last stored checkpoint (<how>)". Other statuses are returned unchanged.
Status StopForTheNextRun(const Status& st, std::string_view how);

// Sends librdkafka's own log lines of `conf` to sluice's log (its default prints
// "%3|<time>|..." to stderr, outside the log's format): errors and warnings as warnings, the
// rest left out, and the same line again within 10 s counted instead of repeated (a broker
// outage repeats each line per broker and second).
void SetKafkaLog(rd_kafka_conf_t* conf);

// A consumer with isolation.level=read_committed, partition EOF events on, no offset
// commits, and the security.*/sasl.*/ssl.* properties of `o`. kInvalidArgument on a bad
// property.
[[nodiscard]] Result<rd_kafka_t*> NewKafkaReader(const KafkaSinkOptions& o, const char* group_id);
// Every partition of the topics named "<prefix>" or "<prefix>.*" except the state topic.
[[nodiscard]] Result<std::vector<std::pair<std::string, int32_t>>> KafkaPrefixPartitions(
    rd_kafka_t* rk, const KafkaSinkOptions& o);

// Kafka exactly-once read-back (docs/sinks.md): what a record is, less the processing time
// a new run changes: the key (or none), and the value without its top-level "ts_ms"
// (inside "payload" when wrapped with a schema); a value that is not a JSON object counts
// as its bytes. Two records with equal identities are the same change.
std::string RecordIdentity(std::string_view key, bool has_key, std::string_view value, bool has_value);
// The checkpoint header: "<topic>:<partition>:<offset>,..." (topic names have no ':' or
// ','). Parse errors are kCorruption naming the entry.
std::string FormatKafkaOffsets(const std::map<std::pair<std::string, int32_t>, int64_t>& offsets);
[[nodiscard]] Result<std::map<std::pair<std::string, int32_t>, int64_t>> ParseKafkaOffsets(std::string_view text);

// The serialise-then-publish step of the Sink calls the Kafka and NATS sinks share. `Impl`
// has `broken` (a Status: the sink refuses calls after an error), `batch` (RecordBatch),
// `serializer` (RecordSerializer), `o.now_ms` (processing time) and
// `Publish(checkpoint)`, which publishes `batch` and then records the checkpoint (none when
// empty).
template <class Impl>
[[nodiscard]] Status PublishTransaction(Impl& impl, const Transaction& txn) {
  RETURN_IF_ERROR(impl.broken);
  impl.batch.clear();
  RETURN_IF_ERROR(impl.serializer.AppendTransaction(txn, impl.o.now_ms(), &impl.batch));
  return impl.Publish(WholeCheckpoint(txn));
}
template <class Impl>
[[nodiscard]] Status PublishSchemaChange(Impl& impl, const TableSchema& table) {
  RETURN_IF_ERROR(impl.broken);
  impl.batch.clear();
  RETURN_IF_ERROR(impl.serializer.AppendSchemaChange(table, impl.o.now_ms(), &impl.batch));
  if (impl.batch.records.empty()) return Status::Ok();
  return impl.Publish("");
}
template <class Impl>
[[nodiscard]] Status PublishTruncate(Impl& impl, const TableSchema& table, const std::string& checkpoint,
                                     const SourceInfo* at = nullptr) {
  RETURN_IF_ERROR(impl.broken);
  impl.batch.clear();
  RETURN_IF_ERROR(impl.serializer.AppendTruncate(table, impl.o.now_ms(), &impl.batch, at));
  return impl.Publish(checkpoint);
}
// The schema-change records of one followed DDL statement (record.h AppendDdl: the statement,
// its position, CREATE/ALTER/DROP), as JSON lines writes them; the checkpoint is the caller's.
template <class Impl>
[[nodiscard]] Status PublishDdl(Impl& impl, const std::vector<SchemaChange>& changes) {
  RETURN_IF_ERROR(impl.broken);
  impl.batch.clear();
  for (const SchemaChange& c : changes) RETURN_IF_ERROR(impl.serializer.AppendDdl(c, impl.o.now_ms(), &impl.batch));
  if (impl.batch.records.empty()) return Status::Ok();
  return impl.Publish("");
}

}  // namespace sluice::publish
