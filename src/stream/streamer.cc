#include "stream/streamer.h"

#include <chrono>
#include <map>
#include <thread>
#include <unordered_map>

#include "binlog/event_stream.h"
#include "mysql/key_literal.h"
#include "mysql/replication.h"
#include "mysql/server_probe.h"
#include "pipeline/bounded_queue.h"
#include "pipeline/handoff_rule.h"
#include "stream/schema_check.h"
#include "stream/transaction_assembler.h"
#include "util/log.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

bool Stopping(const std::atomic<bool>* stop) { return stop && stop->load(); }

// Table definitions by "db.table", loaded from information_schema when a table is first
// seen or after DDL, and handed to the sink so it can create the table.
class SchemaCache {
 public:
  SchemaCache(Connection& conn, const TableFilter& filter,
              const std::map<std::string, TableSnapshotProgress>& copied)
      : conn_(conn), filter_(filter) {
    for (const auto& [name, progress] : copied)
      if (!progress.copied_at.empty()) copied_at_[name] = progress.copied_at;
  }

  // `event` is where the rows event starts: rows of a table whose snapshot copy was read
  // at a later point are already in the sink, and are skipped (null schema).
  Result<TableSchemaPtr> Resolve(const binlog::TableMap& map, const BinlogPosition& event) {
    if (!TableSelected(filter_, map.db, map.table)) return TableSchemaPtr();
    std::string key = map.db + "." + map.table;
    if (!copied_at_.empty()) {
      auto c = copied_at_.find(key);
      if (c != copied_at_.end()) {
        if (ComparePositions(event, c->second) < 0) return TableSchemaPtr();
        copied_at_.erase(c);  // the stream has passed it for good
      }
    }
    auto it = cache_.find(key);
    if (it != cache_.end() && CheckRowLayout(map, *it->second, true).ok()) return it->second;
    ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(conn_, map.db, map.table));
    RETURN_IF_ERROR(CheckRowLayout(map, loaded, /*allow_appended_columns=*/true));
    auto ptr = std::make_shared<const TableSchema>(std::move(loaded));
    cache_[key] = ptr;  // the sink prepares the table when it first meets its rows
    return TableSchemaPtr(ptr);
  }
  void Invalidate() { cache_.clear(); }

  // The definition of a selected table by name (loaded and handed to the sink).
  Result<TableSchemaPtr> ByName(const std::string& db, const std::string& table) {
    ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(conn_, db, table));
    auto ptr = std::make_shared<const TableSchema>(std::move(loaded));
    cache_[db + "." + table] = ptr;
    return TableSchemaPtr(ptr);
  }

 private:
  Connection& conn_;
  const TableFilter& filter_;
  std::map<std::string, TableSchemaPtr> cache_;
  std::map<std::string, BinlogPosition> copied_at_;
};

// The per-key snapshot hand-off (pipeline/handoff_rule.h) for tables copied by ranges read
// at different points; the server locates keys among the range ends.
HandoffRule SnapshotHandoff(const Checkpoint& ckpt, Connection& conn) {
  std::map<std::string, std::vector<KeyPointPiece>> pieces;
  for (const auto& [name, progress] : ckpt.tables) pieces[name] = HandoffPieces(progress);
  return HandoffRule(pieces, [&conn](const TableSchema& t, const std::vector<std::string>& key,
                                     const std::vector<std::vector<std::string>>& ends) {
    return LocateKey(conn, t, key, ends);
  });
}

struct RawEvent {
  std::string bytes;
};

}  // namespace

Status Streamer::CallSink(const char* what, const std::function<Status()>& call) {
  auto backoff = std::chrono::milliseconds(200);
  auto first_failure = Clock::now();
  for (int attempt = 1;; ++attempt) {
    Status st = call();
    if (st.ok()) {
      if (attempt > 1) {
        LogInfo("sink: {} succeeded after {} attempts ({:.1f} s)", what, attempt,
                std::chrono::duration<double>(Clock::now() - first_failure).count());
      }
      return st;
    }
    // Definite: stop the run (the message names the sink path and the reason).
    if (st.code() != StatusCode::kUnavailable) return st.WithContext(fmt::format("sink: {}", what));
    if (Stopping(options_.stop)) return Status::Cancelled("stop requested while the sink was failing");
    if (attempt == 1) first_failure = Clock::now();
    LogWarning("sink: {} failed (attempt {}): {}; retrying the same transaction in {} ms "
               "(the stream position stays at {})",
               what, attempt, st.message(), backoff.count(), checkpoint_.stream_start.ToString());
    // Sleep in small steps so that a stop request is seen promptly.
    auto until = Clock::now() + backoff;
    while (Clock::now() < until && !Stopping(options_.stop))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

Status Streamer::Run(const Checkpoint& start, Sink& sink) {
  checkpoint_ = start;
  if (!options_.target.empty() && ComparePositions(checkpoint_.stream_start, options_.target) >= 0) {
    return CallSink("save checkpoint", [&] { return sink.SaveCheckpoint(checkpoint_.ToJson()); });
  }
  auto last_success = Clock::now();
  auto backoff = std::chrono::milliseconds(250);
  for (int attempt = 1;; ++attempt) {
    bool progress = false;
    Status st = RunOnce(sink, &progress);
    if (st.code() == StatusCode::kCancelled && Stopping(options_.stop)) return Status::Ok();
    if (st.ok()) return st;
    // Only source errors are kUnavailable here: CallSink retries transient sink errors in
    // place and turns the others into definite ones.
    if (st.code() != StatusCode::kUnavailable) return st;
    if (progress) {
      last_success = Clock::now();
      backoff = std::chrono::milliseconds(250);
      attempt = 1;
    }
    if (Stopping(options_.stop)) return Status::Ok();  // checkpoint_ is what the sink holds
    auto down_for = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - last_success);
    if (options_.reconnect_give_up_seconds > 0 &&
        down_for.count() >= options_.reconnect_give_up_seconds) {
      return st.WithContext(fmt::format("gave up reconnecting after {} s (source.reconnect_timeout_seconds)",
                                        down_for.count()));
    }
    LogWarning("{}; reconnecting from {} in {} ms (attempt {}, down for {} s)", st.ToString(),
               checkpoint_.stream_start.ToString(), backoff.count(), attempt, down_for.count());
    auto until = Clock::now() + backoff;
    while (Clock::now() < until && !Stopping(options_.stop))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(options_.reconnect_max_backoff_ms));
  }
}

Status Streamer::RunOnce(Sink& sink, bool* made_progress) {
  ASSIGN_OR_RETURN(auto meta_conn, Connection::Connect(options_.connection));
  ReplicationOptions ropts;
  ropts.server_id = options_.replica_server_id;
  ropts.start = checkpoint_.stream_start;
  if (options_.resume_by_gtid && !checkpoint_.gtid.empty()) ropts.gtid = checkpoint_.gtid;
  ropts.heartbeat_period_s = options_.heartbeat_seconds;
  ASSIGN_OR_RETURN(auto session, ReplicationSession::Start(options_.connection, ropts));
  *made_progress = true;  // connected
  if (reconnecting_)
    LogInfo("reconnected; streaming from {}",
            ropts.gtid.empty() ? checkpoint_.stream_start.ToString() : "GTID " + ropts.gtid);
  reconnecting_ = true;

  const Flavor flavor = session->flavor();
  if (checkpoint_.flavor == Flavor::kUnknown) checkpoint_.flavor = flavor;

  BoundedQueue<RawEvent> queue(options_.queue_max_events, options_.queue_max_bytes);
  std::atomic<bool> reader_stop{false};
  std::thread reader([&] {
    while (!reader_stop.load()) {
      auto ev = session->Fetch();
      if (!ev.ok()) {
        queue.Close(ev.status());
        return;
      }
      if (ev->empty()) {
        queue.Close(Status::Ok());
        return;
      }
      RawEvent raw{std::string(reinterpret_cast<const char*>(ev->data()), ev->size())};
      size_t n = raw.bytes.size();
      if (!queue.Push(std::move(raw), n).ok()) return;
    }
  });
  auto join_reader = [&] {
    reader_stop = true;
    queue.Close(Status::Cancelled("stream finished"));
    session->Cancel();  // a Fetch blocked on a silent server returns now
    reader.join();
  };

  SchemaCache schemas(*meta_conn, options_.filter, checkpoint_.tables);
  HandoffRule handoff = SnapshotHandoff(checkpoint_, *meta_conn);
  BinlogPosition current_event;
  binlog::EventStream stream;
  stream.SetPosition(checkpoint_.stream_start.file, checkpoint_.stream_start.pos);
  TransactionAssembler assembler(
      flavor, [&](const binlog::TableMap& m) { return schemas.Resolve(m, current_event); },
      StreamPoint{checkpoint_.stream_start, checkpoint_.gtid});

  assembler.set_statement_filter([this](std::string_view schema, std::string_view query) {
    for (const auto& pattern : options_.filter.include) {
      std::string_view db = std::string_view(pattern).substr(0, pattern.find('.'));
      if (GlobMatch(db, schema)) return true;
      bool literal = db.find_first_of("*?") == std::string_view::npos;
      if (literal && (query.find(std::string(db) + ".") != std::string_view::npos ||
                      query.find("`" + std::string(db) + "`") != std::string_view::npos))
        return true;
    }
    return false;
  });

  // The sink writer thread: whole transactions (and checkpoint-only advances) arrive in a
  // queue bounded in bytes, and are applied in groups, one sink transaction per group.
  //
  // checkpoint_ is the state the sink has committed: the writer moves it only after a sink
  // call succeeded, so a reconnect or a retry never starts past a transaction the sink does
  // not hold. `passed` (decoding thread) is the state after the last transaction read.
  BoundedQueue<SinkItem> to_sink(1u << 20, std::max<size_t>(options_.group_max_bytes, 1));
  Status writer_status;
  std::atomic<bool> writer_failed{false};
  std::thread writer([&] {
    writer_status = WriteGroups(sink, to_sink);
    if (!writer_status.ok()) {
      writer_failed = true;
      to_sink.Close(writer_status);
    }
  });
  bool writer_joined = false;
  auto join_writer = [&] {
    if (writer_joined) return;
    to_sink.Close(Status::Ok());  // the writer drains what is queued, then ends
    writer.join();
    writer_joined = true;
  };

  Checkpoint passed = checkpoint_;
  size_t txn_bytes = 0;  // binlog bytes read since the last transaction boundary
  auto caught_up = [&] {
    return !options_.target.empty() && !assembler.in_transaction() &&
           ComparePositions(assembler.read_position(), options_.target) >= 0;
  };
  auto send = [&](SinkItem item) -> Status {
    size_t bytes = std::max<size_t>(txn_bytes, 64);
    txn_bytes = 0;
    Status st = to_sink.Push(std::move(item), bytes);
    if (!st.ok()) return Status::Cancelled("the sink writer stopped");  // see writer_status
    return st;
  };

  auto handle = [&](const binlog::Event& ev) -> Status {
    current_event = BinlogPosition{ev.file, ev.pos};
    ASSIGN_OR_RETURN(auto committed, assembler.Feed(ev));
    if (!committed) return Status::Ok();
    Checkpoint next = passed;
    next.stream_start = committed->end.position;
    next.gtid = committed->end.gtid;
    SinkItem item;
    item.after = next;
    if (committed->is_ddl) {
      schemas.Invalidate();
      auto truncated = ParseTruncate(committed->ddl_schema, committed->ddl_query);
      if (truncated && TableSelected(options_.filter, truncated->first, truncated->second)) {
        ASSIGN_OR_RETURN(TableSchemaPtr schema, schemas.ByName(truncated->first, truncated->second));
        item.reset = std::move(schema);
      }
    }
    if (!committed->unknown_xa.empty()) {
      LogWarning("XA COMMIT {} at {}:{}: its XA PREPARE came before the start point, so its rows "
                 "cannot be delivered", committed->unknown_xa, ev.file, ev.pos);
    }
    RETURN_IF_ERROR(handoff.Filter(&committed->changes));
    item.txn.changes = std::move(committed->changes);
    // Each transaction carries its own checkpoint (formatted here, off the sink thread):
    // sinks that group by themselves (NATS, Kafka) checkpoint inside a group.
    if (!item.txn.changes.empty()) item.txn.checkpoint = next.ToJson();
    passed = std::move(next);
    return send(std::move(item));
  };

  Status result;
  while (true) {
    if (Stopping(options_.stop) || writer_failed.load()) break;
    if (caught_up()) break;
    Status qst;
    bool closed = false;
    auto raw = queue.Pop(std::chrono::milliseconds(200), &qst, &closed);
    if (!raw) {
      if (closed) {
        result = qst.ok() ? Status::Unavailable("the server ended the binlog stream") : qst;
        break;
      }
      continue;
    }
    txn_bytes += raw->bytes.size();
    auto span = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw->bytes.data()),
                                         raw->bytes.size());
    auto ev = stream.Next(span);
    if (!ev.ok()) { result = ev.status(); break; }
    Status st = handle(*ev);
    while (st.ok() && stream.HasPendingInner()) {
      auto inner = stream.NextInner();
      if (!inner.ok()) { st = inner.status(); break; }
      st = handle(*inner);
    }
    if (!st.ok()) { result = st; break; }
  }
  join_reader();
  join_writer();  // every whole transaction read so far reaches the sink (or a sink error)
  if (!writer_status.ok()) {
    if (writer_status.code() == StatusCode::kCancelled && Stopping(options_.stop)) return Status::Ok();
    return writer_status;  // definite sink error
  }
  if (result.code() == StatusCode::kCancelled && Stopping(options_.stop)) result = Status::Ok();
  return result;
}

Status Streamer::WriteGroups(Sink& sink, BoundedQueue<SinkItem>& queue) {
  using std::chrono::milliseconds;
  std::vector<Transaction> group;
  std::optional<SinkItem> held;   // a TRUNCATE waits until the group before it is applied
  bool unsaved = false;           // checkpoint_ holds advances the sink has not stored yet
  auto last_save = Clock::now();
  uint64_t group_txns = 0, group_rows = 0;
  uint32_t group_source_ts = 0;
  // Tables handed to sink.PrepareTable (a new definition after DDL is a new pointer); the
  // pointers are held so that they are never reused.
  std::unordered_map<const TableSchema*, TableSchemaPtr> prepared;
  auto prepare = [&](const TableSchemaPtr& t) -> Status {
    if (!t || prepared.count(t.get())) return Status::Ok();
    RETURN_IF_ERROR(CallSink("prepare table", [&] { return sink.PrepareTable(*t); }));
    prepared.emplace(t.get(), t);
    return Status::Ok();
  };
  auto save_pending = [&](bool force) -> Status {
    if (!unsaved || (!force && Clock::now() - last_save < std::chrono::seconds(1))) return Status::Ok();
    const std::string text = checkpoint_.ToJson();
    RETURN_IF_ERROR(CallSink("save checkpoint", [&] { return sink.SaveCheckpoint(text); }));
    unsaved = false;
    last_save = Clock::now();
    return Status::Ok();
  };
  while (true) {
    std::optional<SinkItem> first;
    if (held) {
      first = std::move(held);
      held.reset();
    } else {
      Status st;
      bool closed = false;
      first = queue.Pop(milliseconds(200), &st, &closed);
      if (!first) {
        if (closed) {
          RETURN_IF_ERROR(st);
          return save_pending(true);
        }
        RETURN_IF_ERROR(save_pending(false));
        continue;
      }
    }
    if (first->reset) {
      const std::string text = first->after.ToJson();
      TableSchemaPtr schema = first->reset;
      RETURN_IF_ERROR(prepare(schema));
      RETURN_IF_ERROR(CallSink("truncate table", [&] { return sink.ResetTable(*schema, text); }));
      checkpoint_ = std::move(first->after);
      unsaved = false;
      continue;
    }
    // Group: this item and whatever is ready behind it, within the byte and time budgets.
    // Each item is a whole source transaction, so a group never ends inside one.
    group.clear();
    group_txns = group_rows = 0;
    size_t bytes = 0;
    const auto started = Clock::now();
    Checkpoint last;
    BinlogPosition group_last_data_pos;
    auto add = [&](SinkItem& item) {
      for (const auto& c : item.txn.changes) bytes += 64 + c.after.size() * 16 + c.before.size() * 16;
      if (!item.txn.changes.empty()) {
        group_last_data_pos = item.after.stream_start;
        group_rows += item.txn.changes.size();
        ++group_txns;
        group_source_ts = std::max(group_source_ts, item.txn.changes.back().source.timestamp);
        group.push_back(std::move(item.txn));
      }
    };
    add(*first);
    last = std::move(first->after);
    while (bytes < options_.group_max_bytes &&
           Clock::now() - started < milliseconds(options_.group_max_ms)) {
      Status st;
      bool closed = false;
      auto next = queue.Pop(milliseconds(0), &st, &closed);
      if (!next) break;  // nothing more ready: commit now (latency first when idle)
      if (next->reset) {
        held = std::move(next);
        break;
      }
      add(*next);
      last = std::move(next->after);
    }
    if (group.empty()) {
      checkpoint_ = std::move(last);  // nothing to deliver (filtered tables, DDL)
      unsaved = true;
      RETURN_IF_ERROR(save_pending(false));
      continue;
    }
    const TableSchema* seen = nullptr;
    for (const Transaction& t : group)
      for (const RowChange& c : t.changes)
        if (c.table.get() != seen) {
          RETURN_IF_ERROR(prepare(c.table));
          seen = c.table.get();
        }
    // The group ends with the state after its last item (it may be a position-only one).
    if (ComparePositions(last.stream_start, group_last_data_pos) != 0) group.back().checkpoint = last.ToJson();
    RETURN_IF_ERROR(CallSink("apply", [&] { return sink.ApplyGroup(group); }));
    checkpoint_ = std::move(last);
    unsaved = false;
    last_save = Clock::now();
    applied_transactions_ += group_txns;
    applied_rows_ += group_rows;
    ++applied_groups_;
    last_source_ts_ = group_source_ts;
    if (options_.on_applied) options_.on_applied(checkpoint_, group_rows);
  }
}

}  // namespace sluice
