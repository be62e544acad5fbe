// Records: the one serialiser behind every log-style sink (JSON lines, Kafka, NATS).
// A record is a (destination, key, value) triple built from a Transaction, a table
// definition (schema change) or a truncate; the destination sink only decides where each
// kind goes (topic, subject, line) and how a missing key or value is carried.
//
// Kinds, in the order AppendTransaction emits them for one source transaction:
//   kTxnBegin    (transaction_metadata only, not for snapshot chunks) key {"id":"<txn id>"},
//                value {"status":"BEGIN","id":"<txn id>","event_count":null,
//                "data_collections":null,"ts_ms":<event time ms>}
//   kChange      key = the primary key as JSON, {"<pk col>":<value>,...} in key order (no
//                key for a table without a primary key); value = the envelope of
//                envelope.h, plus, with transaction_metadata, a last envelope member
//                "transaction":{"id":"<txn id>","total_order":N,"data_collection_order":N}
//                (1-based, as Debezium counts).
//   kTombstone   (tombstones only) after each delete of a keyed table: same key, no value.
//   kTxnEnd      value {"status":"END","id":"<txn id>","event_count":N,"data_collections":
//                [{"data_collection":"<db>.<table>","event_count":N},...],"ts_ms":...}
// The transaction id is the GTID of the transaction, or "<file>:<pos>" of its first row
// event when the server gave none.
// With split_key_changes, an update that changes the primary key becomes a delete of the
// old key (and its tombstone) followed by a create of the new one, as Debezium does, so that
// per-key consumers (compaction, partitioning) see the old key go away.
// AppendSchemaChange: kSchemaChange, key {"databaseName":"<db>"}, value
//   {"source":{"connector":"sluice","db":"<db>","table":"<table>"},"ts_ms":N,
//    "databaseName":"<db>","ddl":null,"tableChanges":[{"type":"CREATE"|"ALTER",
//    "id":"<db>.<table>","table":{"primaryKeyColumnNames":[...],"columns":[{"name":...,
//    "typeName":<DATA_TYPE>,"typeExpression":<COLUMN_TYPE>,"position":N (1-based),
//    "optional":bool,"charsetName":...|null}]}}]}
// AppendDdl: kSchemaChange for one followed DDL statement (sink/sink.h SchemaChange), key
//   {"databaseName":"<db>"}, value {"source":{"connector":"sluice","db","table","file",
//   "pos","gtid","ts_ms"},"ts_ms":N,"databaseName":"<db>","ddl":"<statement>",
//   "tableChanges":[{"type":"CREATE"|"ALTER"|"DROP","id":"<db>.<table>",
//   "previousId":"<db>.<old>" (RENAME and ALTER ... RENAME only),"table":{...as above} |
//   null for DROP}]}; a RENAME is an ALTER with previousId, as Debezium writes it.
// AppendTruncate: kTruncate, no key, value {"before":null,"after":null,"op":"t",
//   "ts_ms":N,"source":{"connector":"sluice","db":"<db>","table":"<table>"}}, and when the
//   truncate has a binlog position (a TRUNCATE statement the stream read, not a copy started
//   again) "file","pos","gtid","ts_ms" in "source" after "table", as AppendDdl writes them.
// With schemas (Debezium's schemas.enable=true) every key and value is wrapped as
// {"schema":<Kafka Connect JSON schema>,"payload":<the above>} (docs/sinks.md lists the
// type mapping); tombstones stay without a value.
//
// Output is a pure function of the inputs and options (the schema cache only saves work).
// Errors: those of AppendEnvelope (bad images, invalid UTF-8 naming table and column); on
// error the batch is cut back to what it held before the call.
// Thread safety: a RecordSerializer is used by one thread at a time (its schema cache).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeline/change.h"
#include "schema/table_schema.h"
#include "sink/sink.h"
#include "util/status.h"

namespace sluice {

struct RecordOptions {
  bool schemas = false;               // {"schema":...,"payload":...} wrapping
  bool tombstones = false;            // a keyed record without value after each delete
  bool transaction_metadata = false;  // BEGIN/END records and the envelope's "transaction"
  bool split_key_changes = false;     // primary-key updates as delete (+ tombstone) + create
  std::string schema_name_prefix = "sluice";  // Connect schema names: <prefix>.<db>.<table>.Value
};

enum class RecordKind : uint8_t { kChange, kTombstone, kTxnBegin, kTxnEnd, kSchemaChange, kTruncate };

struct Record {
  RecordKind kind = RecordKind::kChange;
  const TableSchema* table = nullptr;  // null for kTxnBegin/kTxnEnd
  const RowChange* change = nullptr;   // the change a kChange/kTombstone came from, else null
  // Where a kSchemaChange (AppendDdl) or kTruncate came from (the caller's, valid while it
  // is); null when not known (AppendSchemaChange, a truncate without a position).
  const SourceInfo* source = nullptr;
  bool has_key = false;
  bool has_value = false;
  size_t key_begin = 0, key_size = 0;      // into RecordBatch::buffer
  size_t value_begin = 0, value_size = 0;  // into RecordBatch::buffer
};

// Records and the bytes they point into. Views stay valid until the batch changes.
struct RecordBatch {
  std::string buffer;
  std::vector<Record> records;

  std::string_view key(const Record& r) const { return {buffer.data() + r.key_begin, r.key_size}; }
  std::string_view value(const Record& r) const {
    return {buffer.data() + r.value_begin, r.value_size};
  }
  void clear() {
    buffer.clear();
    records.clear();
  }
};

class RecordSerializer {
 public:
  explicit RecordSerializer(RecordOptions options = {});

  // Appends the records of `txn`; ts_ms is the envelopes' processing time.
  [[nodiscard]] Status AppendTransaction(const Transaction& txn, int64_t ts_ms, RecordBatch* out);
  // Appends the schema-change record of `table` (CREATE the first time this serializer sees
  // the table, ALTER when its columns differ from the last seen; nothing when unchanged).
  [[nodiscard]] Status AppendSchemaChange(const TableSchema& table, int64_t ts_ms, RecordBatch* out);
  // `at`: the TRUNCATE statement's event (null or an empty file: none).
  [[nodiscard]] Status AppendTruncate(const TableSchema& table, int64_t ts_ms, RecordBatch* out,
                                      const SourceInfo* at = nullptr);
  [[nodiscard]] Status AppendDdl(const SchemaChange& change, int64_t ts_ms, RecordBatch* out);

  // The transaction id AppendTransaction uses (empty for an empty transaction).
  static std::string TransactionId(const Transaction& txn);

  const RecordOptions& options() const { return options_; }

 private:
  struct TableSchemas {
    TableSchemaPtr hold;  // keeps the pointer key alive
    std::string key;      // Connect schema of the key
    std::string value;    // Connect schema of the envelope
  };
  const TableSchemas& SchemasFor(const TableSchemaPtr& table);
  bool AppendSchemaChangeKey(const TableSchema& t, Record* r, std::string* out) const;
  Status AppendChange(const RowChange& c, int64_t ts_ms, const std::string& txn_id,
                      uint64_t total_order, uint64_t table_order, RecordBatch* out);

  RecordOptions options_;
  std::unordered_map<const TableSchema*, TableSchemas> schemas_;
  std::unordered_map<std::string, std::string> seen_tables_;  // qualified name -> column list
};

}  // namespace sluice
