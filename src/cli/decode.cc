#include "cli/decode.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>
#include <unordered_map>

#include "binlog/events.h"
#include "binlog/fixed_binary_text.h"
#include "binlog/value_decoder.h"
#include "io/binlog_file.h"
#include "pipeline/bounded_queue.h"
#include "pipeline/change.h"
#include "schema/ddl.h"
#include "schema/ddl_apply.h"
#include "sink/envelope.h"
#include "util/utf8.h"

namespace sluice::cli {
namespace {

// A table definition built from the TABLE_MAP alone: column names from the optional
// metadata, or "@1", "@2", ... when the binlog has none. Names that are not valid UTF-8
// (a damaged or crafted file) have their invalid bytes escaped as \xNN.
std::shared_ptr<TableSchema> SchemaFromMap(const binlog::TableMap& map) {
  auto t = std::make_shared<TableSchema>();
  t->db = EscapeInvalidUtf8(map.db);
  t->table = EscapeInvalidUtf8(map.table);
  for (size_t i = 0; i < map.column_count(); ++i) {
    ColumnDesc c;
    c.name = i < map.column_names.size() ? EscapeInvalidUtf8(map.column_names[i]) : fmt::format("@{}", i + 1);
    t->columns.push_back(std::move(c));
  }
  for (uint32_t k : map.primary_key) t->primary_key.push_back(k);
  return t;
}

// MariaDB's UUID, INET4 and INET6 columns reach the binlog as BINARY(16) and BINARY(4) do:
// a STRING column of the binary charset, so the TABLE_MAP cannot tell them apart. `sluice
// run` knows them from the server (and prints their text, binlog/fixed_binary_text.h);
// decode learns them from the table-shaping statements in the files it reads: CREATE TABLE
// (and LIKE a known table), ALTER TABLE, RENAME TABLE and DROP TABLE/DATABASE, as far as
// schema/ddl.h understands them (a table a statement shapes in a way it does not understand
// is forgotten). A table whose CREATE is not in the files keeps those columns as bytes.
class FixedBinaryColumns {
 public:
  void OnQuery(const binlog::QueryEvent& q, bool mariadb) {
    if (q.query == "BEGIN" || q.query == "COMMIT") return;  // one per transaction: not parsed
    auto parsed = ddl::Parse(q.query, q.schema, {.mariadb = mariadb});
    if (!parsed.ok()) return;
    const ddl::Statement& st = *parsed;
    if (st.kind == ddl::Kind::kNone || st.temporary) return;
    ++generation_;
    if (!st.drop_database.empty())
      std::erase_if(tables_, [&](const auto& e) { return e.first.first == st.drop_database; });
    if (!st.understood) {
      for (const ddl::TableRef& t : st.tables) tables_.erase(KeyOf(t));
      for (const auto& [from, to] : st.renames) tables_.erase(KeyOf(to));
      return;
    }
    switch (st.kind) {
      case ddl::Kind::kCreateTable: {
        if (st.tables.empty()) return;
        const Key key = KeyOf(st.tables[0]);
        if (st.if_not_exists && tables_.count(key)) return;
        if (st.like) {
          const auto it = tables_.find(KeyOf(*st.like));
          if (it == tables_.end()) tables_.erase(key);
          else tables_[key] = it->second;
        } else if (st.definition && !st.as_select) {
          tables_[key] = *st.definition;
        } else {
          tables_.erase(key);
        }
        return;
      }
      case ddl::Kind::kAlterTable: {
        if (st.tables.empty()) return;
        const auto it = tables_.find(KeyOf(st.tables[0]));
        for (const auto& [from, to] : st.renames) tables_.erase(KeyOf(to));
        if (it == tables_.end()) return;
        auto applied = ddl::ApplyAlter(it->second, st);
        tables_.erase(it);
        if (applied.ok()) tables_[KeyOf(applied->after.db, applied->after.table)] = std::move(applied->after);
        return;
      }
      case ddl::Kind::kRenameTable:
        for (const auto& [from, to] : st.renames) {
          auto node = tables_.extract(KeyOf(from));
          tables_.erase(KeyOf(to));
          if (!node.empty()) {
            node.key() = KeyOf(to);
            tables_.insert(std::move(node));
          }
        }
        return;
      case ddl::Kind::kDropTable:
        for (const ddl::TableRef& t : st.tables) tables_.erase(KeyOf(t));
        return;
      default:
        return;
    }
  }

  // Changes with every table-shaping statement (cached schemas are rebuilt).
  uint64_t generation() const { return generation_; }

  // Sets the type of each column of `schema` (built from `map`) that the known definition
  // of its table has as UUID/INET4/INET6 and that the map shows as a binary STRING of that
  // type's size; the others are left as they are. Returns whether it set any.
  bool Apply(const binlog::TableMap& map, TableSchema* schema) const {
    const auto it = tables_.find(KeyOf(map.db, map.table));
    if (it == tables_.end() || it->second.columns.size() != map.column_count()) return false;
    bool any = false;
    for (size_t i = 0; i < map.column_count(); ++i) {
      const SqlType type = it->second.columns[i].type;
      const binlog::FixedBinaryType fixed = binlog::FixedBinaryTypeOf(type);
      if (fixed == binlog::FixedBinaryType::kNone) continue;
      if (map.column_types[i] != binlog::ColumnType::MYSQL_TYPE_STRING || i >= map.column_meta.size()) continue;
      const binlog::StringMeta sm = binlog::DecodeStringMeta(map.column_meta[i]);
      const uint32_t size = fixed == binlog::FixedBinaryType::kInet4 ? 4 : 16;
      if (sm.real_type != binlog::ColumnType::MYSQL_TYPE_STRING || sm.length != size) continue;
      if (map.has_charsets && i < map.collation_ids.size() && map.collation_ids[i] != 0 &&
          map.collation_ids[i] != 63)  // 63: binary
        continue;
      schema->columns[i].type = type;
      any = true;
    }
    return any;
  }

 private:
  using Key = std::pair<std::string, std::string>;
  static Key KeyOf(const ddl::TableRef& t) { return {t.db, t.table}; }
  static Key KeyOf(const std::string& db, const std::string& table) { return {db, table}; }

  std::map<Key, TableSchema> tables_;
  uint64_t generation_ = 0;
};

// Output is gathered in one buffer and written in large pieces.
constexpr size_t kFlushBytes = size_t{1} << 20;

void Flush(std::string* buf, std::ostream& out) {
  if (buf->empty()) return;
  out.write(buf->data(), static_cast<std::streamsize>(buf->size()));
  buf->clear();
}

struct TableEntry {
  std::shared_ptr<const binlog::TableMap> map;  // keeps the map (and its address) alive
  uint64_t generation = 0;  // FixedBinaryColumns::generation() when `schema` was built
  TableSchemaPtr schema;
  bool typed = false;  // `schema` has UUID/INET columns: rows are decoded with it
};

// --rows output runs on a second thread: the decoding thread hands batches of row changes
// to a writer thread that formats the envelopes and writes them, in order. Batches go
// back to the decoder through `free` to be refilled, so their vectors and strings keep
// their capacity. Memory is bounded by the queue (kMaxBatches batches of kBatchRows).
constexpr size_t kBatchRows = 4096;
constexpr size_t kMaxBatches = 8;

struct Batch {
  std::vector<RowChange> changes;  // changes[0, used) are filled
  size_t used = 0;
};

class EnvelopeWriter {
 public:
  explicit EnvelopeWriter(std::ostream& out)
      : out_(out), full_(kMaxBatches, SIZE_MAX), free_(kMaxBatches + 2, SIZE_MAX) {
    thread_ = std::thread([this] { Run(); });
  }
  ~EnvelopeWriter() { (void)Finish(Status::Ok()); }

  // A batch to fill (recycled when one is free).
  std::unique_ptr<Batch> Take() {
    Status st;
    bool closed = false;
    auto b = free_.Pop(std::chrono::milliseconds(0), &st, &closed);
    std::unique_ptr<Batch> batch = b ? std::move(*b) : std::make_unique<Batch>();
    batch->used = 0;
    return batch;
  }
  // Queues a filled batch; fails with the writer's error once it has stopped.
  Status Send(std::unique_ptr<Batch> batch) { return full_.Push(std::move(batch), 1); }
  // Ends the stream (`why` non-OK: the decoder's error), waits for the writer to write
  // everything queued, and returns the writer's own error, if any.
  Status Finish(Status why) {
    if (thread_.joinable()) {
      full_.Close(std::move(why));
      thread_.join();
    }
    return error_;
  }

 private:
  // No exception may end the thread (std::terminate): one becomes the writer's error.
  void Run() {
    try {
      RunLoop();
    } catch (const std::exception& e) {
      error_ = Status::Internal(fmt::format("decode output writer: {}", e.what()));
      full_.Close(error_);
    }
  }

  void RunLoop() {
    std::string buf;
    buf.reserve(kFlushBytes + (kFlushBytes >> 2));
    while (true) {
      Status st;
      bool closed = false;
      auto batch = full_.Pop(std::chrono::milliseconds(1000), &st, &closed);
      if (!batch) {
        if (closed) break;
        continue;
      }
      for (size_t i = 0; i < (*batch)->used; ++i) {
        const RowChange& c = (*batch)->changes[i];
        const size_t mark = buf.size();
        Status est = AppendEnvelope(c, int64_t{c.source.timestamp} * 1000, &buf);
        if (!est.ok()) {
          buf.resize(mark);
          error_ = est;
          break;
        }
        buf += '\n';
      }
      if (buf.size() >= kFlushBytes || !error_.ok()) Flush(&buf, out_);
      if (!error_.ok()) {
        full_.Close(error_);  // the decoder's next Send fails
        break;
      }
      (void)free_.Push(std::move(*batch), 1);
    }
    Flush(&buf, out_);
  }

  std::ostream& out_;
  BoundedQueue<std::unique_ptr<Batch>> full_;
  BoundedQueue<std::unique_ptr<Batch>> free_;
  Status error_;  // written by the writer thread, read after join
  std::thread thread_;
};

// Decodes every file; appends the output to *buf, flushing it to `out` as it grows, except
// the row changes of --rows, which go to `writer`.
// `*batch` is the --rows batch being filled; the caller sends what is left in it, also
// after an error.
Status DecodeFiles(const DecodeOptions& options, std::string* buf, std::ostream& out,
                   EnvelopeWriter* writer, std::unique_ptr<Batch>* pending) {
  std::unique_ptr<Batch>& batch = *pending;
  std::map<std::string, uint64_t> by_type;
  std::map<std::string, uint64_t> rows_by_table;
  std::vector<binlog::DecodedRow> decoded;  // reused from event to event
  std::string gtid;  // GTID of the transaction being read ("" before any GTID event)
  FixedBinaryColumns fixed;  // learned from every file, in the order given
  const bool decodes_rows = options.rows || options.summary || options.no_output;
  for (const auto& path : options.files) {
    binlog::EventStreamOptions stream_options;
    stream_options.max_event_size = options.max_event_size;
    ASSIGN_OR_RETURN(auto reader, io::BinlogFileReader::Open(path, stream_options));
    std::unordered_map<uint64_t, TableEntry> schemas;  // by table id
    // The table's entry for a rows event of `ev`, rebuilt when its map or the known
    // definitions changed.
    auto entry_for = [&](const binlog::Event& ev, uint64_t table_id) -> TableEntry& {
      TableEntry& entry = schemas[table_id];
      if (entry.map.get() != ev.table_map.get() || entry.generation != fixed.generation() || !entry.schema) {
        entry.map = ev.table_map;
        entry.generation = fixed.generation();
        std::shared_ptr<TableSchema> schema = SchemaFromMap(*ev.table_map);
        entry.typed = fixed.Apply(*ev.table_map, schema.get());
        entry.schema = std::move(schema);
      }
      return entry;
    };
    while (true) {
      ASSIGN_OR_RETURN(const binlog::Event* ev, reader->NextRef());
      if (!ev) break;
      // Definitions are learned before --start-position too: its rows may need them.
      if (const auto* q = std::get_if<binlog::QueryEvent>(&ev->body); q && decodes_rows)
        fixed.OnQuery(*q, reader->stream().flavor() == Flavor::kMariaDB);
      if (ev->pos < options.start_position && !ev->in_payload) continue;
      if (options.stop_position && ev->pos >= options.stop_position) break;
      auto* rows = std::get_if<binlog::RowsEvent>(&ev->body);
      if (const auto* g = std::get_if<binlog::MariadbGtidEvent>(&ev->body)) {
        gtid = g->GtidText();
      } else if (const auto* g = std::get_if<binlog::GtidEvent>(&ev->body)) {
        gtid = g->anonymous ? std::string() : g->GtidText();
      }
      if (options.summary) {
        ++by_type[ev->TypeName()];
        if (rows) {
          const binlog::TableMap* map = ev->table_map.get();
          std::string name = map ? EscapeInvalidUtf8(map->db) + "." + EscapeInvalidUtf8(map->table)
                                 : fmt::format("table_id {}", rows->table_id);
          decoded.clear();
          if (map) {
            const TableEntry& entry = entry_for(*ev, rows->table_id);
            Status st = binlog::DecodeRows(*rows, *map, entry.typed ? entry.schema.get() : nullptr,
                                           binlog::DecodeOptions{.partial_json_diff_without_base = true}, &decoded);
            if (!st.ok()) return st.WithContext(fmt::format("file {} event at offset {}", path, ev->pos));
          }
          rows_by_table[name] += decoded.size();
        }
        continue;
      }
      if (!options.rows && !options.no_output) {
        // EventToJson escapes invalid UTF-8 itself; `replace` only guards against a miss.
        *buf += binlog::EventToJson(*ev).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        *buf += '\n';
        if (buf->size() >= kFlushBytes) Flush(buf, out);
        continue;
      }
      if (!rows) continue;
      const binlog::TableMap* map = ev->table_map.get();
      if (!map) {
        return Status::Corruption(fmt::format("file {} at offset {}: rows event for table id {} "
                                              "without a TABLE_MAP", path, ev->pos, rows->table_id));
      }
      decoded.clear();
      const TableEntry& entry = entry_for(*ev, rows->table_id);
      Status st = binlog::DecodeRows(*rows, *map, entry.typed ? entry.schema.get() : nullptr,
                                     binlog::DecodeOptions{.partial_json_diff_without_base = true}, &decoded);
      if (!st.ok()) return st.WithContext(fmt::format("file {} event at offset {}", path, ev->pos));
      if (options.no_output) continue;
      const Op op = rows->kind == binlog::RowsKind::kWrite    ? Op::kCreate
                    : rows->kind == binlog::RowsKind::kDelete ? Op::kDelete
                                                              : Op::kUpdate;
      for (size_t i = 0; i < decoded.size(); ++i) {
        if (!batch) batch = writer->Take();
        if (batch->used == batch->changes.size()) batch->changes.emplace_back();
        RowChange& c = batch->changes[batch->used++];
        c.table = entry.schema;
        c.op = op;
        c.before.swap(decoded[i].before);
        c.after.swap(decoded[i].after);
        c.source.flavor = reader->stream().flavor();
        c.source.server_id = ev->header.server_id;
        c.source.file = ev->file;  // reuses the recycled string's capacity
        c.source.gtid = gtid;
        c.source.pos = ev->pos;
        c.source.timestamp = ev->header.timestamp;
        c.source.row = static_cast<uint32_t>(i);
        if (batch->used == kBatchRows) RETURN_IF_ERROR(writer->Send(std::move(batch)));
      }
    }
  }
  if (options.summary) {
    nlohmann::ordered_json j;
    j["events"] = by_type;
    j["rows"] = rows_by_table;
    *buf += j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    *buf += '\n';
  }
  return Status::Ok();
}

}  // namespace

Status RunDecode(const DecodeOptions& options, std::ostream& out) {
  std::string buf;
  buf.reserve(kFlushBytes + (kFlushBytes >> 2));
  std::unique_ptr<EnvelopeWriter> writer;
  if (options.rows && !options.summary && !options.no_output) writer = std::make_unique<EnvelopeWriter>(out);
  std::unique_ptr<Batch> batch;
  Status st = DecodeFiles(options, &buf, out, writer.get(), &batch);
  if (writer) {
    if (batch && batch->used > 0) {
      Status sst = writer->Send(std::move(batch));
      if (st.ok()) st = sst;
    }
    // What was decoded before an error is still printed; a writer error comes first.
    Status wst = writer->Finish(st.ok() ? Status::Ok() : Status::Cancelled("decoding stopped"));
    if (!wst.ok()) st = wst;
  }
  Flush(&buf, out);
  out.flush();
  return st;
}

}  // namespace sluice::cli
