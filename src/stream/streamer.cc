#include "stream/streamer.h"

#include <chrono>
#include <map>
#include <thread>

#include "binlog/event_stream.h"
#include "mysql/replication.h"
#include "mysql/server_probe.h"
#include "pipeline/bounded_queue.h"
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
  using SinkCall = std::function<Status(const char* what, const std::function<Status()>& call)>;
  SchemaCache(Connection& conn, const TableFilter& filter, Sink& sink, SinkCall sink_call,
              const std::map<std::string, TableSnapshotProgress>& copied)
      : conn_(conn), filter_(filter), sink_(sink), sink_call_(std::move(sink_call)) {
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
    RETURN_IF_ERROR(sink_call_("prepare table", [&] { return sink_.PrepareTable(*ptr); }));
    cache_[key] = ptr;
    return TableSchemaPtr(ptr);
  }
  void Invalidate() { cache_.clear(); }

  // The definition of a selected table by name (loaded and handed to the sink).
  Result<TableSchemaPtr> ByName(const std::string& db, const std::string& table) {
    ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(conn_, db, table));
    auto ptr = std::make_shared<const TableSchema>(std::move(loaded));
    RETURN_IF_ERROR(sink_call_("prepare table", [&] { return sink_.PrepareTable(*ptr); }));
    cache_[db + "." + table] = ptr;
    return TableSchemaPtr(ptr);
  }

 private:
  Connection& conn_;
  const TableFilter& filter_;
  Sink& sink_;
  SinkCall sink_call_;
  std::map<std::string, TableSchemaPtr> cache_;
  std::map<std::string, BinlogPosition> copied_at_;
};

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
  ropts.heartbeat_period_s = options_.heartbeat_seconds;
  ASSIGN_OR_RETURN(auto session, ReplicationSession::Start(options_.connection, ropts));
  *made_progress = true;  // connected
  if (reconnecting_) LogInfo("reconnected; streaming from {}", checkpoint_.stream_start.ToString());
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

  auto sink_call = [this](const char* what, const std::function<Status()>& call) {
    return CallSink(what, call);
  };
  SchemaCache schemas(*meta_conn, options_.filter, sink, sink_call, checkpoint_.tables);
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

  // checkpoint_ is the state the sink has committed: it moves only after a sink call
  // succeeded, so a reconnect or a retry never starts past a transaction the sink does not
  // hold. `passed` is the state after the last transaction read; it runs ahead of
  // checkpoint_ only over transactions with nothing to deliver (filtered tables, DDL), whose
  // checkpoint is saved at most once a second.
  Checkpoint passed = checkpoint_;
  bool passed_unsaved = false;
  auto last_save = Clock::now();
  auto save_if_due = [&](bool force) -> Status {
    if (!passed_unsaved) return Status::Ok();
    if (!force && Clock::now() - last_save < std::chrono::seconds(1)) return Status::Ok();
    const std::string text = passed.ToJson();
    RETURN_IF_ERROR(CallSink("save checkpoint", [&] { return sink.SaveCheckpoint(text); }));
    checkpoint_ = passed;
    passed_unsaved = false;
    last_save = Clock::now();
    return Status::Ok();
  };
  auto caught_up = [&] {
    return !options_.target.empty() && !assembler.in_transaction() &&
           ComparePositions(assembler.read_position(), options_.target) >= 0;
  };

  auto handle = [&](const binlog::Event& ev) -> Status {
    current_event = BinlogPosition{ev.file, ev.pos};
    ASSIGN_OR_RETURN(auto committed, assembler.Feed(ev));
    if (!committed) return Status::Ok();
    Checkpoint next = passed;
    next.stream_start = committed->end.position;
    next.gtid = committed->end.gtid;
    if (committed->is_ddl) {
      schemas.Invalidate();
      auto truncated = ParseTruncate(committed->ddl_schema, committed->ddl_query);
      if (truncated && TableSelected(options_.filter, truncated->first, truncated->second)) {
        ASSIGN_OR_RETURN(TableSchemaPtr schema, schemas.ByName(truncated->first, truncated->second));
        const std::string text = next.ToJson();
        RETURN_IF_ERROR(CallSink("truncate table", [&] { return sink.ResetTable(*schema, text); }));
        checkpoint_ = passed = std::move(next);
        passed_unsaved = false;
        return Status::Ok();
      }
    }
    if (!committed->unknown_xa.empty()) {
      LogWarning("XA COMMIT {} at {}:{}: its XA PREPARE came before the start point, so its rows "
                 "cannot be delivered", committed->unknown_xa, ev.file, ev.pos);
    }
    if (committed->changes.empty()) {
      passed = std::move(next);
      passed_unsaved = true;
      return save_if_due(false);
    }
    Transaction txn;
    txn.changes = std::move(committed->changes);
    txn.checkpoint = next.ToJson();
    RETURN_IF_ERROR(CallSink("apply", [&] { return sink.Apply(txn); }));
    checkpoint_ = passed = std::move(next);
    passed_unsaved = false;
    ++applied_transactions_;
    applied_rows_ += txn.changes.size();
    if (options_.on_applied) options_.on_applied(checkpoint_, txn.changes.size());
    return Status::Ok();
  };

  Status result;
  while (true) {
    if (Stopping(options_.stop)) break;
    if (caught_up()) break;
    Status qst;
    bool closed = false;
    auto raw = queue.Pop(std::chrono::milliseconds(200), &qst, &closed);
    if (!raw) {
      if (closed) {
        result = qst.ok() ? Status::Unavailable("the server ended the binlog stream") : qst;
        break;
      }
      Status st = save_if_due(false);
      if (!st.ok()) { result = st; break; }
      continue;
    }
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
  if (result.code() == StatusCode::kCancelled && Stopping(options_.stop)) result = Status::Ok();
  // After a definite error nothing more is written; otherwise record the position reached.
  if (!result.ok() && result.code() != StatusCode::kUnavailable) return result;
  Status saved = save_if_due(true);
  if (!result.ok()) return result;
  return saved;
}

}  // namespace sluice
