// NatsSink: records (record.h) to NATS JetStream through the NATS C client (libnats).
//
// Subjects: changes, tombstones and truncates of db.t go to "<prefix>.<db>.<table>"
// (characters other than [A-Za-z0-9_-] in names become '_', so a name never adds a
// token or a wildcard; a table whose subject another table publishes to is
// kFailedPrecondition, publish_util.h); schema changes to "<prefix>._schema", transaction metadata to
// "<prefix>._transaction". The record key travels in the header "Sluice-Key" (absent for
// keyless tables); a tombstone is an empty payload with the header "Sluice-Tombstone: true".
// Stream: `stream` (default the prefix in upper case) with subjects "<prefix>.>", file
// storage, `replicas` replicas and a 10-minute duplicate window, created at start when
// missing; an existing stream whose subjects do not cover the prefix or whose replica count
// differs is kFailedPrecondition (misconfigured, naming the stream).
// De-duplication: a record is published with a Nats-Msg-Id that names it and no other record,
// derived from its binlog position: "<file>:<pos>:<row>:<n>" for a streamed row change (n
// counts the records of one row change: delete, tombstone, create of a key change),
// "<file>:<pos>:t" for a streamed TRUNCATE, "<file>:<pos>:s<n>" for the schema records of a
// streamed DDL, BEGIN/END "<key>:B"/":E", and "r:<db>.<table>:<file>:<pos>:<key>" for a
// snapshot row of a keyed table read at that point (a copy read again later is new records,
// not duplicates: a new user's probe lost updates made while a killed snapshot was down, and
// a re-read's rows, to ids without the point). Records with no position carry no id
// (at-least-once): rows read without the binlog, keyless snapshot rows, the truncate before a
// copy starts again, a table's first CREATE. A run that is killed after publishing and before
// storing its checkpoint publishes the same records again with the same ids on restart, and
// JetStream drops them (within the duplicate window).
// Checkpoint: stored in the key-value bucket `kv_bucket` (default "<stream>_state") under
// `state_key` (default "checkpoint"), only after JetStream acknowledged every record before
// it: records are published asynchronously (at most max_pending unacknowledged: back-
// pressure), and at the end of a group (group_max_records or group_max_ms) the sink waits
// for all acknowledgements, then writes the checkpoint. A publish that times out or is
// refused for a transient reason is sent again (same Msg-Id) with backoff, 5 attempts;
// definite refusals (no stream for the subject, permissions, message too large) are
// kFailedPrecondition naming the subject and the record's key. After an error the sink
// refuses further calls; the next run resumes from the stored checkpoint.
// Ownership/thread safety: one thread at a time (libnats threads only queue failures).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sink/record.h"
#include "sink/sink.h"

namespace sluice {

struct NatsSinkOptions {
  std::string url = "nats://127.0.0.1:4222";  // comma-separated list for a cluster; printed
                                               // with any userinfo masked (util/redact.h)
  // Credentials, from the environment (sink.nats.password_env / token_env), never in `url`:
  // user and password (natsOptions_SetUserInfo), or a token (natsOptions_SetToken). Empty:
  // none.
  std::string user, password, token;
  std::string subject_prefix = "sluice";
  std::string stream;     // default: subject_prefix in upper case
  int replicas = 1;
  std::string kv_bucket;  // default "<stream>_state"
  std::string state_key = "checkpoint";
  RecordOptions records;
  bool records_defaults = true;  // Open() turns tombstones and split_key_changes on
  int64_t max_pending = 4096;    // unacknowledged asynchronous publishes
  int64_t ack_timeout_ms = 10000;
  uint32_t group_max_records = 10000;
  uint32_t group_max_ms = 200;
  std::function<int64_t()> now_ms;
};

// Subject for db.table under `options`.
std::string NatsSubjectFor(const NatsSinkOptions& options, std::string_view db, std::string_view table);

class NatsSink : public Sink {
 public:
  // Connects, creates or checks the stream and the bucket. Errors: kUnavailable (cannot
  // connect), kFailedPrecondition (stream misconfigured, JetStream not enabled).
  [[nodiscard]] static Result<std::unique_ptr<NatsSink>> Open(NatsSinkOptions options);
  ~NatsSink() override;

  Result<std::optional<std::string>> LoadCheckpoint() override;
  void KnowTables(const std::vector<std::pair<std::string, std::string>>& tables) override;
  // Schema-change record. kFailedPrecondition when another table publishes to the table's
  // subject (a table created or renamed while streaming; publish_util.h).
  Status PrepareTable(const TableSchema& table) override;
  Status Apply(const Transaction& txn) override;
  Status ResetTable(const TableSchema& table, const std::string& checkpoint) override;
  Status TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) override;
  bool KeepsRecordsPastTheCheckpoint() const override { return true; }
  // Prepares each new definition (a table dropped or renamed away leaves its subject to the
  // next), then saves the checkpoint.
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) override;
  Status SaveCheckpoint(const std::string& checkpoint) override;
  Status Flush() override;
  Status Idle() override;  // commits the open group: waits for its acknowledgements, stores the checkpoint

  class Impl;

 private:
  explicit NatsSink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
