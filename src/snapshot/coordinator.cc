// The snapshot coordinator: planning, parallel workers, retries, per-range points, progress.
// Why the per-range points make the hand-off exact: pipeline/handoff_rule.h. Why one read
// transaction is exact at its point: snapshot.cc.
#include "snapshot/coordinator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <sys/mman.h>

#include "mysql/key_literal.h"
#include "mysql/server_probe.h"
#include "pipeline/bounded_queue.h"
#include "schema/text_value.h"
#include "sink/sink_retry.h"
#include "snapshot/snapshot.h"
#include "util/log.h"
#include "util/metrics.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

bool Stopping(const std::atomic<bool>* stop) { return stop && stop->load(); }

// One unit of work: a range of a keyed table, or the single pass over a keyless table.
struct Job {
  size_t table = 0;  // index into the coordinator's table list
  int range = -1;    // index into the table's ranges; -1: keyless single pass
};

// What a worker hands to the coordinator thread.
struct Chunk {
  size_t table = 0;
  int range = -1;
  // The rows as snapshot read records (op r), preformatted for the sink when it can be;
  // the coordinator thread adds the checkpoint.
  Transaction txn;
  size_t rows = 0;         // row count (txn.changes is emptied once preformatted)
  KeyTexts last_key;       // after the last row (keyed tables); empty if no rows
  SnapshotPoint point;     // the read transaction's point
  bool range_done = false; // the job is complete after these rows
  BinlogPosition read_end; // range_done: the server's position after the job's last read
  bool restart = false;    // keyless: the pass restarts at `point` (no rows)
};

struct TableState {
  TableName name;
  TableSchemaPtr schema;
  TableSnapshotProgress* progress = nullptr;
  uint64_t rows_at_start = 0;
};

// A sink call during the snapshot: a transient sink error is waited out and the same chunk
// applied again, as the stream does (sink/sink_retry.h); the workers wait on the bounded queue
// meanwhile, so the chunk is neither lost nor applied twice.
Status CallSinkRetrying(const std::string& what, const std::atomic<bool>* stop, const std::function<Status()>& call) {
  return CallSinkRetrying(what, "the same chunk", "", stop, call);
}

// Why `planned` no longer describes the table as `now` does (the first difference that
// matters to the copy: a column's name, type or collation, or the primary key); empty when it
// still does.
std::string DefinitionChange(const TableSchema& planned, const TableSchema& now) {
  // The key by its columns' names: a column added before it moves its positions only (the
  // column comparison below names that).
  auto key_names = [](const TableSchema& t) {
    std::vector<std::string> names;
    for (size_t i : t.primary_key) names.push_back(i < t.columns.size() ? t.columns[i].name : "?");
    return names;
  };
  if (key_names(now) != key_names(planned))
    return fmt::format("its primary key changed from ({}) to ({})", fmt::join(key_names(planned), ", "),
                       fmt::join(key_names(now), ", "));
  for (size_t i = 0; i < std::min(now.columns.size(), planned.columns.size()); ++i) {
    const ColumnDesc& a = planned.columns[i];
    const ColumnDesc& b = now.columns[i];
    if (a.name != b.name || a.column_type != b.column_type || a.collation != b.collation)
      return fmt::format("column {} was `{}` {}{}{}, is now `{}` {}{}{}", i + 1, a.name, a.column_type,
                         a.collation.empty() ? "" : " COLLATE ", a.collation, b.name, b.column_type,
                         b.collation.empty() ? "" : " COLLATE ", b.collation);
  }
  if (now.columns.size() != planned.columns.size())
    return fmt::format("it had {} columns, has {} now", planned.columns.size(), now.columns.size());
  return "";
}

// The definition as the worker's read transaction meets it (information_schema is not
// versioned: this is the table's current definition, which a read of it must match).
Result<std::string> CheckColumns(Connection& conn, const TableSchema& planned) {
  ASSIGN_OR_RETURN(TableSchema now, LoadTableSchema(conn, planned.db, planned.table));
  return DefinitionChange(planned, now);
}

// ER_TABLE_DEF_CHANGED (1412): the table was altered after the read transaction's view was
// taken; a new transaction sees the new definition, which CheckColumns then compares.
bool TableDefinitionChanged(const Status& st) {
  return st.message().find("[1412]") != std::string::npos;
}

// The bounds of a range must be strictly increasing under the key's collation; the server
// says whether they are (planning read them from the server in key order, so this fails only
// when the key's order changed since, e.g. a stored plan resumed under another collation).
Result<bool> BoundsIncreasing(Connection& conn, const TableSchema& schema, const RangeProgress& r) {
  if (r.lower.empty() || r.upper.empty()) return true;
  ASSIGN_OR_RETURN(std::string lo, KeyTuple(conn, schema, r.lower, true));
  ASSIGN_OR_RETURN(std::string hi, KeyTuple(conn, schema, r.upper, true));
  ASSIGN_OR_RETURN(QueryResult q, conn.Query("SELECT " + lo + " < " + hi));
  return q.rows.size() == 1 && q.rows[0].size() == 1 && q.rows[0][0] == "1";
}

std::string Joined(const KeyTexts& key) {
  std::string out;
  for (const std::string& k : key) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// Tables to plan again: a worker found the definition changed, or a range's bounds out of
// order. Shared by the workers (which skip the table's jobs from then on) and the coordinator
// thread (which drops the table's chunks, and re-plans it once the workers are done).
class ReplanRequests {
 public:
  void Add(size_t table, std::string why) {
    std::lock_guard<std::mutex> lock(mu_);
    tables_.emplace(table, std::move(why));
  }
  bool Has(size_t table) const {
    std::lock_guard<std::mutex> lock(mu_);
    return tables_.count(table) > 0;
  }
  std::map<size_t, std::string> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(tables_, {});
  }

 private:
  mutable std::mutex mu_;
  std::map<size_t, std::string> tables_;  // table index -> why
};

// Output buffers of preformatted chunks, handed back by the coordinator thread once written
// and taken again by the workers, so a multi-MiB buffer keeps its pages instead of being
// allocated, faulted in and zeroed for every fetch. Holds at most kKeep buffers: more than
// the queue, a group and the workers' own hold at once, so in a steady state none is freed.
class BufferPool {
 public:
  // Makes `b` hold at least `want` bytes without growing, its pages mapped at once: a fetch's
  // ~5 MB of lines would otherwise fault in ~1,200 pages one at a time, at ~10 us each on this
  // project's VMs (0.4 s of a 2 M-row snapshot: BENCHMARKS.md, "Step 6").
  // MADV_POPULATE_WRITE (Linux 5.14) maps them in one call, and the whole huge pages inside
  // are offered to transparent huge pages (madvise mode, Debian's default). Both are advice:
  // where the kernel refuses, pages fault in as before.
  static void Reserve(std::string& b, size_t want) {
    if (want == 0 || b.capacity() >= want) return;
    b.reserve(want + want / 16);
    constexpr uintptr_t kHuge = uintptr_t{2} << 20, kPage = 4096;
    const auto at = reinterpret_cast<uintptr_t>(b.data());
    const uintptr_t end = at + b.capacity();
    const uintptr_t huge_begin = (at + kHuge - 1) & ~(kHuge - 1), huge_end = end & ~(kHuge - 1);
    if (huge_end > huge_begin)
      (void)::madvise(reinterpret_cast<void*>(huge_begin), huge_end - huge_begin, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
    const uintptr_t begin = (at + kPage - 1) & ~(kPage - 1), page_end = end & ~(kPage - 1);
    if (page_end > begin) (void)::madvise(reinterpret_cast<void*>(begin), page_end - begin, MADV_POPULATE_WRITE);
#endif
  }
  std::string Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return {};
    std::string s = std::move(free_.back());
    free_.pop_back();
    return s;
  }
  void Give(std::string s) {
    s.clear();
    if (s.capacity() == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kKeep) free_.push_back(std::move(s));
  }

 private:
  static constexpr size_t kKeep = 64;
  std::mutex mu_;
  std::vector<std::string> free_;
};

class Worker {
 public:
  Worker(const SnapshotRunOptions& options, const SnapshotOptions& snap_options,
         const std::vector<TableState>& tables, std::unique_ptr<Snapshot> snap,
         BoundedQueue<Chunk>& queue, std::atomic<bool>& abort,
         std::unique_ptr<Preformatter> preformatter, ReplanRequests& replan, BufferPool& pool)
      : options_(options), snap_options_(snap_options), tables_(tables), snap_(std::move(snap)),
        queue_(queue), abort_(abort), preformatter_(std::move(preformatter)), replan_(replan), pool_(pool) {}

  void Add(Job j) { jobs_.push_back(j); }
  // consistency = "watermark": read transactions come from `wm` (signal row `slot`); `window`
  // holds the keys to leave out of what the first one reads.
  void UseWatermarks(WatermarkReader* wm, uint32_t slot, std::shared_ptr<const WindowKeys> window) {
    wm_ = wm;
    slot_ = slot;
    window_ = std::move(window);
  }
  bool has_jobs() const { return !jobs_.empty(); }

  // Runs every job; the first definite error closes the queue with it.
  void Run() {
    Status st = RunJobs();
    if (!st.ok() && st.code() != StatusCode::kCancelled) {
      abort_ = true;
      queue_.Close(st);
    }
    if (snap_) (void)snap_->Finish();
    if (dropped_ > 0)
      LogInfo("snapshot: {} row(s) changed inside watermark windows were left to the stream", dropped_);
  }

 private:
  bool Stopped() const { return abort_.load() || Stopping(options_.stop); }

  Status RunJobs() {
    std::map<size_t, bool> checked;  // tables whose columns this worker has verified
    std::optional<size_t> last_table;
    for (const Job& job : jobs_) {
      if (replan_.Has(job.table)) continue;  // copied again after this pass
      const TableState& t = tables_[job.table];
      // A read transaction holds a metadata lock on every table it has read until it ends, so
      // a DDL on a table copied long before (and every write queued behind that DDL) waited
      // for the whole snapshot (a new user's probe: an INSERT blocked 8 s behind an ALTER).
      // Where a new transaction gets its own point without a lock (MariaDB), a worker moving
      // on to another table ends its transaction and reads that table in a new one.
      if (snap_ && last_table && *last_table != job.table && snap_->RenewableWithoutLock()) {
        auto renewed = Snapshot::Renew(std::move(snap_));
        if (renewed.ok()) snap_ = std::move(renewed).value();  // else a new connection below
        checked.clear();
      }
      last_table = job.table;
      KeyTexts after;
      if (job.range >= 0) after = t.progress->ranges[job.range].last_key;
      auto last_progress = Clock::now();
      auto backoff = std::chrono::milliseconds(100);
      auto last_failure = Clock::now();
      bool restart_keyless = false;
      bool bounds_checked = false;
      while (true) {
        if (Stopped()) return Status::Cancelled("stopped");
        Status st;
        if (!snap_) {
          auto s = OpenRead();
          if (s.ok()) {
            snap_ = std::move(s).value();
            LogInfo("snapshot: worker reconnected; reading at {}", snap_->point().position.ToString());
            metrics::Registry::Global()
                .Counter("sluice_reconnects_total", "reconnects to the source after a lost connection",
                         {{"component", "snapshot"}})
                .Add(1);
            checked.clear();
          } else {
            st = s.status();
          }
        }
        if (st.ok() && !checked[job.table]) {
          // The table is opened first: the shared metadata lock this transaction then holds to
          // its end keeps any later ALTER out, and an ALTER already waiting for another
          // session's lock goes first. Checked before that, the columns matched, and an
          // instant ALTER (a rename, a swap of two names) landed between the check and the
          // first fetch: the copy read the new columns at a point before it, and the stream
          // applied the ALTER again (a new user's probe: every row's two columns swapped).
          st = snap_conn()
                   .Query("SELECT 1 FROM " + QuoteIdentifier(t.schema->db) + "." + QuoteIdentifier(t.schema->table) +
                          " LIMIT 1")
                   .status();
        }
        if (st.ok() && !checked[job.table]) {
          auto change = CheckColumns(snap_conn(), *t.schema);
          if (change.ok() && !change->empty()) {
            replan_.Add(job.table, "its definition changed since it was planned: " + *change);
            break;
          }
          st = change.status();
          if (st.ok()) checked[job.table] = true;
        }
        if (st.ok() && job.range >= 0 && !bounds_checked) {
          auto increasing = BoundsIncreasing(snap_conn(), *t.schema, t.progress->ranges[job.range]);
          if (increasing.ok() && !*increasing) {
            const RangeProgress& r = t.progress->ranges[job.range];
            replan_.Add(job.table, fmt::format("the bounds of its range {} ({} .. {}) are not increasing "
                                               "under the key's collation",
                                               job.range + 1, Joined(r.lower), Joined(r.upper)));
            break;
          }
          st = increasing.status();
          if (st.ok()) bounds_checked = true;
        }
        if (st.ok() && job.range < 0 && window_ && window_->Touches(t.name.QualifiedName()))
          // Rows without a key cannot be told apart from the window's changes: read the
          // table in a new transaction, whose window is another few milliseconds.
          st = Status::Unavailable(fmt::format("{} has no primary key and changed inside the watermark window",
                                               t.name.QualifiedName()));
        if (st.ok() && restart_keyless) {
          Chunk c;
          c.table = job.table;
          c.restart = true;
          c.point = snap_->point();
          st = queue_.Push(std::move(c), 64);
          if (st.ok()) restart_keyless = false;
        }
        if (st.ok()) st = ReadJob(job, t, &after, &last_progress);
        if (st.ok()) break;
        if (replan_.Has(job.table)) break;  // another worker found it changed
        // The table was altered after this transaction's view: a new transaction reads it,
        // after checking its columns again (a change re-plans it; none: reading continues).
        if (TableDefinitionChanged(st)) st = Status::Unavailable(st.message());
        if (st.code() != StatusCode::kUnavailable) return st;
        if (last_progress > last_failure) backoff = std::chrono::milliseconds(100);  // it moved on
        last_failure = Clock::now();
        auto idle = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - last_progress);
        if (idle.count() >= options_.retry_give_up_seconds)
          return st.WithContext(fmt::format("snapshot of {}: gave up retrying after {} s",
                                            t.name.QualifiedName(), idle.count()));
        LogWarning("snapshot of {}: {}; retrying in a new read transaction in {} ms",
                   t.name.QualifiedName(), st.ToString(), backoff.count());
        snap_.reset();
        if (job.range < 0) restart_keyless = true;
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(3000));
      }
    }
    return Status::Ok();
  }

  Connection& snap_conn() { return snap_->connection(); }

  Result<std::unique_ptr<Snapshot>> OpenRead() {
    if (wm_ == nullptr) return Snapshot::Begin(options_.connection, snap_options_);
    ASSIGN_OR_RETURN(WatermarkedRead r, wm_->Begin(slot_));
    window_ = std::move(r.window);
    return std::move(r.snapshot);
  }

  Status ReadJob(const Job& job, const TableState& t, KeyTexts* after, Clock::time_point* last_progress) {
    static const KeyTexts kNone;
    const RangeProgress* r = job.range >= 0 ? &t.progress->ranges[job.range] : nullptr;
    const SnapshotPoint point = snap_->point();
    const auto source = [&] {
      SourceInfo src;
      src.flavor = point.flavor;
      src.server_id = options_.source_server_id;
      src.file = point.position.file;
      src.pos = point.position.pos;
      src.gtid = point.gtid;
      src.timestamp = static_cast<uint32_t>(std::time(nullptr));
      src.snapshot = true;
      return src;
    };
    // The marker that follows a range's last chunk.
    const auto push_range_done = [&]() -> Status {
      Chunk done;
      done.table = job.table;
      done.range = job.range;
      done.point = point;
      done.range_done = true;
      // After the job's last read (checkpoint.h read_until). A failure is transient like a
      // failed read: the job is retried after its last key, which reads nothing.
      ASSIGN_OR_RETURN(done.read_end, ReadBinlogPosition(snap_->connection()));
      // No rows: with a preformatting sink, no lines either. Without them the marker would
      // make its group the sink's general case, and JSON lines copied every chunk of that
      // group (up to 16 x ~5 MB) into its own buffer instead of writing them in place.
      done.txn.is_snapshot = true;
      if (preformatter_) done.txn.preformatted.emplace();
      return queue_.Push(std::move(done), 64);
    };
    // A table whose rows this transaction's watermark window changed is read as Rows, which
    // DropWindowRows filters (snapshot/watermark.h).
    const bool filtered = window_ && window_->keys() > 0 && window_->Touches(t.name.QualifiedName());
    std::unique_ptr<ReadTextFormatter> text =
        preformatter_ && !filtered ? preformatter_->NewReadTextFormatter(t.schema) : nullptr;
    if (text) {
      // The sink formats rows straight from the connector's buffer (JSON lines): no Row, no
      // Value per cell; each fetch's output goes to the coordinator in a buffer the pool
      // recycles, so its pages stay mapped (a fresh multi-MiB buffer per fetch cost page
      // faults and zeroing: BENCHMARKS.md).
      const auto take = [&] {
        std::string b = pool_.Take();
        BufferPool::Reserve(b, want_);
        return b;
      };
      std::string out = take();
      bool begun = false;
      RETURN_IF_ERROR(snap_->ReadRangeCells(
          *t.schema, r ? *after : kNone, r ? r->lower : kNone, r ? r->upper : kNone, options_.fetch_rows,
          [&](const std::vector<TextCellView>& cells) -> Status {
            if (!begun) {
              text->Begin(source());
              begun = true;
            }
            return text->Append(cells, &out);
          },
          [&](size_t rows, const std::vector<std::string>& last_key) -> Status {
            if (Stopped()) return Status::Cancelled("stopped");
            if (replan_.Has(job.table)) return Status::Cancelled("the table is planned again");
            Chunk c;
            c.table = job.table;
            c.range = job.range;
            c.txn.is_snapshot = true;
            c.rows = rows;
            // The table of the rows, for a sink that needs it (SQLite's encoded reads).
            if (rows > 0) c.txn.counted.Add(t.schema, Op::kRead, rows, 0);
            const size_t bytes = 64 + out.size();
            want_ = std::max(want_, out.size());
            c.txn.preformatted = std::move(out);
            out = take();
            begun = false;
            c.last_key = last_key;
            c.point = point;
            if (r) *after = last_key;
            *last_progress = Clock::now();
            return queue_.Push(std::move(c), bytes);
          }));
      pool_.Give(std::move(out));
      return push_range_done();
    }
    RETURN_IF_ERROR(snap_->ReadRange(
        *t.schema, r ? *after : kNone, r ? r->lower : kNone, r ? r->upper : kNone,
        options_.fetch_rows, [&](std::vector<Row> rows, const std::vector<std::string>& last_key) -> Status {
          if (Stopped()) return Status::Cancelled("stopped");
          if (replan_.Has(job.table)) return Status::Cancelled("the table is planned again");
          if (window_) dropped_ += DropWindowRows(*window_, *t.schema, &rows);
          Chunk c;
          c.table = job.table;
          c.range = job.range;
          // Records are built and formatted here, in parallel across workers, so the
          // coordinator thread only writes (it was the bottleneck: BENCHMARKS.md).
          const SourceInfo src = source();
          size_t bytes = 64;
          c.txn.is_snapshot = true;
          c.rows = rows.size();
          if (preformatter_) {
            RETURN_IF_ERROR(preformatter_->FormatReads(t.schema, rows, src, c.txn));
            if (!rows.empty()) c.txn.counted.Add(t.schema, Op::kRead, rows.size(), 0);
            bytes = 64 + c.txn.preformatted->size();
            // The rows are freed here rather than on the coordinator thread.
            rows = {};
          } else {
            c.txn.changes.reserve(rows.size());
            for (Row& row : rows) {
              for (const Value& v : row) bytes += sizeof(Value) + v.s.size();
              c.txn.changes.push_back(ReadChange(Op::kRead, t.schema, std::move(row), src));
            }
          }
          c.last_key = last_key;
          c.point = point;
          if (r) *after = last_key;
          *last_progress = Clock::now();
          return queue_.Push(std::move(c), bytes);
        }));
    return push_range_done();
  }

  const SnapshotRunOptions& options_;
  const SnapshotOptions& snap_options_;
  const std::vector<TableState>& tables_;
  std::unique_ptr<Snapshot> snap_;
  BoundedQueue<Chunk>& queue_;
  std::atomic<bool>& abort_;
  std::unique_ptr<Preformatter> preformatter_;  // null: the sink formats in Apply
  ReplanRequests& replan_;
  BufferPool& pool_;
  size_t want_ = 0;  // the largest fetch's output so far: a buffer grown once is not grown again
  std::vector<Job> jobs_;
  WatermarkReader* wm_ = nullptr;
  uint32_t slot_ = 0;
  std::shared_ptr<const WindowKeys> window_;
  size_t dropped_ = 0;
};

// Frees applied chunks' rows on a thread of its own, off the coordinator thread that applies
// them to the sink (into SQLite that thread is the snapshot's bottleneck: BENCHMARKS.md).
class Releaser {
 public:
  Releaser() : thread_([this] { Loop(); }) {}
  ~Releaser() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Release(std::vector<RowChange> changes) {
    if (changes.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(changes));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::vector<std::vector<RowChange>> batch;
      batch.swap(queue_);
      lock.unlock();
      batch.clear();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<RowChange>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// Records that `range` was read up to `last_key` (inclusive) at `point`.
void ExtendSegments(RangeProgress& range, const KeyTexts& last_key, const BinlogPosition& point) {
  if (range.segments.empty() || !(range.segments.back().point == point))
    range.segments.push_back(RangeSegment{last_key, point});
  else
    range.segments.back().end = last_key;
}

BinlogPosition EarliestPoint(const TableSnapshotProgress& p) {
  BinlogPosition best;
  for (const RangeProgress& r : p.ranges)
    for (const RangeSegment& s : r.segments)
      if (best.empty() || ComparePositions(s.point, best) < 0) best = s.point;
  return best;
}

std::string Eta(double remaining_rows, double rate) {
  if (rate <= 0) return "?";
  double s = remaining_rows / rate;
  if (s < 90) return fmt::format("{:.0f} s", s);
  return fmt::format("{:.1f} min", s / 60);
}

}  // namespace

double ProgressRate::Update(uint64_t done, double seconds) {
  const double window = seconds - seconds_;
  const uint64_t rows = done >= done_ ? done - done_ : 0;
  done_ = done;
  seconds_ = seconds;
  if (!started_ && window <= 0) {
    started_ = true;
    return 0;
  }
  started_ = true;
  if (window <= 0) return std::max(rate_, 0.0);
  const double r = static_cast<double>(rows) / window;
  rate_ = r <= 0 ? -1 : rate_ < 0 ? r : 0.5 * rate_ + 0.5 * r;
  return std::max(rate_, 0.0);
}

// A re-read table's copy is complete: its definition holds from the copy's point on
// (copied_at, the earliest point it was read at; rows before it are in the copy and skipped).
// A DDL on it before that point is already in the definition: the stream skips it, as
// recorded. Why no DDL lies between the earliest and a later point of the copy: every read
// transaction checks the columns against this definition (CheckColumns).
static Status RecordReread(Checkpoint& ckpt, const TableState& t, TableSnapshotProgress& p) {
  SchemaHistory h = ckpt.schemas ? *ckpt.schemas : SchemaHistory();
  RETURN_IF_ERROR(h.Add(t.schema->db, t.schema->table, TableVersion{p.copied_at, t.schema, ""}));
  h.CacheJson();
  ckpt.schemas = std::make_shared<const SchemaHistory>(std::move(h));
  p.reread = false;
  return Status::Ok();
}

// A table seeded at a position (SeedSchemaHistory, a continued snapshot) whose copy is
// complete: as for a re-read, its definition holds from the copy's point on, and the
// statements before it are in the copy (a statement between the seed and the copy's first
// read changed the columns only if CheckColumns re-planned the table).
static Status RecordCopiedDefinition(Checkpoint& ckpt, const TableState& t, const TableSnapshotProgress& p) {
  if (p.copied_at.empty() || !ckpt.schemas) return Status::Ok();
  const TableVersion* v = ckpt.schemas->Latest(t.schema->db, t.schema->table);
  if (!v || v->since.empty() || !v->schema || ComparePositions(v->since, p.copied_at) >= 0 ||
      !DefinitionChange(*v->schema, *t.schema).empty())
    return Status::Ok();
  SchemaHistory h = *ckpt.schemas;
  RETURN_IF_ERROR(h.Add(t.schema->db, t.schema->table, TableVersion{p.copied_at, t.schema, ""}));
  h.CacheJson();
  ckpt.schemas = std::make_shared<const SchemaHistory>(std::move(h));
  return Status::Ok();
}

// `since`: empty in a first snapshot, whose definitions were read before its first point, so
// they hold from the start of the binlog (the stream never reads before that point). A table
// first planned by a continued snapshot (new, created or renamed into the patterns while sluice
// was stopped) was read after the stream's start: its definition holds from `since`, the
// server's position before it was read, so that the stream skips the statements that shaped
// it before then (a RENAME into its name was taken for a table renamed into the captured set,
// copied a second time: probe9 F2); RecordCopiedDefinition moves it on to the copy's point.
static void SeedSchemaHistory(Checkpoint& ckpt, const std::vector<TableState>& tables, const BinlogPosition& since) {
  SchemaHistory h = ckpt.schemas ? *ckpt.schemas : SchemaHistory();
  bool added = false;
  for (const TableState& t : tables) {
    if (h.Latest(t.schema->db, t.schema->table)) continue;
    if (ckpt.tables[t.name.QualifiedName()].reread) continue;  // RecordReread, once copied
    (void)h.Add(t.schema->db, t.schema->table, TableVersion{since, t.schema, ""});
    added = true;
  }
  if (!added) return;
  h.CacheJson();
  ckpt.schemas = std::make_shared<const SchemaHistory>(std::move(h));
}

bool ConsistentReadEngine(std::string_view engine) {
  if (engine.empty()) return true;
  std::string e(engine);
  for (char& c : e) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
  // BLACKHOLE holds no rows: its (empty) read is consistent at any point. A table moved to it
  // (ALTER ... ENGINE=BLACKHOLE) is re-read, and must not be refused.
  return e == "innodb" || e == "xtradb" || e == "rocksdb" || e == "tokudb" || e == "blackhole";
}

Status CheckSnapshotTable(const TableSchema& schema, const SnapshotRunOptions& options) {
  const std::string name = schema.QualifiedName();
  if (schema.system_versioned) return Status::FailedPrecondition(SystemVersionedNotCaptured(name));
  if (ConsistentReadEngine(schema.engine)) return Status::Ok();
  const bool allowed = TableSelected(options.allow_inconsistent_read, schema.db, schema.table);
  if (!schema.has_primary_key())
    return Status::FailedPrecondition(fmt::format(
        "table {} ({}) has no primary key and its engine gives no consistent read: a row written while it is "
        "copied would be in the copy and again in the stream, and without a key nothing tells the two apart "
        "(refused even with snapshot.allow_inconsistent_read); convert it (ALTER TABLE {} ENGINE=InnoDB), add a "
        "primary key, or leave it out (source.exclude)",
        name, schema.engine, name));
  if (!allowed)
    return Status::FailedPrecondition(fmt::format(
        "table {} uses engine {}, which gives no consistent read: rows written while it is copied are read in "
        "whatever state the copy meets; convert it (ALTER TABLE {} ENGINE=InnoDB), leave it out "
        "(source.exclude), or accept an inconsistent copy: [snapshot] allow_inconsistent_read = [\"{}\"]",
        name, schema.engine, name, name));
  LogWarning("snapshot: {} ({}) is copied without a consistent read (snapshot.allow_inconsistent_read): rows "
             "written during its copy may be read in a later state; the stream then applies their changes by "
             "primary key",
             name, schema.engine);
  return Status::Ok();
}

void PauseForTest(const char* env, const char* where) {
  static std::mutex mu;
  static std::set<std::string> paused;
  const char* path = std::getenv(env);
  if (path == nullptr || *path == '\0') return;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!paused.insert(env).second) return;
  }
  if (FILE* f = std::fopen(path, "w")) {
    std::fputs("paused\n", f);
    std::fclose(f);
  }
  LogInfo("{} until {} is removed (test hook)", where, path);
  const auto until = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < until) {
    if (FILE* f = std::fopen(path, "r")) {
      std::fclose(f);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } else {
      break;
    }
  }
}

// The first pass of the process, once planned and with its read transactions open, so that a
// test can change the source between planning and reading.
static void PauseForTest() { PauseForTest("SLUICE_TEST_SNAPSHOT_PAUSE_FILE", "snapshot: paused after planning"); }

// One pass: plans the tables not yet done and copies them with the workers. Tables a worker
// finds changed (ReplanRequests) are left unfinished, named in `replan`.
static Status SnapshotPass(const SnapshotRunOptions& options, Connection& meta,
                           const std::vector<TableName>& names, Checkpoint& ckpt, Sink& sink,
                           std::map<std::string, std::string>* replan) {
  const auto started = Clock::now();
  // Plan every table not yet done (planning happens once; a resume keeps the plan).
  std::vector<TableState> tables;
  BinlogPosition seed_at;  // SeedSchemaHistory: empty unless the stream's start is already set
  if (!ckpt.stream_start.empty()) {
    ASSIGN_OR_RETURN(seed_at, ReadBinlogPosition(meta));
  }
  for (const TableName& name : names) {
    TableSnapshotProgress& p = ckpt.tables[name.QualifiedName()];
    if (p.done) continue;
    ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(meta, name.db, name.table));
    auto schema = std::make_shared<const TableSchema>(std::move(loaded));
    RETURN_IF_ERROR(CheckSnapshotTable(*schema, options));
    const bool started_before = !p.ranges.empty() || p.rows > 0 || !p.last_key.empty();
    if (sink.KeepsRecordsPastTheCheckpoint() && started_before) {
      // The dead run's records past its checkpoint stay with the consumer (sink.h): the copy
      // starts over, after a truncate record (below).
      LogInfo("snapshot: the copy of {} was interrupted and the sink keeps what the interrupted run sent after its "
              "last checkpoint: copying it again from the start, after a truncate record",
              name.QualifiedName());
      const bool reread = p.reread;
      const std::string db = p.db;
      p = TableSnapshotProgress{};
      p.reread = reread;
      p.db = db;
    }
    if (!p.reread && ckpt.schemas) {
      // A resumed copy: its plan and the rows in the sink are of the definition recorded when
      // it was planned (SeedSchemaHistory); an ALTER while sluice was stopped re-plans it. So
      // is a table planned and not yet started: its sink table was prepared with the recorded
      // definition (a new user's probe: a keyless table given a column FIRST while sluice was
      // stopped failed every later run in "preparing table").
      const TableVersion* v = ckpt.schemas->Latest(name.db, name.table);
      std::string change = v && v->schema ? DefinitionChange(*v->schema, *schema) : "";
      if (!change.empty()) {
        LogInfo("snapshot: re-planning table {}: its definition changed while sluice was stopped: {}; "
                "its copy starts over with the new definition",
                name.QualifiedName(), change);
        p = TableSnapshotProgress{};
        p.reread = true;
      }
    }
    if (p.reread && p.ranges.empty() && p.rows == 0 && p.last_key.empty()) {
      // An online re-read starting: the sink's table (old definition, old rows) is replaced by
      // an empty one of the definition the copy reads, in one sink transaction with the
      // checkpoint; after a crash before any row it is simply replaced again.
      SourceInfo at;
      at.flavor = ckpt.flavor;
      at.server_id = options.source_server_id;
      at.timestamp = static_cast<uint32_t>(std::time(nullptr));
      at.snapshot = true;
      const SchemaChange reset = ReplaceTableChange(schema, "re-read of " + name.QualifiedName(), at);
      LogInfo("re-reading table {} from the source (its sink table is replaced)", name.QualifiedName());
      RETURN_IF_ERROR(CallSinkRetrying("replacing table " + name.QualifiedName(), options.stop,
                                       [&] { return sink.ApplySchemaChanges({reset}, ckpt.ToJson()); }));
    } else {
      RETURN_IF_ERROR(CallSinkRetrying("preparing table " + name.QualifiedName(), options.stop,
                                       [&] { return sink.PrepareTable(*schema); }));
    }
    if (sink.KeepsRecordsPastTheCheckpoint() && p.ranges.empty() && p.rows == 0) {
      // A copy from nothing: a run that died before its first checkpoint may have sent rows
      // that have changed or gone since; the consumer empties the table first.
      RETURN_IF_ERROR(CallSinkRetrying("emptying table " + name.QualifiedName(), options.stop,
                                       [&] { return sink.ResetTable(*schema, ckpt.ToJson()); }));
    }
    if (schema->has_primary_key() && p.ranges.empty()) {
      if (p.rows > 0 || !p.last_key.empty()) {
        // Progress written by an older sluice: one range, continued after its last key; the
        // part already copied was read at copied_at.
        RangeProgress r;
        r.rows = p.rows;
        r.last_key = p.last_key;
        if (!p.last_key.empty()) r.segments.push_back({p.last_key, p.copied_at});
        p.ranges.push_back(std::move(r));
      } else {
        ASSIGN_OR_RETURN(TablePlan plan, PlanTable(meta, *schema, options.plan));
        p.ranges = std::move(plan.ranges);
        p.expected_rows = plan.expected_rows;
        LogInfo("snapshot: {}: {} {} rows, {} range(s)", name.QualifiedName(),
                plan.exact_count ? "counted" : "estimated", plan.expected_rows, p.ranges.size());
      }
    } else if (!schema->has_primary_key() && p.expected_rows == 0) {
      PlanOptions single = options.plan;
      single.parallel = false;
      ASSIGN_OR_RETURN(TablePlan plan, PlanTable(meta, *schema, single));
      p.expected_rows = plan.expected_rows;
    }
    tables.push_back(TableState{name, schema, nullptr, 0});
  }
  // The stream decodes each table's rows with the definition the copy was read under
  // (CheckColumns holds it to the snapshot point), recorded once per table in the
  // checkpoint's schema history; later versions come from DDL in the binlog.
  SeedSchemaHistory(ckpt, tables, seed_at);
  // Pointers into ckpt.tables are stable (std::map) once every entry exists.
  for (TableState& t : tables) {
    t.progress = &ckpt.tables[t.name.QualifiedName()];
    t.rows_at_start = t.progress->rows;
  }

  // Keyless tables interrupted mid-copy start over.
  for (TableState& t : tables) {
    if (t.schema->has_primary_key() || t.progress->rows == 0) continue;
    LogInfo("table {} has no primary key and its copy was interrupted: copying it again",
            t.name.QualifiedName());
    t.progress->rows = 0;
    t.progress->last_key.clear();
    t.rows_at_start = 0;
    RETURN_IF_ERROR(CallSinkRetrying("emptying table " + t.name.QualifiedName(), options.stop,
                                     [&] { return sink.ResetTable(*t.schema, ckpt.ToJson()); }));
  }

  // Jobs, dealt round-robin starting at a different worker per table, so that the
  // open-ended last ranges do not all land on one worker.
  const size_t nworkers = std::max<uint32_t>(1, options.workers);
  std::vector<std::vector<Job>> dealt(nworkers);
  size_t njobs = 0;
  for (size_t ti = 0; ti < tables.size(); ++ti) {
    const TableSnapshotProgress& p = *tables[ti].progress;
    if (!tables[ti].schema->has_primary_key()) {
      dealt[ti % nworkers].push_back(Job{ti, -1});
      ++njobs;
      continue;
    }
    size_t j = 0;
    for (size_t ri = 0; ri < p.ranges.size(); ++ri) {
      if (p.ranges[ri].done) continue;
      dealt[(ti + j++) % nworkers].push_back(Job{ti, static_cast<int>(ri)});
      ++njobs;
    }
  }
  size_t active = 0;
  for (const auto& d : dealt) active += d.empty() ? 0 : 1;

  SnapshotOptions sopts;
  for (const TableState& t : tables) sopts.lock_tables.push_back(t.name);
  if (sopts.lock_tables.empty()) sopts.lock_tables = names;

  std::vector<std::unique_ptr<Snapshot>> snaps;
  std::unique_ptr<WatermarkReader> wm;
  std::vector<std::shared_ptr<const WindowKeys>> windows;
  if (options.watermark) {
    std::map<std::string, TableSchemaPtr> schemas;
    for (const TableState& t : tables) schemas[t.name.QualifiedName()] = t.schema;
    wm = std::make_unique<WatermarkReader>(options.connection, *options.watermark, std::move(schemas));
    RETURN_IF_ERROR(wm->Prepare());
    for (size_t i = 0; i < active; ++i) {
      ASSIGN_OR_RETURN(WatermarkedRead r, wm->Begin(static_cast<uint32_t>(i)));
      snaps.push_back(std::move(r.snapshot));
      windows.push_back(std::move(r.window));
    }
    if (active > 0) PauseForTest();
  } else if (active > 0) {
    double lock_ms = 0;
    ASSIGN_OR_RETURN(snaps, Snapshot::BeginMany(options.connection, active, sopts, &lock_ms));
    if (lock_ms > 0) LogInfo("snapshot: tables were read-locked for {:.1f} ms while {} read transactions opened", lock_ms, active);
    PauseForTest();
  }
  bool resumed = !ckpt.stream_start.empty();
  if (!resumed) {
    // The stream starts at the earliest point of any read transaction.
    const SnapshotPoint* first = nullptr;
    for (const auto& s : snaps)
      if (!first || ComparePositions(s->point().position, first->position) < 0) first = &s->point();
    if (first == nullptr) {
      // Nothing to read (no tables): start where the server is now.
      std::unique_ptr<Snapshot> only;
      if (wm) {
        ASSIGN_OR_RETURN(WatermarkedRead r, wm->Begin(0));
        only = std::move(r.snapshot);
      } else {
        ASSIGN_OR_RETURN(only, Snapshot::Begin(options.connection, sopts));
      }
      ckpt.flavor = only->point().flavor;
      ckpt.stream_start = only->point().position;
      ckpt.gtid = only->point().gtid;
      (void)only->Finish();
    } else {
      ckpt.flavor = first->flavor;
      ckpt.stream_start = first->position;
      ckpt.gtid = first->gtid;
    }
  }
  {
    // One line: the read transactions usually share one point (MariaDB's consistent snapshot,
    // MySQL's lock); otherwise each point, in worker order.
    std::vector<std::string> points;
    for (const auto& s : snaps) {
      std::string p = s->point().position.ToString();
      if (!s->point().gtid.empty()) p += " gtid " + s->point().gtid;
      if (std::find(points.begin(), points.end(), p) == points.end()) points.push_back(std::move(p));
    }
    std::string all;
    for (const std::string& p : points) all += (all.empty() ? "" : "; ") + p;
    if (points.size() == 1)
      LogInfo("snapshot at {} ({} read transaction(s))", all, snaps.size());
    else if (!points.empty())
      LogInfo("snapshot: {} read transactions at {} points: {}", snaps.size(), points.size(), all);
  }
  if (resumed) {
    // Said as it is: a re-read beside the stream is no interrupted snapshot (a new user's
    // probe read "it was interrupted" on runs that only copied a table again).
    bool rereads_only = !tables.empty(), interrupted = false;
    for (const TableState& t : tables) {
      rereads_only = rereads_only && t.progress->reread;
      interrupted = interrupted || t.rows_at_start > 0;
    }
    if (rereads_only)
      LogInfo("{} {} table(s){}; the stream goes on from {}",
              interrupted ? "continuing the interrupted re-read of" : "copying", tables.size(),
              interrupted ? "" : " again", ckpt.stream_start.ToString());
    else
      LogInfo("continuing the snapshot (it was interrupted, or tables were added); streaming will "
              "start at {}", ckpt.stream_start.ToString());
  }
  LogInfo("snapshot: {} table(s), {} job(s), {} worker(s)", tables.size(), njobs, active);

  BoundedQueue<Chunk> queue(4 * nworkers + 4, size_t{256} << 20);
  std::atomic<bool> abort{false};
  ReplanRequests replans;
  BufferPool pool;
  std::vector<std::unique_ptr<Worker>> workers;
  {
    size_t si = 0;
    for (auto& d : dealt) {
      if (d.empty()) continue;
      auto w = std::make_unique<Worker>(options, sopts, tables, std::move(snaps[si++]), queue, abort,
                                        sink.NewSnapshotPreformatter(), replans, pool);
      for (const Job& j : d) w->Add(j);
      if (wm) w->UseWatermarks(wm.get(), static_cast<uint32_t>(si - 1), windows[si - 1]);
      workers.push_back(std::move(w));
    }
  }
  std::vector<std::thread> threads;
  std::atomic<size_t> running{workers.size()};
  for (auto& w : workers)
    threads.emplace_back([&running, &queue, wp = w.get()] {
      wp->Run();
      if (--running == 0) queue.Close(Status::Ok());
    });
  auto join_all = [&](Status why) {
    abort = true;
    queue.Close(std::move(why));
    for (auto& th : threads) th.join();
    threads.clear();
  };
  if (workers.empty()) queue.Close(Status::Ok());

  // The coordinator thread: apply chunks in arrival order, each with its checkpoint.
  uint64_t total_expected = 0, total_done = 0, total_at_start = 0;
  for (const TableState& t : tables) {
    total_expected += std::max(t.progress->expected_rows, t.progress->rows);
    total_at_start += t.progress->rows;
  }
  total_done = total_at_start;
  // Per-table progress for the metrics endpoint and the progress display (util/metrics.h).
  auto& reg = metrics::Registry::Global();
  std::vector<metrics::Value*> rows_gauge, expected_gauge;
  for (const TableState& t : tables) {
    metrics::Labels l{{"table", t.name.QualifiedName()}};
    rows_gauge.push_back(&reg.Gauge("sluice_snapshot_rows", "rows copied by the snapshot, per table", l));
    expected_gauge.push_back(&reg.Gauge("sluice_snapshot_expected_rows",
                                        "rows the snapshot expects to copy (planning: exact count or estimate)", l));
    rows_gauge.back()->Set(static_cast<double>(t.progress->rows));
    expected_gauge.back()->Set(static_cast<double>(std::max(t.progress->expected_rows, t.progress->rows)));
  }
  reg.Gauge("sluice_snapshot_running", "1 while the initial snapshot runs").Set(1);
  auto last_report = Clock::now();
  // Lines while copying give the recent rate (ProgressRate), the final line the average.
  ProgressRate recent;
  (void)recent.Update(0, 0);
  auto report = [&](bool final_line) {
    double secs = std::chrono::duration<double>(Clock::now() - started).count();
    const uint64_t copied = total_done - total_at_start;
    double rate = secs > 0 ? static_cast<double>(copied) / secs : 0;
    if (!final_line) rate = recent.Update(copied, secs);
    std::string per_table;
    for (const TableState& t : tables) {
      if (t.progress->done && !final_line) continue;
      if (per_table.size() > 300) { per_table += ", ..."; break; }
      per_table += fmt::format("{}{} {}/{}", per_table.empty() ? "" : ", ", t.name.QualifiedName(),
                               t.progress->rows, t.progress->expected_rows);
    }
    double remaining = total_expected > total_done ? static_cast<double>(total_expected - total_done) : 0;
    LogStatus("snapshot progress: {} of {} rows, {:.0f} rows/s, ETA {}{}{}", total_done, total_expected,
            rate, Eta(remaining, rate), per_table.empty() ? "" : "; ", per_table);
  };

  Releaser releaser;
  Status result;
  // Progress of the tables a failed group touched, as it was before the group (restored
  // after a sink error, so ckpt never claims rows the sink does not have).
  std::vector<std::pair<TableSnapshotProgress*, TableSnapshotProgress>> failed;
  // The chunks ready together are applied as one sink transaction (ApplyGroup): when the
  // sink is the bottleneck the queue is full, and one commit per fetch made SQLite sync its
  // WAL (synchronous=FULL) and checkpoint it hundreds of times for 2 M rows, a large part of
  // its wall time (BENCHMARKS.md). Each transaction still carries its own checkpoint (the
  // group records the last), so progress stays exact and a crash loses at most the
  // uncommitted group. Sinks that need each transaction's own checkpoint (Kafka, NATS: they
  // commit inside a group; the copy beside the stream: it stores the progress as it is at
  // each call) get one chunk per call.
  constexpr size_t kGroupChunks = 16;
  const size_t group_max = sink.CheckpointsEachTransaction() ? 1 : kGroupChunks;
  std::vector<Chunk> ready;
  std::vector<Transaction> group;
  std::vector<size_t> group_chunk;   // index into `ready` of each group member
  std::vector<bool> group_finishes;  // whether that member completes its table
  std::vector<std::pair<TableSnapshotProgress*, TableSnapshotProgress>> before;
  const auto clear_group = [&] {
    before.clear();
    group.clear();
    group_chunk.clear();
    group_finishes.clear();
  };
  // Applies `group` (the chunks ready[group_chunk[i]]), then accounts for it.
  const auto apply_group = [&]() -> Status {
    if (group.empty()) return Status::Ok();
    group.back().checkpoint = ckpt.ToJson();  // the state after its last member
    size_t rows = 0;
    for (const size_t i : group_chunk) rows += ready[i].rows;
    const TableState& first = tables[ready[group_chunk[0]].table];
    Status st = CallSinkRetrying(
        fmt::format("snapshot chunk of {} ({} rows{})", first.name.QualifiedName(), rows,
                    group.size() > 1 ? fmt::format(", {} chunks", group.size()) : ""),
        options.stop, [&] {
          return rows == 0 ? sink.SaveCheckpoint(group.back().checkpoint)
                 : group.size() == 1 ? sink.Apply(group[0])
                                     : sink.ApplyGroup(group);
        });
    if (!st.ok()) {
      failed = std::move(before);
      clear_group();
      return st;
    }
    for (size_t g = 0; g < group.size(); ++g) {
      const Chunk& c = ready[group_chunk[g]];
      const TableState& t = tables[c.table];
      releaser.Release(std::move(group[g].changes));
      if (group[g].preformatted) pool.Give(std::move(*group[g].preformatted));
      total_done += c.rows;
      rows_gauge[c.table]->Set(static_cast<double>(t.progress->rows));
      if (group_finishes[g]) {
        double secs = std::chrono::duration<double>(Clock::now() - started).count();
        // A resumed copy says what earlier runs copied too (the probe read "copied, 296690
        // rows" of a 297290-row table as rows missing).
        const uint64_t now = t.progress->rows - t.rows_at_start;
        if (t.rows_at_start == 0)
          LogInfo("snapshot: {} copied, {} rows in {:.2f} s", t.name.QualifiedName(), now, secs);
        else
          LogInfo("snapshot: {} copied, {} rows ({} in this run, in {:.2f} s; {} by an earlier run)",
                  t.name.QualifiedName(), t.progress->rows, now, secs, t.rows_at_start);
      }
    }
    clear_group();
    return Status::Ok();
  };
  while (result.ok()) {
    Status qst;
    bool closed = false;
    ready.clear();
    const size_t got = queue.PopBatch(&ready, kGroupChunks, std::chrono::milliseconds(200), &qst, &closed);
    if (Clock::now() - last_report > std::chrono::duration<double>(options.progress_seconds)) {
      report(false);
      last_report = Clock::now();
    }
    if (got == 0) {
      if (closed) {
        result = qst;
        break;
      }
      continue;
    }
    for (size_t ci = 0; ci < ready.size() && result.ok(); ++ci) {
      Chunk& chunk = ready[ci];
      if (replans.Has(chunk.table)) continue;  // its copy starts over after this pass
      TableState& t = tables[chunk.table];
      TableSnapshotProgress& p = *t.progress;
      if (chunk.restart) {
        result = apply_group();
        if (!result.ok()) break;
        LogInfo("table {} has no primary key and its read was interrupted: copying it again",
                t.name.QualifiedName());
        total_done -= p.rows;
        p.rows = 0;
        p.copied_at = chunk.point.position;
        result = CallSinkRetrying("emptying table " + t.name.QualifiedName(), options.stop,
                                  [&] { return sink.ResetTable(*t.schema, ckpt.ToJson()); });
        continue;
      }
      const size_t n = chunk.rows;
      // The new progress, recorded only once the sink has the rows.
      bool seen = false;
      for (const auto& b : before) seen = seen || b.first == &p;
      if (!seen) before.emplace_back(&p, p);
      if (chunk.range >= 0) {
        RangeProgress& r = p.ranges[chunk.range];
        // Watermarks may leave a fetch with no rows: its keys still count as read.
        if (n > 0 || !chunk.last_key.empty()) {
          r.rows += n;
          r.last_key = chunk.last_key;
          ExtendSegments(r, chunk.last_key, chunk.point.position);
        }
        if (chunk.range_done) {
          // The keys after the last row up to the range's end held no row at this point.
          if (r.segments.empty() || !(r.segments.back().point == chunk.point.position))
            r.segments.push_back(RangeSegment{r.last_key, chunk.point.position});
          r.done = true;
        }
        p.rows += n;
        p.done = true;
        for (const RangeProgress& x : p.ranges) p.done = p.done && x.done;
        if (p.done) p.copied_at = EarliestPoint(p);
      } else {
        if (p.rows == 0) p.copied_at = chunk.point.position;
        p.rows += n;
        if (chunk.range_done) p.done = true;
      }
      // Every read of the table ends before the last of its jobs' ends (checkpoint.h
      // read_until); kept while ranges finish, across runs.
      if (chunk.range_done && !chunk.read_end.empty() &&
          (p.read_until.empty() || ComparePositions(p.read_until, chunk.read_end) < 0))
        p.read_until = chunk.read_end;
      if (p.done) {
        result = p.reread ? RecordReread(ckpt, t, p) : RecordCopiedDefinition(ckpt, t, p);
        if (!result.ok()) {
          failed = std::move(before);
          break;
        }
      }
      // The checkpoint is written when the group is applied, for its last member only (the one
      // a group records): it holds every range's progress, and made for each chunk it was most
      // of the run with hundreds of ranges (a new user's probe: 3637 ranges of 40,000 rows, 91 s).
      group.push_back(std::move(chunk.txn));
      group_chunk.push_back(ci);
      group_finishes.push_back(p.done);
      // A finished table ends the group: what follows it (a re-read's recorded definition,
      // the next table) starts from a committed state.
      if (p.done || group.size() >= group_max) result = apply_group();
    }
    if (result.ok()) result = apply_group();
  }
  join_all(result.ok() ? Status::Cancelled("snapshot finished") : result);
  reg.Gauge("sluice_snapshot_running", "1 while the initial snapshot runs").Set(0);
  // The display's last snapshot frame goes now: it was drawn again under every log line until
  // the display's next tick, a second later, still saying "89%, 0 of 2 table(s) done" after the
  // tables' "copied" lines (a new user's probe).
  if (StatusDisplayActive()) SetStatusDisplay(" ");
  // After the workers are gone: they read their ranges' progress when a job starts.
  for (auto it = failed.rbegin(); it != failed.rend(); ++it) *it->first = std::move(it->second);
  if (result.code() == StatusCode::kCancelled && Stopping(options.stop)) return Status::Ok();
  for (auto& [ti, why] : replans.Take()) (*replan)[tables[ti].name.QualifiedName()] = std::move(why);
  if (Stopping(options.stop)) return Status::Ok();
  RETURN_IF_ERROR(result);
  if (!replan->empty()) return Status::Ok();
  for (const TableState& t : tables)
    if (!t.progress->done)
      return Status::Internal(fmt::format("snapshot ended with {} unfinished", t.name.QualifiedName()));
  report(true);
  ckpt.snapshot_done = true;
  return CallSinkRetrying("saving the checkpoint at the end of the snapshot", options.stop,
                          [&] { return sink.SaveCheckpoint(ckpt.ToJson()); });
}

Status RunSnapshot(const SnapshotRunOptions& options, Connection& meta,
                   const std::vector<TableName>& names, Checkpoint& ckpt, Sink& sink) {
  // The metadata session idles while the workers read, for hours on a big source, and plans
  // again after a pass: the server must not reap it meanwhile (the workers set the same in
  // snapshot.cc SetUpSession).
  RETURN_IF_ERROR(meta.Execute("SET SESSION wait_timeout = 86400, net_read_timeout = 3600, "
                               "net_write_timeout = 3600"));
  std::map<std::string, int> replans;  // table -> times re-planned
  while (true) {
    std::map<std::string, std::string> replan;
    Status st = SnapshotPass(options, meta, names, ckpt, sink, &replan);
    // A changed table's rows in the sink and its plan are of the old definition: its copy
    // starts over as a re-read (the sink table replaced by one of the new definition, which
    // the stream takes from the copy's point on: RecordReread), recorded before anything
    // else so that a restart does not continue the old plan.
    for (const auto& [name, why] : replan) {
      if (++replans[name] > 10)
        return Status::FailedPrecondition(fmt::format(
            "snapshot of {}: planned {} times and {} every time; stopping (is a migration rewriting "
            "it in a loop?)",
            name, replans[name], why));
      LogInfo("snapshot: re-planning table {}: {}; its copy starts over", name, why);
      TableSnapshotProgress fresh;
      fresh.reread = true;
      fresh.db = ckpt.tables[name].db;
      ckpt.tables[name] = std::move(fresh);
    }
    if (!replan.empty())
      RETURN_IF_ERROR(CallSinkRetrying("saving the checkpoint", options.stop,
                                       [&] { return sink.SaveCheckpoint(ckpt.ToJson()); }));
    RETURN_IF_ERROR(st);
    if (replan.empty() || Stopping(options.stop)) return Status::Ok();
  }
}

}  // namespace sluice
