#include "stream/streamer.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "binlog/checksum.h"
#include "binlog/event_stream.h"
#include "gtid/gtid_set.h"
#include "mysql/key_literal.h"
#include "mysql/replication.h"
#include "mysql/server_probe.h"
#include "pipeline/bounded_queue.h"
#include "pipeline/handoff_rule.h"
#include "schema/sql_tokenizer.h"
#include "sink/sink_retry.h"
#include "schema/ddl.h"
#include "schema/ddl_apply.h"
#include "schema/dml_tables.h"
#include "stream/reconnect_backoff.h"
#include "stream/resume.h"
#include "stream/schema_check.h"
#include "stream/transaction_assembler.h"
#include "util/log.h"
#include "util/metrics.h"

namespace sluice {

// 1 while a binlog dump is open, 0 while the stream reconnects to the source: the lag says
// nothing then (no transaction is read, so none waits), and a new user's probe found an alert
// on it silent through a 20 s outage.
static metrics::Value& SourceConnectedGauge() {
  static metrics::Value& g = metrics::Registry::Global().Gauge(
      "sluice_source_connected", "1 while the stream's binlog dump is open, 0 while it reconnects to the source");
  return g;
}

namespace {

using Clock = std::chrono::steady_clock;

bool Stopping(const std::atomic<bool>* stop) { return stop && stop->load(); }

// The sql_mode a QUERY event ran under; nullopt when not known (binlog::QuerySqlMode).
std::optional<uint64_t> SqlMode(const binlog::Event& ev) {
  const auto* q = std::get_if<binlog::QueryEvent>(&ev.body);
  if (!q) return std::nullopt;
  return binlog::QuerySqlMode(*q);
}

// Whether a QUERY event ran under a strict sql_mode (STRICT_TRANS_TABLES / STRICT_ALL_TABLES);
// "not known" is not strict.
bool StrictSqlMode(const std::optional<uint64_t>& mode) {
  return mode && (*mode & (binlog::kModeStrictTransTables | binlog::kModeStrictAllTables)) != 0;
}

std::string Shorten(std::string_view q) {
  std::string out;
  for (char c : q.substr(0, 200)) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  if (q.size() > 200) out += "...";
  return out;
}

// The tables a stopped statement leaves behind, for the `sluice resnapshot` hint: a rename's
// new names (the old ones are gone), else the table the stop is about.
std::string ResnapshotTargets(const ddl::Statement& st, const std::string& table) {
  std::string out;
  for (const auto& [from, to] : st.renames) out += (out.empty() ? "" : " ") + to.ToString();
  return out.empty() ? table : out;
}

// The schema registry of a run: the definition each row event of a captured table was
// written under (the checkpoint's SchemaHistory, extended by every table-shaping DDL read
// from the binlog), and the schema changes the sink must follow.
//
// Where the definitions come from: the snapshot seeds one version per table at its point
// (cli/run.cc); each DDL statement on a captured table adds a version at the end of its
// event, parsed by ddl::Parse and applied by ddl::ApplyAlter. A statement that is not fully
// understood, that contradicts the recorded definition, or whose effect on existing rows a
// sink cannot reproduce exactly stops the run (never a guess). Every TABLE_MAP of a
// captured table is checked against its version (CheckTableMap), which catches DDL that
// never reached the binlog.
// Tables the history lacks (a checkpoint written before the history existed) are read from
// the server as before and checked with CheckRowLayout; a DDL on such a table stops the run.
class SchemaRegistry {
 public:
  // `lower_case_table_names`: the source's (NormalizeNames).
  SchemaRegistry(Connection& conn, const TableFilter& filter, const Checkpoint& ckpt, Flavor flavor,
                 bool can_reread, int lower_case_table_names)
      : conn_(conn), filter_(filter), flavor_(flavor), can_reread_(can_reread),
        lower_case_table_names_(lower_case_table_names) {
    for (const auto& [name, progress] : ckpt.tables) {
      if (!progress.copied_at.empty()) copied_at_[name] = progress.copied_at;
      CopyPoints c{progress.copied_at, progress.copied_at, progress.read_until};
      for (const RangeProgress& r : progress.ranges)
        for (const RangeSegment& seg : r.segments) {
          if (c.first.empty() || ComparePositions(seg.point, c.first) < 0) c.first = seg.point;
          if (c.last.empty() || ComparePositions(c.last, seg.point) < 0) c.last = seg.point;
        }
      if (!c.last.empty()) copies_[name] = std::move(c);
    }
    if (ckpt.schemas) history_ = *ckpt.schemas;
    frozen_ = ckpt.schemas;
  }

  // `event` is where the rows event starts: rows of a table whose snapshot copy was read
  // at a later point are already in the sink, and are skipped (null schema).
  // `owner`, when given, owns `map` (the EventStream's shared TABLE_MAP object).
  // `xa`: the rows belong to an XA transaction, judged at its XA COMMIT (RowsDroppedAt), not
  // at `event`: a copy read between the PREPARE and the COMMIT does not hold them.
  Result<TableSchemaPtr> Resolve(const binlog::TableMap& map, const BinlogPosition& event,
                                 const std::shared_ptr<const binlog::TableMap>& owner = nullptr, bool xa = false) {
    // Every rows event asks again with the TABLE_MAP before it, which repeats the same
    // layout: once a table's latest version has been checked against a layout, the same
    // layout needs no new check (filter glob, history lookup and CheckTableMap cost more than
    // decoding the rows). Forgotten at every DDL, and unused while snapshot points are ahead.
    if (copied_at_.empty() && skipping_.empty()) {
      auto m = memo_.find(map.table_id);
      if (m != memo_.end()) {
        // The EventStream hands out one TableMap object for the same TABLE_MAP bytes: the
        // object already found equal needs no second comparison (comparing every rows event's
        // map field by field was 2-3% of a JSON lines catch-up). The memo holds it, so its
        // address cannot be reused by another map meanwhile.
        if (owner && m->second.same == owner) return m->second.schema;
        if (SameLayout(m->second.map, map)) {
          if (owner) m->second.same = owner;
          return m->second.schema;
        }
      }
    }
    ASSIGN_OR_RETURN(TableSchemaPtr schema, ResolveUncached(map, event, xa));
    if (copied_at_.empty() && skipping_.empty() && memo_.size() < 4096) {
      const TableVersion* latest = schema ? history_.Latest(map.db, map.table) : nullptr;
      const bool cacheable = !schema || (latest && latest->schema == schema);
      if (cacheable) memo_[map.table_id] = Memo{map, schema, owner};
    }
    return schema;
  }

  Result<TableSchemaPtr> ResolveUncached(const binlog::TableMap& map, const BinlogPosition& event, bool xa) {
    if (!TableSelected(filter_, map.db, map.table)) return TableSchemaPtr();
    std::string key = map.db + "." + map.table;
    if (!xa && !skipping_.empty() && Skipped(key, event)) return TableSchemaPtr();
    if (!xa && !copied_at_.empty()) {
      auto c = copied_at_.find(key);
      if (c != copied_at_.end()) {
        if (ComparePositions(event, c->second) < 0) return TableSchemaPtr();
        copied_at_.erase(c);  // the stream has passed it for good
      }
    }
    if (const TableVersion* v = history_.At(map.db, map.table, event)) {
      const std::string where = fmt::format("binlog {} offset {}", event.file, event.pos);
      if (!v->schema) {
        return Status::FailedPrecondition(fmt::format(
            "table {} at {}: rows of a table the binlog dropped or renamed away at {}:{} (\"{}\"); "
            "it was re-created without a statement sluice read; {} (docs/schema-changes.md)",
            key, where, v->since.file, v->since.pos, Shorten(v->ddl), ResnapshotHint(key)));
      }
      RETURN_IF_ERROR(CheckTableMap(map, *v->schema, where, v->ddl,
                                    fmt::format("binlog {} (the event ending at offset {})", v->since.file, v->since.pos)));
      return v->schema;
    }
    auto it = legacy_.find(key);
    if (it != legacy_.end() && CheckRowLayout(map, *it->second, true).ok()) return it->second;
    ASSIGN_OR_RETURN(bool sequence, IsSequence(map.db, map.table));
    if (sequence) return TableSchemaPtr();
    ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(conn_, map.db, map.table));
    RETURN_IF_ERROR(CheckRowLayout(map, loaded, /*allow_appended_columns=*/true)
                        .WithContext(fmt::format("binlog {} offset {}", event.file, event.pos)));
    auto ptr = std::make_shared<const TableSchema>(std::move(loaded));
    legacy_[key] = ptr;  // the sink prepares the table when it first meets its rows
    return TableSchemaPtr(ptr);
  }

  // Whether the stream drops rows of `key` committed at `at` (an XA COMMIT's rows, decoded
  // at their PREPARE without this judgement: Resolve's `xa`).
  bool RowsDroppedAt(const std::string& key, const BinlogPosition& at) const { return RowsDropped(key, at); }

  // The history as of now, for checkpoints (null when empty).
  const std::shared_ptr<const SchemaHistory>& history() const { return frozen_; }

  // A DDL statement ended a group at `ev`. Fills `changes` (for the sink, in order),
  // `reset` (TRUNCATE of a captured table) and `rereads` (tables whose rows must be copied
  // again from the source: snapshot/reread.h); fails when the run must stop. `resume` is
  // where a restart would read from after this statement (versions before it are pruned).
  Status OnDdl(const CommittedTransaction& txn, const binlog::Event& ev, const BinlogPosition& resume,
               std::vector<SchemaChange>* changes, TableSchemaPtr* reset, SourceInfo* reset_at,
               std::vector<ddl::TableRef>* rereads) {
    if (ev.file.empty() || ev.end_pos == 0)
      return Status::Internal(fmt::format("DDL \"{}\" read at an unknown binlog position", Shorten(txn.ddl_query)));
    const BinlogPosition since{ev.file, ev.end_pos};
    is_sequence_.clear();  // DROP SEQUENCE s, CREATE TABLE s: asked again
    const std::string where = fmt::format("binlog {} offset {}{}", ev.file, ev.pos,
                                          txn.gtid.empty() ? "" : " (GTID " + txn.gtid + ")");
    // Under ANSI_QUOTES "db"."t" are names (a new user's probe: read as strings, TRUNCATE,
    // RENAME and ALTER of captured tables were passed as no table-shaping statement at all).
    auto parsed = ddl::Parse(txn.ddl_query, txn.ddl_schema,
                             {.mariadb = flavor_ == Flavor::kMariaDB, .ansi_quotes = binlog::AnsiQuotes(SqlMode(ev).value_or(0))});
    if (parsed.ok()) RETURN_IF_ERROR(NormalizeNames(*parsed, where, txn.ddl_query));
    if (!parsed.ok()) {
      if (!MentionsCaptured(txn.ddl_schema, txn.ddl_query)) return Status::Ok();
      return Status::FailedPrecondition(fmt::format(
          "{}: the statement \"{}\" may change a captured table and sluice cannot read it ({}); "
          "sluice stops rather than guess: re-snapshot the affected tables into a new replica "
          "(docs/schema-changes.md)",
          where, Shorten(txn.ddl_query), parsed.status().message()));
    }
    if (!parsed->drop_database.empty()) {
      // DROP DATABASE: each table of it that the history knows is dropped (a new user's
      // probe: they stayed, and a table created again under the same name stopped the run).
      for (const std::string& name : history_.Tables())
        for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
          if (name.compare(0, dot, parsed->drop_database) == 0 && dot == parsed->drop_database.size()) {
            const TableVersion* v = history_.Latest(name.substr(0, dot), name.substr(dot + 1));
            if (v && v->schema) parsed->tables.push_back(ddl::TableRef{name.substr(0, dot), name.substr(dot + 1)});
          }
    }
    const ddl::Statement& st = *parsed;
    if (st.temporary || (st.kind == ddl::Kind::kNone && st.understood)) return Status::Ok();
    if (!st.understood && st.tables.empty() && st.renames.empty()) {
      // A table-shaping statement whose table names could not be read: never passed as if it
      // touched no captured table.
      if (!MentionsCaptured(txn.ddl_schema, txn.ddl_query)) return Status::Ok();
      return Status::FailedPrecondition(fmt::format(
          "{}: the statement \"{}\" may change a captured table and sluice cannot tell which (it does not "
          "understand {}); sluice stops rather than guess: re-snapshot the affected tables into a new replica, "
          "or exclude them from source.tables before the statement (docs/schema-changes.md)",
          where, Shorten(txn.ddl_query), st.not_understood));
    }
    auto selected = [&](const ddl::TableRef& t) { return TableSelected(filter_, t.db, t.table); };
    bool touches = false;
    for (const auto& t : st.tables) touches = touches || selected(t);
    for (const auto& [from, to] : st.renames) touches = touches || selected(from) || selected(to);
    // ALTER TABLE ... EXCHANGE PARTITION p WITH TABLE t / CONVERT PARTITION p TO TABLE t /
    // CONVERT TABLE t TO PARTITION p: t's rows change with no row events too.
    std::vector<ddl::TableRef> partition_others;
    for (const ddl::AlterOp& op : st.ops)
      if (op.kind == ddl::OpKind::kPartition && !op.new_table.table.empty()) partition_others.push_back(op.new_table);
    for (const auto& t : partition_others) touches = touches || selected(t);
    if (!touches) return Status::Ok();
    {
      // A table that comes in under a "db.table" name another captured table has with another
      // split (`a.b`.`c` beside `a`.`b.c`): the checkpoint, the re-reads and the sinks name
      // tables so, and the start refuses such a pair. Coming by RENAME, it was copied as the
      // other table (a new user's probe); it stops here, before anything of it is applied.
      std::vector<ddl::TableRef> arriving;
      if (st.kind == ddl::Kind::kCreateTable && !st.tables.empty()) arriving.push_back(st.tables[0]);
      for (const auto& [from, to] : st.renames) arriving.push_back(to);
      for (const ddl::TableRef& t : arriving) {
        if (!selected(t)) continue;
        const std::string name = t.ToString();
        for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
          const ddl::TableRef other{name.substr(0, dot), name.substr(dot + 1)};
          if (other == t || !selected(other)) continue;
          const TableVersion* v = history_.Latest(other.db, other.table);
          if (!v || !v->schema) continue;
          bool leaving = false;  // renamed away by this statement
          for (const auto& [from, to] : st.renames) leaving = leaving || from == other;
          if (leaving) continue;
          return Status::FailedPrecondition(fmt::format(
              "{}: \"{}\" brings `{}`.`{}` into the capture beside `{}`.`{}`: both are named {} in sluice's "
              "checkpoint and sinks, and one would take the other's place; sluice stops before applying it: "
              "leave one out (source.exclude) and run again",
              where, Shorten(txn.ddl_query), t.db, t.table, other.db, other.table, name));
        }
      }
    }
    if (!skipping_.empty()) {
      // Beside an online re-read: a statement on a table being copied waits for the copy
      // (the caller stops before it); one on the other tables before others_at is applied.
      std::vector<ddl::TableRef> refs = st.tables;
      refs.insert(refs.end(), partition_others.begin(), partition_others.end());
      for (const auto& [from, to] : st.renames) {
        refs.push_back(from);
        refs.push_back(to);
      }
      // A statement on tables being copied only is left to the copy: one before the copy's
      // point is in its definition; one after it is read again when the table's binlog is
      // replayed after the copy (a copy that meets the new definition starts over). One that
      // also moves another captured table waits for the copy.
      bool on_rereading = false, on_pending = false, on_other = false;
      for (const ddl::TableRef& t : refs) {
        const std::string n = t.ToString();
        if (pending_.count(n)) {
          on_pending = true;
          continue;
        }
        on_rereading = on_rereading || Unapplied(n, BinlogPosition{ev.file, ev.pos});
        // The statement's own (db, table): its "db.table" text split at the first dot was
        // another table when the database name holds a dot.
        on_other = on_other || TableSelected(filter_, t.db, t.table);
      }
      if (on_pending) {
        if (on_other) wait_for_copy_ = true;
        return Status::Ok();
      }
      if (!on_rereading && !others_at_.empty() && ComparePositions(BinlogPosition{ev.file, ev.pos}, others_at_) < 0)
        return Status::Ok();
    }
    const std::string first = st.tables.empty() ? "" : st.tables[0].ToString();
    auto stop = [&](const std::string& table, const std::string& why) {
      return Status::FailedPrecondition(fmt::format(
          "{}: the statement \"{}\" on captured table {}: {}; sluice stops rather than write a "
          "value it cannot vouch for: copy the table(s) the statement leaves again with `sluice "
          "resnapshot --config FILE {}` (this replica; run it, then run sluice again), re-snapshot "
          "into a new replica, or exclude the table from source.tables before the statement "
          "(docs/schema-changes.md)",
          where, Shorten(txn.ddl_query), table, why, ResnapshotTargets(st, table)));
    };
    // Already recorded: a restart that reads this statement again (its checkpoint holds it),
    // or a table whose every read of its copy began after the statement: the copy holds its
    // effect, and the definition the copy was read under (CheckColumns) is the one recorded.
    // A new user's probe swapped two tables not copied yet: both were copied again, and the
    // name the swap passed through was reported gone (probe12 F3).
    auto recorded = [&](const ddl::TableRef& t) {
      const TableVersion* latest = history_.Latest(t.db, t.table);
      if (latest && ComparePositions(latest->since, since) >= 0) return true;
      auto it = copies_.find(t.ToString());
      return it != copies_.end() && !it->second.first.empty() && ComparePositions(it->second.first, since) >= 0;
    };
    // Some of the table's rows in the sink were copied at a point after this statement (a
    // resumed copy continues its unfinished ranges at new points; a worker reads a later table
    // in a new transaction): a statement that empties, drops or renames the table away would
    // take those rows with it, and their changes before that point are dropped as in the copy
    // (a new user's probe of a snapshot interrupted, its half-copied table truncated or dropped
    // and created again while sluice was stopped: 38,500 of 40,000 rows missing, silently).
    // Such a table is copied again instead (or the run stops).
    auto copied_after = [&](const ddl::TableRef& t) {
      auto it = copies_.find(t.ToString());
      return it != copies_.end() && ComparePositions(BinlogPosition{ev.file, ev.pos}, it->second.last) < 0;
    };
    // A RENAME between the earliest point of the table's copy and the end of its reads: a read
    // transaction opened before the statement and reading the table after it read the table
    // that then had the name, under a view from before (InnoDB: no error, a rename keeps the
    // table's identity), and the column check passes when the two look alike. A new user's
    // probe swapped two such tables while the snapshot ran: the replica's table held the
    // other table's rows, silently.
    auto copied_across = [&](const ddl::TableRef& t) {
      auto it = copies_.find(t.ToString());
      const BinlogPosition at{ev.file, ev.pos};
      return it != copies_.end() && !it->second.read_until.empty() && ComparePositions(it->second.first, at) < 0 &&
             ComparePositions(at, it->second.read_until) < 0;
    };
    auto reread_copied_after = [&](const ddl::TableRef& t, const ddl::TableRef* also) -> Status {
      if (!can_reread_)
        return stop(t.ToString(), "part of its copy in the replica was read after this statement, which would "
                                  "remove those rows from it");
      LogInfo("{}: \"{}\" on {}: part of its copy was read after this statement; copying {} again from the source",
              where, Shorten(txn.ddl_query), t.ToString(), also ? t.ToString() + " and " + also->ToString() : "it");
      rereads->push_back(t);
      if (also) rereads->push_back(*also);
      return Status::Ok();
    };
    if (!st.understood) {
      // The remedy the stop gives, `sluice resnapshot` of the table, copies it at a point after
      // this statement: its copy holds whatever the statement did, so the stream needs nothing
      // of it (a new user's probe: the run re-read the table, then stopped here again, every
      // time). Passed only when every captured table it names was copied after it.
      const BinlogPosition at{ev.file, ev.pos};
      bool copied_after = false;
      std::string names;
      auto judge = [&](const ddl::TableRef& t) {
        if (!selected(t)) return true;
        names += (names.empty() ? "" : " ") + t.ToString();
        copied_after = true;
        return recorded(t) || RowsDropped(t.ToString(), at);
      };
      bool all = true;
      for (const auto& t : st.tables) all = judge(t) && all;
      for (const auto& [from, to] : st.renames) all = judge(from) && judge(to) && all;
      for (const auto& t : partition_others) all = judge(t) && all;
      if (all && copied_after) {
        LogInfo("{}: \"{}\": sluice does not understand {}, but {} {} copied after it: skipped", where,
                Shorten(txn.ddl_query), st.not_understood, names, names.find(' ') == std::string::npos ? "was" : "were");
        return Status::Ok();
      }
      return stop(first, "sluice does not understand " + st.not_understood);
    }

    SourceInfo src;
    src.flavor = flavor_;
    src.server_id = ev.header.server_id;
    src.file = ev.file;
    src.pos = ev.pos;
    src.gtid = txn.gtid;
    src.timestamp = ev.header.timestamp;
    auto change = [&](SchemaChange::Kind kind, TableSchemaPtr before, TableSchemaPtr after) {
      SchemaChange c;
      c.kind = kind;
      c.before = std::move(before);
      c.after = std::move(after);
      c.ddl = txn.ddl_query;
      c.source = src;
      changes->push_back(std::move(c));
      return &changes->back();
    };
    // The definition in effect just before the statement, or a stop.
    auto current = [&](const ddl::TableRef& t) -> Result<TableSchemaPtr> {
      const TableVersion* v = history_.At(t.db, t.table, BinlogPosition{ev.file, ev.pos});
      if (!v) {
        return stop(t.ToString(), "sluice has no recorded definition of the table from before it (the "
                                  "checkpoint predates sluice's schema history, or the table was never "
                                  "captured)");
      }
      if (!v->schema) return TableSchemaPtr();
      return v->schema;
    };
    SchemaHistory next = history_;
    auto add = [&](const ddl::TableRef& t, TableSchemaPtr schema) -> Status {
      // A table made system-versioned (CREATE ... WITH SYSTEM VERSIONING, renamed in) cannot
      // be streamed: said here, with the remedy, not at its first row as a misread statement
      // (a new user's probe).
      if (schema && schema->system_versioned && selected(t))
        return Status::FailedPrecondition(fmt::format("{}: \"{}\": {}", where, Shorten(txn.ddl_query),
                                                      SystemVersionedNotCaptured(t.ToString())));
      return next.Add(t.db, t.table, TableVersion{since, std::move(schema), txn.ddl_query});
    };

    switch (st.kind) {
      case ddl::Kind::kTruncate: {
        const ddl::TableRef& t = st.tables.at(0);
        // Recorded: a re-read's copy, read after this statement, already holds its effect.
        if (!selected(t) || recorded(t)) return Status::Ok();
        if (copied_after(t)) {
          RETURN_IF_ERROR(reread_copied_after(t, nullptr));
          break;
        }
        if (const TableVersion* v = history_.At(t.db, t.table, BinlogPosition{ev.file, ev.pos}); v && v->schema) {
          *reset = v->schema;
        } else {
          ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(conn_, t.db, t.table));
          *reset = std::make_shared<const TableSchema>(std::move(loaded));
        }
        *reset_at = src;
        return Status::Ok();
      }
      case ddl::Kind::kCreateTable: {
        const ddl::TableRef& t = st.tables.at(0);
        if (!selected(t) || recorded(t)) return Status::Ok();
        if (st.sequence) {
          // CREATE TABLE ... SEQUENCE=1 makes a SEQUENCE: left out, as CREATE SEQUENCE (its rows
          // are passed by Resolve).
          LogInfo("{}: \"{}\" creates a SEQUENCE: sequences are left out of capture", where, Shorten(txn.ddl_query));
          return Status::Ok();
        }
        if (const TableVersion* v = history_.At(t.db, t.table, BinlogPosition{ev.file, ev.pos});
            v && v->schema) {
          if (st.if_not_exists) return Status::Ok();  // logged although the table exists
          if (!st.or_replace) return stop(t.ToString(), "the recorded definition says the table already exists");
        }
        TableSchema def;
        if (st.like) {
          // LIKE a table whose DDL between its re-read's mark and its copy were left to the copy
          // (being copied now, or copied at a point after this statement): the history holds
          // it as it was at the mark, not as it is here. The new table is copied from the
          // source instead (it took that stale definition: a moved column swapped two
          // columns' values, silently under MINIMAL metadata; a new user's probe).
          const bool like_stale = pending_.count(st.like->ToString()) > 0 || recorded(*st.like);
          if (like_stale) {
            if (can_reread_) {
              LogInfo("{}: \"{}\": {} is being copied again, so its definition here is the source's to tell: "
                      "copying {} from the source",
                      where, Shorten(txn.ddl_query), st.like->ToString(), t.ToString());
              rereads->push_back(t);
              break;
            }
            return stop(t.ToString(), fmt::format("LIKE {}: its definition at this statement is not recorded (its "
                                                  "DDL were left to a copy of it taken later)",
                                                  st.like->ToString()));
          }
          const TableVersion* v = history_.At(st.like->db, st.like->table, BinlogPosition{ev.file, ev.pos});
          if (!v || !v->schema) {
            if (can_reread_) { rereads->push_back(t); break; }
            return stop(t.ToString(), fmt::format("LIKE {}: sluice has no recorded definition of {} (only of "
                                                  "captured tables)",
                                                  st.like->ToString(), st.like->ToString()));
          }
          def = *v->schema;
        } else if (st.as_select || txn.create_select || !st.definition) {
          if (can_reread_) {
            LogInfo("{}: \"{}\" creates {} from a query: copying it from the source", where, Shorten(txn.ddl_query),
                    t.ToString());
            rereads->push_back(t);
            break;
          }
          return stop(t.ToString(), "CREATE TABLE ... SELECT takes its columns from the query");
        } else {
          def = *st.definition;
          // A DEFAULT whose stored value sluice cannot state (ddl::DefaultNotExact), or a
          // TIMESTAMP that is NOT NULL DEFAULT CURRENT_TIMESTAMP under
          // explicit_defaults_for_timestamp=OFF: the definition is the server's to tell (the
          // recorded default fills columns a MINIMAL row image leaves out, and the MySQL sink
          // creates the table with it).
          std::string why;
          const std::optional<uint64_t> mode = st.set_statement ? std::nullopt : SqlMode(ev);
          for (size_t i = 0; i < def.columns.size() && why.empty(); ++i) {
            const ColumnDesc& c = def.columns[i];
            const ddl::ColumnSyntax syntax = i < st.column_syntax.size() ? st.column_syntax[i] : ddl::ColumnSyntax{};
            if (c.default_kind == DefaultKind::kLiteral) {
              why = ddl::DefaultNotExact(c, syntax.default_written, mode.value_or(ddl::kUnknownSqlMode));
              if (!why.empty()) why = fmt::format("column `{}` {}", c.name, why);
            } else if (c.type == SqlType::kTimestamp && c.default_kind == DefaultKind::kNone && !syntax.null_written) {
              why = fmt::format("column `{}` TIMESTAMP saying neither NULL nor DEFAULT (NOT NULL DEFAULT "
                                "CURRENT_TIMESTAMP under explicit_defaults_for_timestamp=OFF)",
                                c.name);
            }
          }
          if (!why.empty() && can_reread_) {
            LogInfo("{}: \"{}\" creates {} with {}: copying it from the source", where, Shorten(txn.ddl_query),
                    t.ToString(), why);
            rereads->push_back(t);
            break;
          }
          if (def.collation.empty() && !st.default_collation.empty()) def.collation = st.default_collation;
          bool need_default = false;
          for (const ColumnDesc& c : def.columns) need_default = need_default || (HasCharset(c.type) && c.charset.empty());
          if (need_default) {
            ASSIGN_OR_RETURN(std::string coll, DatabaseCollation(t.db));
            ddl::FillDefaultCharsets(def, coll);
          }
        }
        def.db = t.db;
        def.table = t.table;
        auto ptr = std::make_shared<const TableSchema>(std::move(def));
        RETURN_IF_ERROR(add(t, ptr));
        change(SchemaChange::Kind::kCreate, nullptr, ptr);
        break;
      }
      case ddl::Kind::kAlterTable: {
        const ddl::TableRef& t = st.tables.at(0);
        // The other tables of EXCHANGE/CONVERT PARTITION are copied again (see above).
        for (const ddl::TableRef& o : partition_others) {
          if (!selected(o) || recorded(o) || o == t) continue;
          if (!can_reread_)
            return stop(o.ToString(), "its rows were exchanged with a partition of " + t.ToString() +
                                          " without row events; the replica cannot follow that");
          LogInfo("{}: \"{}\": the rows of {} changed with a partition of {}; re-reading {} from the source", where,
                  Shorten(txn.ddl_query), o.ToString(), t.ToString(), o.ToString());
          rereads->push_back(o);
        }
        if (!selected(t) || (!st.renames.empty() && recorded(t))) {
          // ALTER TABLE x RENAME TO captured: a table renamed into the captured set (or out of
          // a table whose re-read, after this statement, already knows it as gone).
          if (st.renames.empty()) return Status::Ok();
          const ddl::TableRef& to = st.renames[0].second;
          if (!selected(to) || recorded(to)) return Status::Ok();
          if (can_reread_) { rereads->push_back(to); break; }
          return stop(to.ToString(), "a table renamed into the captured set needs a snapshot, which sluice does not "
                                     "take while streaming yet");
        }
        if (recorded(t)) return Status::Ok();
        if (!st.renames.empty() &&
            (copied_after(t) || copied_across(t) || (selected(st.renames[0].second) && copied_across(st.renames[0].second)))) {
          const ddl::TableRef& to = st.renames[0].second;
          RETURN_IF_ERROR(reread_copied_after(t, selected(to) && !(to == t) ? &to : nullptr));
          break;
        }
        ASSIGN_OR_RETURN(TableSchemaPtr base, current(t));
        if (!base) return stop(t.ToString(), "the recorded definition says the table does not exist");
        const std::optional<uint64_t> mode = SqlMode(ev);
        auto applied = ddl::ApplyAlter(*base, st, {.strict = StrictSqlMode(mode), .sql_mode = mode.value_or(ddl::kUnknownSqlMode)});
        if (!applied.ok()) return stop(t.ToString(), std::string(applied.status().message()));
        if (applied->renamed && !selected(ddl::TableRef{applied->after.db, applied->after.table})) {
          // Renamed out of the captured set: no longer captured; its sink table follows a DROP.
          RETURN_IF_ERROR(add(t, nullptr));
          change(SchemaChange::Kind::kDrop, base, nullptr);
          break;
        }
        if (!applied->exact) {
          if (can_reread_) {
            const ddl::TableRef target = applied->renamed ? ddl::TableRef{applied->after.db, applied->after.table} : t;
            if (applied->renamed) {
              RETURN_IF_ERROR(add(t, nullptr));
              change(SchemaChange::Kind::kDrop, base, nullptr);
            }
            LogInfo("{}: \"{}\" on {}: {}; re-reading the table from the source", where, Shorten(txn.ddl_query),
                    t.ToString(), applied->why_not_exact);
            rereads->push_back(target);
            break;
          }
          return stop(t.ToString(), applied->why_not_exact +
                                        "; the replica cannot reproduce what the server did to the existing rows");
        }
        if (applied->renamed) {
          ddl::TableRef to{applied->after.db, applied->after.table};
          RETURN_IF_ERROR(add(t, nullptr));
          auto ptr = std::make_shared<const TableSchema>(std::move(applied->after));
          RETURN_IF_ERROR(add(to, ptr));
          change(SchemaChange::Kind::kAlter, base, ptr)->source_of = std::move(applied->source_of);
          break;
        }
        auto ptr = std::make_shared<const TableSchema>(std::move(applied->after));
        RETURN_IF_ERROR(add(t, ptr));
        change(SchemaChange::Kind::kAlter, base, ptr)->source_of = std::move(applied->source_of);
        break;
      }
      case ddl::Kind::kRenameTable: {
        // Pairs apply in order (swaps go through a third name); `now` tracks the definitions
        // as the statement moves them.
        std::map<std::pair<std::string, std::string>, TableSchemaPtr> now;
        bool any = false;
        std::vector<ddl::TableRef> renamed_in;  // captured names whose rows come from elsewhere
        {
          // Copied across the statement (copied_across): every captured name it leaves holding
          // a table, and every one it moves a table away from, is copied again; nothing of it
          // is applied (each copy is read after it). Names it only passes through are left out.
          bool across = false;
          for (const auto& [from, to] : st.renames)
            for (const ddl::TableRef* t : {&from, &to})
              across = across || (selected(*t) && !recorded(*t) && copied_across(*t));
          if (across) {
            if (!can_reread_)
              return stop(first, "a table it names was being copied by the snapshot across it, and may have been "
                                 "read under the wrong name");
            std::vector<ddl::TableRef> order;
            std::map<std::string, bool> holds;    // name -> holds a table after the statement
            std::set<std::string> existed;        // names that held a table before it
            for (const auto& [from, to] : st.renames) {
              if (!holds.count(from.ToString())) {
                existed.insert(from.ToString());
                order.push_back(from);
              }
              if (!holds.count(to.ToString())) order.push_back(to);
              holds[from.ToString()] = false;
              holds[to.ToString()] = true;
            }
            std::string names;
            for (const ddl::TableRef& t : order) {
              if (!selected(t) || recorded(t)) continue;
              if (!holds[t.ToString()] && !existed.count(t.ToString())) continue;
              rereads->push_back(t);
              names += (names.empty() ? "" : ", ") + t.ToString();
            }
            LogInfo("{}: \"{}\": the snapshot was copying a table it moves across it (a read transaction "
                    "opened before it may have read another table under the name); copying {} again from the source",
                    where, Shorten(txn.ddl_query), names);
            break;
          }
        }
        for (const auto& [from, to] : st.renames) {
          const bool fs = selected(from), ts = selected(to);
          if (!fs && !ts) continue;
          if (ts && recorded(to)) continue;  // read again after a restart, or re-read after it
          if (fs && !recorded(from) && copied_after(from) && now.find({from.db, from.table}) == now.end()) {
            // `to` is read again too, unless a later pair moves the table on (see renamed_in).
            RETURN_IF_ERROR(reread_copied_after(from, nullptr));
            now[{from.db, from.table}] = nullptr;
            if (ts) {
              now[{to.db, to.table}] = nullptr;
              renamed_in.push_back(to);
            }
            any = true;
            continue;
          }
          // `from` known: captured, and neither re-read after this statement nor moved by an
          // earlier pair into the name of a table being re-read.
          bool from_known = fs && !recorded(from);
          auto it = now.find({from.db, from.table});
          if (from_known && it != now.end() && !it->second) from_known = false;
          if (fs && !ts) {
            if (!from_known) continue;
            // Renamed out of the captured set: no longer captured (its later events are
            // filtered out); its sink table follows a DROP.
            TableSchemaPtr base = it != now.end() ? it->second : nullptr;
            if (it == now.end()) {
              ASSIGN_OR_RETURN(base, current(from));
            }
            now[{from.db, from.table}] = nullptr;
            RETURN_IF_ERROR(add(from, nullptr));
            if (base) change(SchemaChange::Kind::kDrop, base, nullptr);
            any = true;
            continue;
          }
          if (!from_known) {
            // Renamed into the captured set (from outside the patterns, or from a table whose
            // rows the replica does not hold): the table is copied from the source.
            if (!can_reread_) {
              return stop(to.ToString(), "renamed into the captured set (from " + from.ToString() +
                                             "); that needs a snapshot of the table, which sluice does not take "
                                             "while streaming yet");
            }
            if (fs) {
              now[{from.db, from.table}] = nullptr;
              if (!recorded(from)) RETURN_IF_ERROR(add(from, nullptr));
            }
            now[{to.db, to.table}] = nullptr;
            renamed_in.push_back(to);
            any = true;
            continue;
          }
          TableSchemaPtr base;
          if (it != now.end()) {
            base = it->second;
          } else {
            ASSIGN_OR_RETURN(base, current(from));
          }
          if (!base) return stop(from.ToString(), "the recorded definition says the table does not exist");
          TableSchema moved = *base;
          moved.db = to.db;
          moved.table = to.table;
          auto ptr = std::make_shared<const TableSchema>(std::move(moved));
          now[{from.db, from.table}] = nullptr;
          now[{to.db, to.table}] = ptr;
          RETURN_IF_ERROR(add(from, nullptr));
          RETURN_IF_ERROR(add(to, ptr));
          change(SchemaChange::Kind::kRename, base, ptr);
          any = true;
        }
        if (!any) return Status::Ok();
        // The names that hold a table once the whole statement ran (a swap's third name
        // does not).
        std::set<std::string> held;
        for (const auto& [from, to] : st.renames) {
          held.erase(from.ToString());
          held.insert(to.ToString());
        }
        std::set<std::string> marked;
        for (const ddl::TableRef& t : renamed_in) {
          // A later pair may have moved it on again; only names that still hold a table the
          // replica lacks are read.
          auto it = now.find({t.db, t.table});
          if (it != now.end() && it->second) continue;
          if (!held.count(t.ToString()) || recorded(t) || !marked.insert(t.ToString()).second) continue;
          rereads->push_back(t);
        }
        break;
      }
      case ddl::Kind::kDropTable: {
        for (const ddl::TableRef& t : st.tables) {
          if (!selected(t) || recorded(t)) continue;
          if (copied_after(t)) {
            RETURN_IF_ERROR(reread_copied_after(t, nullptr));
            continue;
          }
          const TableVersion* v = history_.At(t.db, t.table, BinlogPosition{ev.file, ev.pos});
          TableSchemaPtr before = v ? v->schema : nullptr;
          if (!before) {
            auto it = legacy_.find(t.ToString());
            if (it != legacy_.end()) before = it->second;
          }
          legacy_.erase(t.ToString());
          RETURN_IF_ERROR(add(t, nullptr));
          if (before) change(SchemaChange::Kind::kDrop, before, nullptr);
        }
        break;
      }
      case ddl::Kind::kNone: return Status::Ok();
    }
    next.Prune(resume);
    history_ = std::move(next);
    memo_.clear();
    history_.CacheJson();
    frozen_ = history_.empty() ? nullptr : std::make_shared<const SchemaHistory>(history_);
    return Status::Ok();
  }

  // Online re-reads beside the stream (checkpoint.h others_at/rereading): rows of `pending`
  // tables (being copied) are dropped, a DDL on one sets wait_for_copy(); rows and DDL of
  // tables not in `rereading` before `others_at` are in the sink already and are skipped.
  // `replayed` (checkpoint.h): rereading tables whose rows and DDL before the position given
  // are in the sink already, skipped like the others' before others_at.
  void SetSkipping(const std::set<std::string>& pending, const std::vector<std::string>& rereading,
                   const BinlogPosition& others_at, const std::map<std::string, BinlogPosition>& replayed) {
    pending_ = pending;
    rereading_ = std::set<std::string>(rereading.begin(), rereading.end());
    others_at_ = others_at;
    replayed_ = replayed;
    skipping_ = pending_.empty() && others_at_.empty() ? "" : "1";
    memo_.clear();
  }
  bool TakeWaitForCopy() {
    bool w = wait_for_copy_;
    wait_for_copy_ = false;
    return w;
  }

  // A data change logged as a statement at `at` (binlog_format=STATEMENT or MIXED in some
  // session): its rows are not in the binlog. It is passed when every table it can change
  // (schema/dml_tables.h) is one whose rows the stream would not apply at `at` anyway: not
  // selected, being copied again (pending: the binlog from the mark is replayed after the
  // copy, and the statement judged again then), or copied at a later point (the copy holds
  // its change; rows before copied_at are dropped the same way, Resolve). Otherwise, or when
  // the tables cannot be told, the run stops: nothing could apply it.
  // Before passing one in a database of the patterns (MentionsCaptured), the server is asked
  // what the text cannot show (HiddenChanges): a table it changes that is a view or has
  // triggers, or a stored function it calls, may change selected tables; the run stops then.
  Status OnStatementDml(std::string_view schema, std::string_view query, const BinlogPosition& at, bool ansi_quotes) {
    const std::string where = fmt::format("binlog {} at offset {}", at.file, at.pos);
    const std::string text = Shorten(query.substr(0, 120)) + (query.size() > 120 ? "..." : "");
    const char* kLogged =
        "was logged as a statement, not as rows (binlog_format=STATEMENT or MIXED in some session), and sluice "
        "reads row events only";
    ddl::DmlTables d = ddl::TablesChangedBy(query, schema, sql::kAnyServerVersion, ansi_quotes);
    if (lower_case_table_names_ != 0)
      for (ddl::TableRef& t : d.tables) {
        if (lower_case_table_names_ == 1) {
          t.db = sql::AsciiLower(t.db);
          t.table = sql::AsciiLower(t.table);
        } else if (auto stored = StoredNameIgnoringCase(t)) {
          t = *stored;
        }
      }
    if (!d.known) {
      if (!MentionsCaptured(schema, query)) return Status::Ok();
      return Status::FailedPrecondition(fmt::format(
          "{}: \"{}\" {}; sluice could not tell which tables it changes ({}), so it may change selected "
          "tables and sluice stops rather than guess. No run of this destination can get past it: start "
          "over into a new destination (a new sink path or database; its snapshot is taken after this "
          "statement), and set binlog_format=ROW globally and in every session (docs/schema-changes.md)",
          where, text, kLogged, d.unknown));
    }
    std::string changed, recopied;
    for (const ddl::TableRef& t : d.tables) {
      if (!TableSelected(filter_, t.db, t.table)) continue;
      const std::string key = t.ToString();
      std::string& list = RowsDropped(key, at) ? recopied : changed;
      list += (list.empty() ? "" : " ") + key;
    }
    // What the text cannot show is asked first: a copy again does not get past it, and the
    // advice to copy again came first (a new user's probe followed it into the second stop).
    if (MentionsCaptured(schema, query)) {
      ASSIGN_OR_RETURN(std::string hidden, HiddenChanges(d));
      if (!hidden.empty())
        return Status::FailedPrecondition(fmt::format(
            "{}: \"{}\" {}; {}{}, which may change selected tables, and sluice stops rather than guess. "
            "No run of this destination can get past it (copying tables again does not: the tables the "
            "server changed are not known): start over into a new destination (a new sink path or "
            "database; its snapshot is taken after this statement), and set binlog_format=ROW globally "
            "and in every session (docs/schema-changes.md)",
            where, text, kLogged,
            changed.empty() ? "it names no selected table it changes, but "
                            : "it changes selected table(s) " + changed + ", and ",
            hidden));
    }
    if (!changed.empty())
      return Status::FailedPrecondition(fmt::format(
          "{}: \"{}\" changes selected table(s) {} and {}: it cannot be applied. To get past it, copy "
          "the table(s) again, after the statement: `sluice resnapshot --config FILE {}`, then run "
          "sluice again (the stream passes the statement for tables copied after it); and set "
          "binlog_format=ROW globally and in every session (docs/schema-changes.md)",
          where, text, changed, kLogged, changed));
    if (recopied.empty())
      LogInfo("{}: \"{}\" was logged as a statement and changes no selected table: skipped", where, text);
    else
      LogInfo("{}: \"{}\" was logged as a statement; the stream drops the rows of the selected table(s) it "
              "changes ({}) here (being copied again, or copied after it): skipped", where, text, recopied);
    return Status::Ok();
  }

  // For a statement-logged change passed by its table names: which of the tables it changes
  // are views or have triggers, and which names it calls are stored functions, as the server
  // has them now ("" when none). What the user may not see (information_schema shows only
  // objects the user has a privilege on) is not found.
  Result<std::string> HiddenChanges(const ddl::DmlTables& d) {
    auto in = [&](const std::vector<ddl::TableRef>& refs) {
      std::string list;
      for (const ddl::TableRef& t : refs)
        list += (list.empty() ? "(" : ", (") + conn_.Quote(t.db) + ", " + conn_.Quote(t.table) + ")";
      return list;
    };
    std::vector<std::string> parts;
    if (!d.tables.empty()) {
      const std::string tables = in(d.tables);
      parts.push_back("SELECT 'is a view', TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
                      "TABLE_TYPE = 'VIEW' AND (TABLE_SCHEMA, TABLE_NAME) IN (" + tables + ")");
      // Only triggers the statement's kind can fire (an UPDATE does not fire an INSERT trigger;
      // INSERT ... ON DUPLICATE KEY UPDATE fires both; REPLACE deletes and inserts).
      const char* events = d.kind == ddl::DmlKind::kUpdate   ? "'UPDATE'"
                           : d.kind == ddl::DmlKind::kDelete  ? "'DELETE'"
                           : d.kind == ddl::DmlKind::kInsert  ? "'INSERT', 'UPDATE'"
                           : d.kind == ddl::DmlKind::kReplace ? "'INSERT', 'DELETE'"
                                                              : "'INSERT', 'UPDATE', 'DELETE'";
      parts.push_back("SELECT CONCAT('has an ', LOWER(EVENT_MANIPULATION), ' trigger'), EVENT_OBJECT_SCHEMA, "
                      "EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE (EVENT_OBJECT_SCHEMA, "
                      "EVENT_OBJECT_TABLE) IN (" + tables + ") AND EVENT_MANIPULATION IN (" + events + ")");
    }
    if (!d.calls.empty())
      parts.push_back("SELECT 'is a stored function it calls', ROUTINE_SCHEMA, ROUTINE_NAME FROM "
                      "information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND (ROUTINE_SCHEMA, "
                      "ROUTINE_NAME) IN (" + in(d.calls) + ")");
    if (parts.empty()) return std::string();
    std::string sql;
    for (const std::string& p : parts) sql += (sql.empty() ? "" : " UNION ALL ") + p;
    ASSIGN_OR_RETURN(QueryResult r, conn_.Query(sql));
    std::string out;
    for (const auto& row : r.rows) {
      if (row.size() < 3 || !row[0] || !row[1] || !row[2]) continue;
      const std::string item = fmt::format("{}.{} {}", *row[1], *row[2], *row[0]);
      if (out.find(item) == std::string::npos) out += (out.empty() ? "" : "; ") + item;
    }
    return out;
  }

  // Whether a statement that could not be parsed may touch a captured table: its default
  // database, or a literal database name of the patterns written in it.
  bool MentionsCaptured(std::string_view schema_text, std::string_view query_text) const {
    // Where names ignore case, so does the search.
    const std::string lowered_schema = lower_case_table_names_ ? sql::AsciiLower(schema_text) : std::string();
    const std::string lowered_query = lower_case_table_names_ ? sql::AsciiLower(query_text) : std::string();
    const std::string_view schema = lower_case_table_names_ ? std::string_view(lowered_schema) : schema_text;
    const std::string_view query = lower_case_table_names_ ? std::string_view(lowered_query) : query_text;
    for (const auto& p : filter_.include) {
      const std::string pattern = lower_case_table_names_ ? sql::AsciiLower(p) : p;
      std::string_view db = std::string_view(pattern).substr(0, pattern.find('.'));
      if (GlobMatch(db, schema)) return true;
      bool literal = db.find_first_of("*?") == std::string_view::npos;
      if (literal && (query.find(std::string(db) + ".") != std::string_view::npos ||
                      query.find("`" + std::string(db) + "`") != std::string_view::npos ||
                      query.find("\"" + std::string(db) + "\"") != std::string_view::npos))
        return true;
    }
    return false;
  }

 private:
  // Whether db.table is a MariaDB SEQUENCE, which sluice leaves out (as the snapshot's
  // ListTables and compare/verify do: TABLE_TYPE 'SEQUENCE'). Its rows are the sequence's
  // state (NEXTVAL, SETVAL, ALTER SEQUENCE), not data: captured as a keyless table it grew a
  // row per change (a new user's probe). Logged once per sequence; asked once per table.
  Result<bool> IsSequence(const std::string& db, const std::string& table) {
    if (flavor_ != Flavor::kMariaDB) return false;
    const std::string key = db + "." + table;
    auto it = is_sequence_.find(key);
    if (it != is_sequence_.end()) return it->second;
    ASSIGN_OR_RETURN(QueryResult r, conn_.Query("SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                                                conn_.Quote(db) + " AND TABLE_NAME = " + conn_.Quote(table)));
    const bool sequence = !r.rows.empty() && !r.rows[0].empty() && r.rows[0][0] && *r.rows[0][0] == "SEQUENCE";
    if (sequence)
      LogInfo("{} is a SEQUENCE: sequences are left out of capture (their rows are the sequence's state, not data; "
              "docs/schema-changes.md)", key);
    is_sequence_[key] = sequence;
    return sequence;
  }

  // The database's default collation, for columns a CREATE TABLE gives no character set.
  Result<std::string> DatabaseCollation(const std::string& db) {
    auto it = db_collation_.find(db);
    if (it != db_collation_.end()) return it->second;
    ASSIGN_OR_RETURN(QueryResult r, conn_.Query("SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
                                                "WHERE SCHEMA_NAME = " + conn_.Quote(db)));
    std::string coll;
    if (!r.rows.empty() && !r.rows[0].empty() && r.rows[0][0]) coll = *r.rows[0][0];
    db_collation_[db] = coll;
    return coll;
  }

  // The name the history holds for `t` (a table that exists: a live version) when it differs
  // from `t` only in ASCII case; nothing when the history holds `t` itself, or no such table.
  std::optional<ddl::TableRef> StoredNameIgnoringCase(const ddl::TableRef& t) const {
    if (const TableVersion* v = history_.Latest(t.db, t.table); v && v->schema) return std::nullopt;
    const std::string want = t.db + "." + t.table;
    for (const std::string& name : history_.Tables()) {
      if (!sql::EqualsIgnoreAsciiCase(name, want)) continue;
      ddl::TableRef stored{name.substr(0, t.db.size()), name.substr(t.db.size() + 1)};
      const TableVersion* v = history_.Latest(stored.db, stored.table);
      if (v && v->schema) return stored;
    }
    return std::nullopt;
  }

  // A statement's table names as the server stores them. Row events (TABLE_MAP) name a table
  // as stored, the statement as it was written, and with lower_case_table_names the two may
  // differ in case: `ALTER TABLE Shop.Orders ...` changes shop.orders. Read as another table's
  // statement, its change was missed, and a reorder of two columns of one type put their
  // values in each other's columns (binlog_row_metadata=MINIMAL, where rows carry no names).
  // 1: names are stored in lower case: the statement's are lowered (ASCII letters; the
  // server lowers others too). 2: names are stored as created and compared without case: a
  // name that differs from a table the history holds only in case stops the run (which of
  // the statement's names are new and which are existing ones is not worth guessing).
  Status NormalizeNames(ddl::Statement& st, const std::string& where, std::string_view query) {
    if (lower_case_table_names_ == 0) return Status::Ok();
    if (lower_case_table_names_ == 1) {
      ddl::ForEachTableRef(st, [](ddl::TableRef& t) {
        t.db = sql::AsciiLower(t.db);
        t.table = sql::AsciiLower(t.table);
      });
      st.drop_database = sql::AsciiLower(st.drop_database);
      return Status::Ok();
    }
    std::string mismatch;
    ddl::ForEachTableRef(st, [&](ddl::TableRef& t) {
      if (!mismatch.empty() || t.table.empty()) return;
      if (auto stored = StoredNameIgnoringCase(t))
        mismatch = fmt::format("`{}`.`{}`, which the server holds as `{}`.`{}`", t.db, t.table, stored->db, stored->table);
    });
    if (mismatch.empty()) return Status::Ok();
    return Status::FailedPrecondition(fmt::format(
        "{}: the statement \"{}\" names {} (lower_case_table_names = 2: names are compared without case, and "
        "row events name the table as stored); sluice stops rather than guess which definition its rows follow: "
        "copy the table again with `sluice resnapshot --config FILE db.table`, then run sluice again; write "
        "table names in statements as they were created (docs/schema-changes.md)",
        where, Shorten(std::string(query)), mismatch));
  }

  Connection& conn_;
  const TableFilter& filter_;
  Flavor flavor_;
  bool can_reread_;
  int lower_case_table_names_;  // the source's @@lower_case_table_names (NormalizeNames)
  SchemaHistory history_;
  std::shared_ptr<const SchemaHistory> frozen_;
  // Resolve's memo, by table id: the layout last resolved and its result (a null schema for
  // a table not selected).
  struct Memo {
    binlog::TableMap map;
    TableSchemaPtr schema;
    std::shared_ptr<const binlog::TableMap> same;  // an object equal to `map`, when known
  };
  static bool SameLayout(const binlog::TableMap& a, const binlog::TableMap& b) {
    return a.table_id == b.table_id && a.db == b.db && a.table == b.table && a.column_types == b.column_types &&
           a.column_meta == b.column_meta && a.nullable == b.nullable && a.is_unsigned == b.is_unsigned &&
           a.collation_ids == b.collation_ids && a.column_names == b.column_names && a.labels == b.labels &&
           a.geometry_types == b.geometry_types && a.primary_key == b.primary_key && a.visible == b.visible;
  }
  std::unordered_map<uint64_t, Memo> memo_;
  std::map<std::string, TableSchemaPtr> legacy_;
  std::map<std::string, BinlogPosition> copied_at_;
  // Each copied table's snapshot points (checkpoint.h): the earliest and the last its rows
  // were read at, and the position after its last read (read_until; empty in older checkpoints).
  struct CopyPoints {
    BinlogPosition first, last, read_until;
  };
  std::map<std::string, CopyPoints> copies_;
  std::map<std::string, std::string> db_collation_;
  std::map<std::string, bool> is_sequence_;
  bool Skipped(const std::string& key, const BinlogPosition& event) const {
    if (pending_.count(key)) return true;
    return !others_at_.empty() && !Unapplied(key, event) && ComparePositions(event, others_at_) < 0;
  }
  // Whether `key` is a re-read table whose replay has not yet applied what is at `event`.
  bool Unapplied(const std::string& key, const BinlogPosition& event) const {
    if (!rereading_.count(key)) return false;
    auto r = replayed_.find(key);
    return r == replayed_.end() || ComparePositions(event, r->second) >= 0;
  }
  // Whether the stream drops rows of `key` at `event` (see ResolveUncached): the table is
  // being copied again, or its copy was read at later points.
  bool RowsDropped(const std::string& key, const BinlogPosition& event) const {
    if (!skipping_.empty() && Skipped(key, event)) return true;
    auto c = copied_at_.find(key);
    return c != copied_at_.end() && ComparePositions(event, c->second) < 0;
  }
  std::string skipping_;  // non-empty while SetSkipping has anything to skip
  std::set<std::string> pending_, rereading_;
  BinlogPosition others_at_;
  std::map<std::string, BinlogPosition> replayed_;
  bool wait_for_copy_ = false;
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

// Whether the checkpoint's position has no recorded creation time of its file (a snapshot's
// point, an older sluice's checkpoint): the stream learns it from the dump (RunOnce), even when
// there is nothing to read up to the target.
bool LacksCreationTime(const Checkpoint& c) {
  return !c.stream_start.empty() && !(c.witness.AppliesTo(c.stream_start) && c.witness.created != 0);
}

struct RawEvent {
  std::string bytes;
  // Its CRC32 footer checked on the reader thread (about 7% of the decoding thread's CPU in
  // the issue 8 profile; the decoding thread is the stream's critical path), so the decoder
  // skips it.
  bool crc_checked = false;
};

// What a raw event holds in memory, as the reader's queue counts it.
size_t RawEventBytes(const std::string& bytes) { return bytes.capacity(); }

// After its text is made (Preformatter), a transaction keeps of each change only what the
// sink writer counts (table, op, source timestamp: WriteGroups); the values and the rest are
// freed. Returns the bytes it still holds.
size_t StripFormatted(Transaction& txn) {
  for (RowChange& c : txn.changes) {
    Row().swap(c.before);
    Row().swap(c.after);
    std::string().swap(c.source.file);
    std::string().swap(c.source.gtid);
  }
  return txn.changes.capacity() * sizeof(RowChange) + txn.counted.HeapBytes() +
         (txn.preformatted ? txn.preformatted->capacity() : 0);
}

}  // namespace

// A sink call of an online re-read's copy, made on the copy's thread and carried out by the
// sink writer (the sink stays single-writer): the writer merges the copy's progress of its
// tables (and the versions the copy recorded in the schema history) into the state it has
// committed, calls `call` with that state's text, and reports the outcome.
struct CopyCall {
  std::function<Status(Sink&, const std::string& checkpoint)> call;
  bool stores_checkpoint = true;  // false: PrepareTable (nothing durable)
  std::vector<std::string> names;                       // the copy's tables
  std::map<std::string, TableSnapshotProgress> tables;  // their progress after the call
  std::shared_ptr<const SchemaHistory> schemas;         // the copy's history
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  void Finish(Status st) {
    {
      std::lock_guard<std::mutex> l(mu);
      done = true;
      status = std::move(st);
    }
    cv.notify_all();
  }
};

namespace {

// The Sink the copy beside the stream writes to: every call becomes a CopyCall through the
// writer's queue, waited for (the coordinator expects each call done when it returns).
class CopySink final : public Sink {
 public:
  CopySink(Sink& real, const Checkpoint& ckpt, std::vector<std::string> names,
           std::function<Status(std::shared_ptr<CopyCall>)> send, const std::atomic<bool>& writer_gone)
      : real_(real), ckpt_(ckpt), names_(std::move(names)), send_(std::move(send)), writer_gone_(writer_gone) {}

  std::unique_ptr<Preformatter> NewPreformatter() const override { return real_.NewPreformatter(); }
  std::unique_ptr<Preformatter> NewSnapshotPreformatter() const override { return real_.NewSnapshotPreformatter(); }
  Result<std::optional<std::string>> LoadCheckpoint() override {
    return Status::Internal("the copy beside the stream does not load checkpoints");
  }
  Status PrepareTable(const TableSchema& t) override {
    return Call([&t](Sink& s, const std::string&) { return s.PrepareTable(t); }, false);
  }
  Status Apply(const Transaction& txn) override {
    // The coordinator's chunk: its checkpoint text is replaced by the merged state's for the call.
    auto& t = const_cast<Transaction&>(txn);
    return Call([&t](Sink& s, const std::string& cp) {
      std::string own = std::move(t.checkpoint);
      t.checkpoint = cp;
      Status st = s.Apply(t);
      t.checkpoint = std::move(own);
      return st;
    });
  }
  // The coordinator's chunks ready together, one sink transaction (a re-read committed each
  // fetch on its own: 486 syncs for a table of 1 M rows into SQLite, 50 grouped; BENCHMARKS.md).
  // Only sinks that record a group's last checkpoint get groups (CheckpointsEachTransaction).
  bool CheckpointsEachTransaction() const override { return real_.CheckpointsEachTransaction(); }
  bool KeepsRecordsPastTheCheckpoint() const override { return real_.KeepsRecordsPastTheCheckpoint(); }
  Status ApplyGroup(const std::vector<Transaction>& group) override {
    if (group.empty()) return Status::Ok();
    auto& last = const_cast<Transaction&>(group.back());
    return Call([&group, &last](Sink& s, const std::string& cp) {
      std::string own = std::move(last.checkpoint);
      last.checkpoint = cp;
      Status st = s.ApplyGroup(group);
      last.checkpoint = std::move(own);
      return st;
    });
  }
  Status ResetTable(const TableSchema& table, const std::string&) override {
    return Call([&table](Sink& s, const std::string& cp) { return s.ResetTable(table, cp); });
  }
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string&) override {
    return Call([&changes](Sink& s, const std::string& cp) { return s.ApplySchemaChanges(changes, cp); });
  }
  Status SaveCheckpoint(const std::string&) override {
    return Call([](Sink& s, const std::string& cp) { return s.SaveCheckpoint(cp); });
  }
  Status Flush() override { return Status::Ok(); }

 private:
  Status Call(std::function<Status(Sink&, const std::string&)> fn, bool stores = true) {
    auto c = std::make_shared<CopyCall>();
    c->call = std::move(fn);
    c->stores_checkpoint = stores;
    c->names = names_;
    for (const std::string& n : names_) {
      auto it = ckpt_.tables.find(n);
      if (it != ckpt_.tables.end()) c->tables[n] = it->second;
    }
    c->schemas = ckpt_.schemas;
    RETURN_IF_ERROR(send_(c));
    std::unique_lock<std::mutex> l(c->mu);
    while (!c->done) {
      c->cv.wait_for(l, std::chrono::milliseconds(100));
      if (!c->done && writer_gone_.load()) return Status::Cancelled("the sink writer stopped");
    }
    return c->status;
  }

  Sink& real_;
  const Checkpoint& ckpt_;
  std::vector<std::string> names_;
  std::function<Status(std::shared_ptr<CopyCall>)> send_;
  const std::atomic<bool>& writer_gone_;
};

}  // namespace

// Marks a sink call under way for the watchdog (RunOnce).
struct Streamer::SinkBusy {
  Streamer* s;
  SinkBusy(Streamer* streamer, const char* what) : s(streamer) {
    s->sink_busy_what_ = what;
    s->sink_busy_since_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
  }
  ~SinkBusy() { s->sink_busy_since_ms_ = 0; }
};

Status Streamer::CallSink(const char* what, const std::function<Status()>& call) {
  SinkBusy busy(this, what);
  return CallSinkRetrying(what, "the same transaction",
                          fmt::format(" (the stream position stays at {})", checkpoint_.stream_start.ToString()),
                          options_.stop, call);
}

Status Streamer::Run(const Checkpoint& start, Sink& sink) {
  checkpoint_ = start;
  caught_up_ = false;
  auto last_connected = Clock::now();
  // Since when the destination fails without a commit in between (a large transaction's parts
  // failing, read again from the source each time): those are not the source's outages.
  bool sink_failing = false;
  Clock::time_point sink_failing_since = Clock::now();
  ReconnectBackoff backoff(std::chrono::milliseconds(250),
                           std::chrono::milliseconds(options_.reconnect_max_backoff_ms));
  while (true) {
    bool again = false;
    Status st;
    // Progress is a sink commit that moved the resume position, not a connection
    // (reconnect_backoff.h): a sink failing the same large transaction each time reconnects
    // at a growing pace.
    const BinlogPosition position_before = checkpoint_.stream_start;
    const std::string gtid_before = checkpoint_.gtid;
    std::optional<Clock::time_point> connected_at;
    if (checkpoint_.snapshot_done) blocking_reread_ = false;
    const bool reread = options_.reread && !checkpoint_.snapshot_done && blocking_reread_;
    if (reread) {
      // A DDL met on a table while it was copied beside the stream: the copy (started over
      // with the new definition) runs with the stream stopped before that statement.
      st = options_.reread(checkpoint_, sink, options_.stop);
      if (st.ok()) blocking_reread_ = false;
      if (st.ok() && Stopping(options_.stop)) return st;
      again = st.ok();
    } else if (!options_.target.empty() && ComparePositions(checkpoint_.stream_start, options_.target) >= 0 &&
               !LacksCreationTime(checkpoint_) &&
               (checkpoint_.others_at.empty() || ComparePositions(checkpoint_.stream_start, checkpoint_.others_at) >= 0) &&
               (checkpoint_.snapshot_done || !options_.reread)) {
      checkpoint_.others_at = BinlogPosition{};
      checkpoint_.rereading.clear();
      checkpoint_.replayed.clear();
      Status saved = CallSink("save checkpoint", [&] { return sink.SaveCheckpoint(checkpoint_.ToJson()); });
      caught_up_ = saved.ok();
      return saved;
    } else {
      st = RunOnce(sink, &connected_at, &again);
    }
    if (st.code() == StatusCode::kCancelled && Stopping(options_.stop)) return Status::Ok();
    if (st.ok() && Stopping(options_.stop)) return st;
    if (st.ok() && again) continue;
    if (st.ok()) return st;
    // Only source errors are kUnavailable here: CallSink retries transient sink errors in
    // place and turns the others into definite ones (a large transaction's parts, which
    // cannot be retried in place, are read again from the source: kUnavailable too).
    const bool moved = ComparePositions(checkpoint_.stream_start, position_before) != 0 ||
                       checkpoint_.gtid != gtid_before;
    if (st.code() == StatusCode::kDataLoss && moved && !Stopping(options_.stop)) {
      // [1236] on a dump that had moved on (RESET MASTER or a purge while streaming): its
      // message names where that dump started. Asked again from the last committed
      // checkpoint, the server says whether that is still there, and the error names it.
      LogWarning("{}; asking the server again from the last committed checkpoint {}", st.ToString(),
                 checkpoint_.stream_start.empty() ? "GTID " + checkpoint_.gtid : checkpoint_.stream_start.ToString());
      continue;
    }
    if (st.code() != StatusCode::kUnavailable) return st;
    const auto now = Clock::now();
    if (connected_at) last_connected = now;
    const auto wait = backoff.AfterFailure(
        moved, connected_at ? std::chrono::duration_cast<std::chrono::milliseconds>(now - *connected_at)
                            : std::chrono::milliseconds(0));
    if (Stopping(options_.stop)) return Status::Ok();  // checkpoint_ is what the sink holds
    auto down_for = std::chrono::duration_cast<std::chrono::seconds>(now - last_connected);
    if (options_.reconnect_give_up_seconds > 0 &&
        down_for.count() >= options_.reconnect_give_up_seconds) {
      return st.WithContext(fmt::format("gave up reconnecting after {} s (source.reconnect_timeout_seconds)",
                                        down_for.count()));
    }
    metrics::Registry::Global()
        .Counter("sluice_reconnects_total", "reconnects to the source after a lost connection",
                 {{"component", "stream"}})
        .Add(1);
    // A large transaction's parts failed in the sink (part_failure): the source is fine, the
    // destination is not (a full disk, a lock); said so, with how long it has been failing. A
    // new user's probe saw "reconnecting ... down for 0 s" for 30 s of a full disk.
    const bool sink_side = st.message().rfind("sink: ", 0) == 0;
    if (!sink_side) SourceConnectedGauge().Set(0);
    if (!sink_side || moved) sink_failing = false;
    if (sink_side && !sink_failing) {
      sink_failing = true;
      sink_failing_since = now;
    }
    if (sink_side)
      LogWarning("{}; the destination is failing, not the source: reading the transaction again from {} in {} ms "
                 "(attempt {}, failing for {} s)",
                 st.ToString(), checkpoint_.stream_start.ToString(), wait.count(), backoff.attempt(),
                 std::chrono::duration_cast<std::chrono::seconds>(now - sink_failing_since).count());
    else
      LogWarning("{}; reconnecting from {} in {} ms (attempt {}, down for {} s)", st.ToString(),
                 checkpoint_.stream_start.ToString(), wait.count(), backoff.attempt(), down_for.count());
    auto until = Clock::now() + wait;
    while (Clock::now() < until && !Stopping(options_.stop))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status Streamer::RunOnce(Sink& sink, std::optional<std::chrono::steady_clock::time_point>* connected_at,
                         bool* again) {
  ASSIGN_OR_RETURN(auto meta_conn, Connection::Connect(options_.connection));
  if (reconnecting_ && checkpoint_.source.known() && checkpoint_.flavor != Flavor::kUnknown) {
    // The address may lead to another server now (a failover behind a virtual IP, a proxy or
    // a DNS name): its binlog file/position mean nothing for this checkpoint. Decided as at a
    // run's start (stream/resume.h PlanResume); a new user's probe: the reconnect resumed by
    // the old server's position, and stopped saying the history was reset (exit 3).
    ASSIGN_OR_RETURN(ServerGtidState server, ReadServerGtidState(*meta_conn, checkpoint_.flavor));
    if (server.identity.known() && !(server.identity == checkpoint_.source)) {
      Result<ResumePlan> planned = PlanResume(&checkpoint_, server);
      if (!planned.ok() && planned.status().code() == StatusCode::kDataLoss &&
          planned.status().message().find(": it is behind") != std::string_view::npos) {
        // A replica that has not yet applied what the destination holds (MariaDB: the same
        // server's GTIDs in the domain, lower): it may catch up, so the run waits, reconnecting
        // with backoff, instead of stopping (a new user's probe: exit 3 for a replica behind).
        return Status::Unavailable(fmt::format("{}; waiting for it to catch up", planned.status().message()));
      }
      ASSIGN_OR_RETURN(ResumePlan plan, std::move(planned));
      LogWarning("the source address leads to another server now: {}", plan.note);
      if (plan.by_gtid) by_gtid_after_switch_ = true;
    }
  }
  ReplicationOptions ropts;
  ropts.server_id = options_.replica_server_id;
  ropts.start = checkpoint_.stream_start;
  if ((options_.resume_by_gtid || by_gtid_after_switch_) && !checkpoint_.gtid.empty() && checkpoint_.stream_start.empty())
    ropts.gtid = checkpoint_.gtid;
  // By position, the dump shows whether the server's file still holds the history the
  // checkpoint was written on (checkpoint.h PositionWitness): it starts at the last event the
  // sink holds, which the reader checks and drops (stream/resume.h WitnessCheck).
  WitnessCheck witness_check(ropts.gtid.empty() ? checkpoint_.witness : PositionWitness{}, checkpoint_.stream_start);
  if (ropts.gtid.empty()) ropts.start = witness_check.dump_start();
  ropts.heartbeat_period_s = options_.heartbeat_seconds;
  if (reconnecting_ && ropts.gtid.empty() && !checkpoint_.stream_start.empty()) {
    // A lost dump may have been ended by RESET MASTER: a file of the same name then holds
    // another history, and a dump from our offset in it could start at an event boundary
    // there and stream on with everything before it missing. The run's start checked this
    // (cli/run.cc); a reconnect checks it again (stream/resume.h).
    ASSIGN_OR_RETURN(HistoryFacts h, ReadHistoryAt(*meta_conn, checkpoint_.flavor, checkpoint_.stream_start,
                                                   checkpoint_.gtid, "", "", nullptr));
    const HistoryCheck held = CheckHistoryHolds(checkpoint_, h);
    if (held.verdict == HistoryVerdict::kReset) return Status::DataLoss(HistoryResetMessage(held));
    if (held.verdict == HistoryVerdict::kCannotTell) return Status::FailedPrecondition(held.detail);
    if (held.verdict == HistoryVerdict::kHolds && !held.detail.empty()) LogWarning("{}", held.detail);
  }
  ASSIGN_OR_RETURN(auto session, ReplicationSession::Start(options_.connection, ropts));
  SourceConnectedGauge().Set(1);
  *connected_at = Clock::now();
  if (reconnecting_)
    LogInfo("reconnected; asking the server for the binlog from {}",
            ropts.gtid.empty() ? checkpoint_.stream_start.ToString() : "GTID " + ropts.gtid);
  reconnecting_ = true;

  const Flavor flavor = session->flavor();
  if (checkpoint_.flavor == Flavor::kUnknown) checkpoint_.flavor = flavor;

  // Large transactions go to the sink in parts when it can take them (see max_buffered_bytes).
  // With a formatting thread a part is held in one more place (formatting: its values and its
  // text at once), so parts are half as large.
  std::unique_ptr<Preformatter> formatter = sink.NewPreformatter();
  const size_t cap = options_.max_buffered_bytes;
  const size_t part_bytes =
      cap > 0 && sink.SupportsParts() ? std::max<size_t>(cap / (formatter ? 16 : 8), 1) : 0;
  const size_t raw_queue_bytes =
      cap > 0 ? std::min(options_.queue_max_bytes, std::max<size_t>(cap / 4, 1)) : options_.queue_max_bytes;
  BoundedQueue<RawEvent> queue(options_.queue_max_events, raw_queue_bytes);
  queue.set_wake_batch(64, std::chrono::milliseconds(1));
  // Event buffers the decoder is done with, filled again by the reader: an allocation per
  // event (made on the reader's thread, freed on the decoder's) cost more than the copy into
  // it. Buffers of at most kPoolMaxEvent bytes are kept, up to kPoolBytes in the pool and as
  // much again on the reader's side (the list it took last).
  constexpr size_t kPoolBytes = 4u << 20, kPoolMaxEvent = 16u << 10;
  constexpr size_t kPrefetchBytes = 2048;  // of the next event, while one is decoded
  std::mutex pool_mu;
  std::vector<std::string> pool;  // guarded by pool_mu
  size_t pool_bytes = 0;          // guarded by pool_mu: capacity of the buffers in `pool`
  std::atomic<bool> reader_stop{false};
  std::thread reader([&] {
    std::vector<std::string> spare;  // taken from `pool` a whole list at a time
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
      if (!witness_check.done()) {
        auto checked = witness_check.Feed(*ev);
        if (!checked.ok()) {
          queue.Close(checked.status());
          return;
        }
        if (*checked == WitnessCheck::Action::kDrop) continue;
      }
      if (spare.empty()) {
        std::lock_guard<std::mutex> l(pool_mu);
        spare.swap(pool);
        pool_bytes = 0;
      }
      std::string buf;
      if (!spare.empty()) {
        buf = std::move(spare.back());
        spare.pop_back();
      }
      // A recycled buffer too small for the event would grow to twice its capacity (the
      // string's growth rule), not to the event's size: a fresh one is allocated exactly.
      if (buf.capacity() < ev->size()) std::string().swap(buf);
      buf.assign(reinterpret_cast<const char*>(ev->data()), ev->size());
      RawEvent raw{std::move(buf), binlog::EventChecksumMatches(*ev)};
      // The queue's byte bound counts what the buffer holds in memory (its capacity), not the
      // event's size: recycled buffers are larger than most events they carry, and counting
      // sizes let the queue hold up to twice max_buffered_bytes / 4 (issue 8: SQLite at
      // 303 MiB under a 256 MiB cap, BENCHMARKS.md).
      const size_t n = RawEventBytes(raw.bytes);
      if (!queue.Push(std::move(raw), n).ok()) return;
    }
  });
  auto join_reader = [&] {
    reader_stop = true;
    queue.Close(Status::Cancelled("stream finished"));
    session->Cancel();  // a Fetch blocked on a silent server returns now
    reader.join();
  };

  // With lower_case_table_names the binlog's statements may name tables in another case than
  // its row events (SchemaRegistry::NormalizeNames).
  int lower_case_table_names = 0;
  {
    ASSIGN_OR_RETURN(QueryResult lc, meta_conn->Query("SELECT @@lower_case_table_names"));
    if (!lc.rows.empty() && !lc.rows[0].empty() && lc.rows[0][0]) lower_case_table_names = std::atoi(lc.rows[0][0]->c_str());
  }
  SchemaRegistry schemas(*meta_conn, options_.filter, checkpoint_, flavor, options_.reread != nullptr,
                         lower_case_table_names);
  HandoffRule handoff = SnapshotHandoff(checkpoint_, *meta_conn);
  BinlogPosition current_event;
  const std::shared_ptr<const binlog::TableMap>* current_map = nullptr;  // the event's, while handle() runs
  binlog::EventStream stream;
  stream.SetPosition(checkpoint_.stream_start.file, checkpoint_.stream_start.pos);
  TransactionAssembler assembler(
      flavor,
      [&](const binlog::TableMap& m) {
        return schemas.Resolve(m, current_event, current_map && current_map->get() == &m ? *current_map : nullptr,
                               assembler.in_xa());
      },
      StreamPoint{checkpoint_.stream_start, checkpoint_.gtid});

  assembler.set_statement_filter([&schemas](std::string_view schema, std::string_view query,
                                             const BinlogPosition& at, bool ansi_quotes) {
    return schemas.OnStatementDml(schema, query, at, ansi_quotes);
  });
  // JSON lines: rows become their lines as they are decoded, straight from the row image (no
  // Values to build, hand over and free; issue 8), unless the snapshot hand-off must look at
  // their keys. The formatting thread then passes them on as they are.
  std::unique_ptr<Preformatter> direct_formatter;
  if (formatter && handoff.empty()) {
    direct_formatter = sink.NewPreformatter();
    assembler.set_direct_formatter(direct_formatter.get());
  }
  // With rows formatted as they are decoded, a formatting thread would only pass items on (a
  // queue hop and its wake-ups per batch): the decoding thread formats the few transactions
  // that still hold Values itself (`send`) and queues straight to the writer.
  const bool format_thread_on = formatter != nullptr && direct_formatter == nullptr;

  // The sink writer thread: whole transactions (and checkpoint-only advances) arrive in a
  // queue bounded in bytes, and are applied in groups, one sink transaction per group.
  //
  // checkpoint_ is the state the sink has committed: the writer moves it only after a sink
  // call succeeded, so a reconnect or a retry never starts past a transaction the sink does
  // not hold. `passed` (decoding thread) is the state after the last transaction read.
  const size_t item_queue_bytes =
      std::max<size_t>(cap > 0 ? std::min(options_.group_max_bytes, cap / (formatter ? 16 : 8)) : options_.group_max_bytes, 1);
  BoundedQueue<SinkItem> to_sink(1u << 20, item_queue_bytes);
  to_sink.set_wake_batch(16, std::chrono::milliseconds(1));
  Status writer_status;
  std::atomic<bool> writer_failed{false}, writer_gone{false};
  // Says so when a sink call has not returned for 30 s (a destination behind a dead network
  // waits for its read timeout, an hour for MySQL): the decoding thread may be blocked too,
  // on the full queue, and the progress line comes from the writer (a new user's probe: the
  // log was silent for the whole stall).
  std::mutex watchdog_mu;
  std::condition_variable watchdog_cv;
  bool watchdog_stop = false;
  std::thread watchdog([&] {
    int64_t warned_at = 0;
    std::unique_lock<std::mutex> l(watchdog_mu);
    while (!watchdog_cv.wait_for(l, std::chrono::seconds(1), [&] { return watchdog_stop; })) {
      const int64_t since = sink_busy_since_ms_.load();
      if (since == 0) {
        warned_at = 0;
        continue;
      }
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
      if (now - since >= 30000 && now - std::max(warned_at, since) >= 30000) {
        warned_at = now;
        LogWarning("the sink has not answered for {} s ({}); the stream waits for it", (now - since) / 1000,
                   sink_busy_what_.load());
      }
    }
  });
  auto join_watchdog = [&] {
    {
      std::lock_guard<std::mutex> l(watchdog_mu);
      watchdog_stop = true;
    }
    watchdog_cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
  };
  std::thread writer([&] {
    writer_status = WriteGroups(sink, to_sink);
    if (!writer_status.ok()) {
      writer_failed = true;
      to_sink.Close(writer_status);
    }
    writer_gone = true;
  });
  // Sinks whose records are text made from the changes alone (JSON lines) have them formatted
  // on a thread of their own, between decoding and the writer: decoding, formatting and the
  // sink's writes then run at the same time. A formatted item keeps only what the writer
  // counts (each change's table, op and source timestamp) besides its text, and is queued
  // for what it then holds, so that the memory cap counts the text and not the freed values.
  BoundedQueue<std::pair<SinkItem, size_t>> to_format(1u << 20, item_queue_bytes);
  to_format.set_wake_batch(16, std::chrono::milliseconds(1));
  std::thread format_thread;
  if (format_thread_on) {
    format_thread = std::thread([&] {
      std::vector<std::pair<SinkItem, size_t>> items;
      while (true) {
        items.clear();
        Status st;
        bool closed = false;
        if (to_format.PopBatch(&items, 64, std::chrono::milliseconds(200), &st, &closed) == 0) {
          if (closed) {
            to_sink.Close(st);  // OK: the writer drains what is queued, then ends
            return;
          }
          continue;
        }
        for (auto& [item, bytes] : items) {
          // A failed Format leaves the transaction as it was: the writer's sink reports the
          // error in order.
          if (item.txn.preformatted) {
            bytes = std::max<size_t>(StripFormatted(item.txn), 64);
          } else if (!item.txn.changes.empty() && formatter->Format(item.txn).ok()) {
            bytes = std::max<size_t>(StripFormatted(item.txn), 64);
          }
          if (!to_sink.Push(std::move(item), bytes).ok()) {
            to_format.Close(Status::Cancelled("the sink writer stopped"));
            return;
          }
        }
      }
    });
  }
  bool writer_joined = false;
  auto join_writer = [&] {
    if (writer_joined) return;
    if (format_thread_on) {
      to_format.Close(Status::Ok());  // the formatter passes on what is queued, then closes to_sink
      format_thread.join();
    }
    to_sink.Close(Status::Ok());  // the writer drains what is queued, then ends
    writer.join();
    writer_joined = true;
  };

  // Online re-reads beside the stream (checkpoint.h others_at/rereading; docs/design.md):
  // tables marked and not yet copied (`pending`) are copied on a thread of their own, their
  // sink calls queued to the writer like the stream's transactions; their events are dropped
  // meanwhile. While any is pending, or until the stream passes others_at again, the resume
  // point stays at `resume_at` (the first mark) and others_at moves with the stream instead.
  // Every unfinished copy is pending, not only the re-reads: the copy below finishes them all
  // (start_copy), and one whose table changed while sluice was stopped starts over at a point
  // after the change. The stream applied such a table's rows and DDL meanwhile, to a sink
  // table already of the later definition (the run stopped on them).
  std::set<std::string> pending;
  if (options_.reread)
    for (const auto& [name, p] : checkpoint_.tables)
      if (!p.done) pending.insert(name);
  if (pending.empty() && !checkpoint_.others_at.empty() &&
      ComparePositions(checkpoint_.stream_start, checkpoint_.others_at) >= 0) {
    // Nothing was read past the marks before the copy ended: one position again.
    checkpoint_.others_at = BinlogPosition{};
    checkpoint_.rereading.clear();
    checkpoint_.replayed.clear();
  }
  if (!pending.empty()) {
    if (checkpoint_.others_at.empty()) checkpoint_.others_at = checkpoint_.stream_start;
    for (const std::string& n : pending)
      if (std::find(checkpoint_.rereading.begin(), checkpoint_.rereading.end(), n) == checkpoint_.rereading.end())
        checkpoint_.rereading.push_back(n);
  }
  bool ahead = !checkpoint_.others_at.empty();
  // Where the other tables were when this pass began: the tables copied before it and replayed
  // from their marks (in `rereading`, not pending) have caught up with the others once the
  // stream passes it (stamp, below).
  const BinlogPosition others_at_start = checkpoint_.others_at;
  bool replays_caught_up = others_at_start.empty();
  const BinlogPosition resume_at = checkpoint_.stream_start;
  const std::string resume_gtid = checkpoint_.gtid;
  schemas.SetSkipping(pending, checkpoint_.rereading, checkpoint_.others_at, checkpoint_.replayed);
  checkpoint_.FreezeSnapshotJson();  // the stream's transactions never change the snapshot part
  Checkpoint passed = checkpoint_;
  // ahead: the marks' resume point, fixed for this run of the loop (a later mark lies after it).
  BinlogPosition ahead_resume = resume_at;
  PositionWitness ahead_witness = checkpoint_.witness;
  std::string ahead_gtid = resume_gtid;

  std::atomic<bool> copy_stop{false}, copy_finished{false};
  std::thread copy_thread;
  Status copy_status;
  bool copy_running = false;
  auto send_copy = [&](std::shared_ptr<CopyCall> c) -> Status {
    SinkItem item;
    item.copy = std::move(c);
    // Through the formatter when there is one, so that it stays behind the mark it copies.
    Status st = format_thread_on ? to_format.Push({std::move(item), 64}, 64) : to_sink.Push(std::move(item), 64);
    if (!st.ok()) return Status::Cancelled("the sink writer stopped");
    return st;
  };
  auto start_copy = [&](const Checkpoint& from) {
    std::vector<std::string> names;
    for (const auto& [n, p] : from.tables)
      if (!p.done) names.push_back(n);
    copy_running = true;
    copy_finished = false;
    copy_thread = std::thread([this, &sink, &send_copy, &writer_gone, &copy_stop, &copy_status, &copy_finished,
                               ck = from, names]() mutable {
      CopySink copy_sink(sink, ck, names, send_copy, writer_gone);
      copy_status = options_.reread(ck, copy_sink, &copy_stop);
      copy_finished = true;
    });
  };
  if (!pending.empty()) start_copy(passed);
  bool wait_copy_now = false;  // a DDL on a table being copied: stop before it
  const bool every_checkpoint = sink.CheckpointsEachTransaction();
  const SchemaHistory* history_of = nullptr;  // the history history_text was made of
  std::shared_ptr<const SchemaHistoryText> history_text;
  size_t txn_bytes = 0;  // binlog bytes read since the last transaction boundary
  // A checkpoint without the creation time of its position's file (a snapshot's point, a
  // checkpoint of an older sluice) learns it from the dump's first FORMAT_DESCRIPTION_EVENT
  // (below): a run that is caught up at once waits for it, so that its checkpoint has it.
  bool witness_pending = ropts.gtid.empty() && LacksCreationTime(checkpoint_);
  auto caught_up = [&] {
    return !options_.target.empty() && !assembler.in_transaction() && !ahead && !copy_running && !witness_pending &&
           ComparePositions(assembler.read_position(), options_.target) >= 0;
  };
  // Metrics (util/metrics.h): looked up once, updated with atomics.
  auto& reg = metrics::Registry::Global();
  metrics::Value& m_events = reg.Counter("sluice_binlog_events_total", "binlog events received from the source");
  metrics::Value& m_bytes = reg.Counter("sluice_binlog_bytes_total", "binlog bytes received from the source");
  metrics::Value& m_read = reg.Counter("sluice_stream_items_read_total",
                                       "source transactions (and position-only advances) decoded and queued for the sink");
  metrics::Value& q_binlog_items = reg.Gauge("sluice_queue_items", "items waiting in a queue", {{"queue", "binlog"}});
  metrics::Value& q_binlog_bytes = reg.Gauge("sluice_queue_bytes", "bytes waiting in a queue", {{"queue", "binlog"}});
  metrics::Value& q_sink_items = reg.Gauge("sluice_queue_items", "items waiting in a queue", {{"queue", "sink"}});
  metrics::Value& q_sink_bytes = reg.Gauge("sluice_queue_bytes", "bytes waiting in a queue", {{"queue", "sink"}});
  uint64_t since_gauges = 0;
  auto update_queue_gauges = [&] {
    q_binlog_items.Set(static_cast<double>(queue.size()));
    q_binlog_bytes.Set(static_cast<double>(queue.bytes()));
    q_sink_items.Set(static_cast<double>(to_sink.size()));
    q_sink_bytes.Set(static_cast<double>(to_sink.bytes()));
  };
  // The source commit time of the first item read by this process: the lag until the sink
  // has applied anything (cli/observe.h LagSeconds).
  metrics::Value& m_first_ts = reg.Gauge("sluice_first_read_source_timestamp_seconds",
                                         "source commit time of the first transaction read by this process (unix "
                                         "seconds)");
  auto send = [&](SinkItem item, size_t memory_bytes = 0) -> Status {
    m_read.Add(1);
    if (m_first_ts.Get() <= 0) {
      if (const uint32_t ts = item.txn.last_source_timestamp(); ts > 0) m_first_ts.Set(ts);
    }
    // A part counts what it holds in memory, so that the queue holds at most one.
    size_t bytes = std::max<size_t>({txn_bytes, memory_bytes, 64});
    txn_bytes = 0;
    if (formatter && !format_thread_on) {
      // As the formatting thread would (a failed Format leaves the transaction as it was: the
      // writer's sink reports the error in order).
      if (!item.txn.preformatted && !item.txn.changes.empty()) (void)formatter->Format(item.txn);
      if (item.txn.preformatted) bytes = std::max<size_t>(StripFormatted(item.txn), 64);
    }
    const bool replaying_rows = !item.replayed.empty() && item.txn.has_rows();
    Status st = format_thread_on ? to_format.Push({std::move(item), bytes}, bytes) : to_sink.Push(std::move(item), bytes);
    if (!st.ok()) return Status::Cancelled("the sink writer stopped");  // see writer_status
    static const bool kill_in_replay = std::getenv("SLUICE_TEST_KILL_IN_REPLAY") != nullptr;
    if (replaying_rows && kill_in_replay) {
      // Test hook: a crash in the middle of a copied table's replay, once the writer (idle
      // now) has committed the transaction just sent.
      LogInfo("test hook: SIGKILL in the middle of a replay (SLUICE_TEST_KILL_IN_REPLAY)");
      std::this_thread::sleep_for(std::chrono::seconds(2));
      std::raise(SIGKILL);
    }
    return st;
  };

  // Marks `tables` for a re-read at the position `passed` is at, in `item` (stored with it);
  // the copy starts once the item is queued.
  bool copy_wanted = false;
  // Each mark names its table as "db.table" and, when known, its database part (a DDL names
  // both; a `sluice resnapshot` request only the first: "a.b.c" may be `a`.`b.c` or `a.b`.`c`).
  auto mark = [&](const std::vector<SinkItem::Mark>& tables, SinkItem* item) {
    for (const SinkItem::Mark& m : tables) {
      const std::string& t = m.table;
      if (pending.count(t)) continue;  // already being copied (read again after a restart)
      if (!ahead) {
        ahead = true;
        ahead_resume = passed.stream_start;
        ahead_witness = passed.witness;
        ahead_gtid = passed.gtid;
        passed.others_at = passed.stream_start;
      }
      pending.insert(t);
      passed.replayed.erase(t);  // copied again: its events are judged against the new copy
      TableSnapshotProgress p;
      p.reread = true;
      p.db = m.db;
      passed.tables[t] = std::move(p);
      if (std::find(passed.rereading.begin(), passed.rereading.end(), t) == passed.rereading.end())
        passed.rereading.push_back(t);
      passed.snapshot_done = false;
      item->marks.push_back(m);
    }
    if (item->marks.empty()) return;
    schemas.SetSkipping(pending, passed.rereading, passed.others_at, passed.replayed);
    if (!copy_running) copy_wanted = true;
  };
  // A dump by GTID: the positions it passes become resume points once a transaction of
  // every domain of the start position has been read (streamer.h, resume_by_gtid). Until
  // then the checkpoints keep stream_start empty.
  bool position_trusted = ropts.gtid.empty();
  std::vector<uint32_t> domains_to_pass;
  if (!position_trusted && flavor == Flavor::kMariaDB) {
    if (auto list = gtid::MariadbGtidList::Parse(ropts.gtid); list.ok())
      for (const gtid::MariadbGtid& g : list->entries()) domains_to_pass.push_back(g.domain_id);
  }
  auto note_passed = [&](const std::string& txn_gtid) {
    if (position_trusted || txn_gtid.empty()) return;
    if (flavor == Flavor::kMariaDB) {
      auto g = gtid::MariadbGtid::Parse(txn_gtid);
      if (g.ok()) std::erase(domains_to_pass, g->domain_id);
      if (!domains_to_pass.empty()) return;
    }
    position_trusted = true;
    LogInfo("resuming by position from here on: the stream has passed the GTID position it started from ({})",
            passed.stream_start.ToString());
  };
  // The resume state once `item` is applied.
  auto stamp = [&](SinkItem& item) {
    if (ahead && !replays_caught_up) {
      // The copied tables replayed from their marks (in `rereading`, not pending). Once the
      // stream passes where the others were, they are where the others are: from here on the
      // stream applies their changes as the others', so a later pass from the same resume
      // point (the copy of a table still pending) skips them up to others_at as well. Before,
      // how far each replay went is kept (replayed), for a pass that ends before: another
      // copy finishing, a stop, a crash. Replayed again from their marks, each change made
      // to them after their copy was applied twice (a new user's probe: while a second table
      // was copied; keyless tables kept both rows, JSON lines wrote the event twice).
      if (ComparePositions(passed.stream_start, others_at_start) >= 0) {
        replays_caught_up = true;
        std::erase_if(passed.rereading, [&](const std::string& t) { return pending.count(t) == 0; });
        std::erase_if(passed.replayed, [&](const auto& r) { return pending.count(r.first) == 0; });
      } else {
        for (const std::string& t : passed.rereading) {
          if (pending.count(t)) continue;
          BinlogPosition& r = passed.replayed[t];
          if (r.empty() || ComparePositions(passed.stream_start, r) > 0) r = passed.stream_start;
        }
      }
    }
    if (ahead && !pending.empty() && ComparePositions(passed.stream_start, passed.others_at) > 0)
      passed.others_at = passed.stream_start;
    if (ahead && pending.empty() && ComparePositions(passed.stream_start, passed.others_at) >= 0) {
      // The re-read tables' binlog since their mark is applied again up to where the others
      // were: from here on every table is at the same position.
      ahead = false;
      passed.others_at = BinlogPosition{};
      passed.rereading.clear();
      passed.replayed.clear();
      schemas.SetSkipping({}, {}, {}, {});
    }
    item.stream_start = !position_trusted ? BinlogPosition{} : ahead ? ahead_resume : passed.stream_start;
    item.witness = !position_trusted ? PositionWitness{} : ahead ? ahead_witness : passed.witness;
    item.gtid = ahead ? ahead_gtid : passed.gtid;
    item.schemas = passed.schemas;
    item.others_at = passed.others_at;
    item.rereading = passed.rereading;
    item.replayed = passed.replayed;
  };
  // The file the stream reads and its creation time (its FORMAT_DESCRIPTION_EVENT's timestamp),
  // for the witnesses of the positions it passes (checkpoint.h PositionWitness).
  std::string fde_file;
  uint32_t fde_created = 0;
  auto witness_of = [&](const binlog::Event& ev, const BinlogPosition& end) {
    PositionWitness w;
    w.file = end.file;
    if (fde_file == end.file) w.created = fde_created;
    if (!ev.in_payload && ev.file == end.file && ev.end_pos == end.pos && ev.end_pos > ev.pos &&
        ev.raw.size() == ev.end_pos - ev.pos) {
      w.event_pos = ev.pos;
      w.event_size = static_cast<uint32_t>(ev.raw.size());
      w.event_hash = WitnessHash(ev.raw);
    }
    return w;
  };
  // The dump's first FORMAT_DESCRIPTION_EVENT is of the file the stream starts in: a witness
  // without that file's creation time gets it, and is stored at once (a position-only item).
  auto learn_created = [&](const binlog::Event& ev) -> Status {
    fde_file = ev.file;
    fde_created = ev.header.timestamp;
    bool learned = false;
    for (auto [w, at] : {std::pair{&passed.witness, &passed.stream_start}, std::pair{&ahead_witness, &ahead_resume}}) {
      if (at->empty() || at->file != ev.file || (w->AppliesTo(*at) && w->created != 0)) continue;
      if (!w->AppliesTo(*at)) *w = PositionWitness{at->file};
      w->created = ev.header.timestamp;
      learned = true;
    }
    if (!learned || !position_trusted || assembler.in_transaction()) return Status::Ok();
    SinkItem item;
    stamp(item);
    if (passed.schemas.get() != history_of) {
      history_of = passed.schemas.get();
      history_text = passed.schemas && !passed.schemas->empty() ? SchemaHistoryTextOf(*passed.schemas) : nullptr;
    }
    item.txn.schemas = history_text;
    return send(std::move(item));
  };
  auto handle = [&](const binlog::Event& ev) -> Status {
    if (ev.type() == static_cast<uint8_t>(binlog::EventType::FORMAT_DESCRIPTION_EVENT)) {
      RETURN_IF_ERROR(learn_created(ev));
      witness_pending = false;
    } else if (witness_pending && ev.type() != static_cast<uint8_t>(binlog::EventType::ROTATE_EVENT)) {
      witness_pending = false;  // no FORMAT_DESCRIPTION_EVENT came first: none will
    }
    // Assigned in place: a new string per event was an allocation per event.
    current_event.file.assign(ev.file);
    current_event.pos = ev.pos;
    current_map = &ev.table_map;
    auto fed = assembler.Feed(ev);
    current_map = nullptr;
    ASSIGN_OR_RETURN(auto committed, std::move(fed));
    if (!committed) {
      if (part_bytes == 0 || assembler.buffered_bytes() < part_bytes) return Status::Ok();
      const size_t held = assembler.buffered_bytes();
      SinkItem item;
      auto part = assembler.TakePart(&item.txn.preformatted, &item.txn.counted);
      if (!part) return Status::Ok();  // XA: held whole until XA COMMIT
      RETURN_IF_ERROR(handoff.Filter(&*part));
      item.part = true;
      item.txn.changes = std::move(*part);
      return send(std::move(item), held);
    }
    passed.stream_start = committed->end.position;
    passed.witness = witness_of(ev, passed.stream_start);
    passed.gtid = committed->end.gtid;
    note_passed(committed->gtid);
    SinkItem item;
    item.abort_parts = committed->rolled_back && committed->has_parts;
    if (committed->is_ddl) {
      std::vector<ddl::TableRef> rereads;
      RETURN_IF_ERROR(schemas.OnDdl(*committed, ev, ahead ? ahead_resume : passed.stream_start, &item.schema_changes,
                                    &item.reset, &item.reset_at, &rereads));
      if (schemas.TakeWaitForCopy()) {
        // On a table being copied: nothing of it is sent; the copy is finished with the
        // stream stopped here, and the statement is read again after it.
        wait_copy_now = true;
        return Status::Ok();
      }
      passed.schemas = schemas.history();
      if (!rereads.empty()) {
        std::vector<SinkItem::Mark> marks;
        for (const ddl::TableRef& t : rereads) marks.push_back({t.ToString(), t.db});
        mark(marks, &item);
      }
    }
    if (!committed->unknown_xa.empty()) {
      // Prepared before the point the stream started from (the first snapshot's), committed
      // after it: its rows are in no copy (a consistent snapshot does not see a prepared
      // transaction) and its PREPARE group is behind the stream, so which tables it changed is
      // not known here. Every captured table is copied again (a new user's probe: the rows
      // were lost with only a warning, exit 0).
      std::vector<SinkItem::Mark> marks;
      if (const auto& h = schemas.history())
        for (const std::string& name : h->Tables())
          for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
            const std::string db = name.substr(0, dot), table = name.substr(dot + 1);
            const TableVersion* v = h->Latest(db, table);
            if (v && v->schema && TableSelected(options_.filter, db, table)) {
              marks.push_back({name, db});
              break;
            }
          }
      const std::string why = fmt::format(
          "XA COMMIT {} at {}:{}: its XA PREPARE came before the point the stream started from, so its rows are "
          "in no copy (a snapshot does not see a prepared transaction) and the stream cannot read them",
          committed->unknown_xa, ev.file, ev.pos);
      if (!marks.empty() && !options_.reread)
        return Status::FailedPrecondition(why + "; copy the captured tables again with `sluice resnapshot --config "
                                                "FILE db.table ...`, then run sluice again");
      if (!marks.empty()) {
        LogWarning("{}; copying the {} captured table(s) again", why, marks.size());
        mark(marks, &item);
      }
    }
    stamp(item);
    const size_t before_filter = committed->changes.size();
    if (committed->xa_commit) {
      // Rows prepared before a copy's point and committed after it are not in the copy (a
      // consistent snapshot does not see a prepared transaction): judged at the XA COMMIT.
      // Judged at the PREPARE, a table re-read while the transaction was prepared lost them
      // (a new user's probe).
      const BinlogPosition at{ev.file, ev.pos};
      std::erase_if(committed->changes, [&](const RowChange& c) {
        return c.table && schemas.RowsDroppedAt(c.table->QualifiedName(), at);
      });
      RETURN_IF_ERROR(handoff.Filter(&committed->changes, &at));
    } else {
      RETURN_IF_ERROR(handoff.Filter(&committed->changes));
    }
    item.txn.changes = std::move(committed->changes);
    item.txn.counted = std::move(committed->counted);
    item.txn.preformatted = std::move(committed->text);
    // The history's text is made once per DDL and shared; checkpoints refer to it.
    if (passed.schemas.get() != history_of) {
      history_of = passed.schemas.get();
      history_text = passed.schemas && !passed.schemas->empty() ? SchemaHistoryTextOf(*passed.schemas) : nullptr;
    }
    item.txn.schemas = history_text;
    // Sinks that group by themselves (NATS, Kafka) checkpoint inside a group: each transaction
    // carries its own checkpoint (formatted here, off the sink thread). The others record a
    // group's last one only, formatted by the writer once per group.
    if (every_checkpoint && item.txn.has_rows() && !ahead) {
      if (position_trusted) {
        item.txn.checkpoint = passed.ToJsonWithRef(history_text.get());
      } else {
        Checkpoint c = passed;
        c.stream_start = BinlogPosition{};
        item.txn.checkpoint = c.ToJsonWithRef(history_text.get());
      }
    }
    // Queues count what an item holds in memory (3-6 times its binlog bytes), so that they
    // bound memory, not binlog.
    size_t memory = committed->bytes;  // summed by the assembler as it added them
    if (item.txn.changes.size() != before_filter) {
      memory = 0;
      for (const RowChange& c : item.txn.changes) memory += ApproxBytes(c);
    }
    return send(std::move(item), memory);
  };

  Status result;
  bool read_to_target = false;  // stopped reading at the target, not at *stop
  auto last_poll = Clock::now();
  // Events are taken from the reader in batches (one lock and at most one wake-up per batch).
  std::vector<RawEvent> batch;
  size_t batch_at = 0;
  binlog::Event event;  // decoded into in place: its allocations serve the next event
  while (true) {
    if (Stopping(options_.stop) || writer_failed.load()) break;
    if (copy_running && copy_finished.load()) {
      // The copy is done (or failed): its tables' binlog since the mark is replayed by the
      // next RunOnce, judged against the copy's points (pipeline/handoff_rule.h).
      if (!copy_status.ok()) {
        result = copy_status;
      } else {
        *again = true;
      }
      break;
    }
    if (caught_up()) {
      read_to_target = true;
      break;
    }
    if (options_.poll_rereads && options_.reread && !assembler.in_transaction() &&
        Clock::now() - last_poll > std::chrono::seconds(1)) {
      last_poll = Clock::now();
      std::vector<std::string> asked = options_.poll_rereads();
      if (!asked.empty()) {
        // Marked at the position after the last whole transaction read, like a DDL's re-read.
        SinkItem item;
        std::vector<SinkItem::Mark> marks;
        for (std::string& t : asked) marks.push_back({std::move(t), ""});
        mark(marks, &item);
        stamp(item);
        item.txn.schemas = history_text;
        LogInfo("re-read requested (sluice resnapshot) at {}", passed.stream_start.ToString());
        result = send(std::move(item));
        if (!result.ok()) break;
        if (copy_wanted) {
          copy_wanted = false;
          start_copy(passed);
        }
      }
    }
    if (batch_at == batch.size()) {
      {
        std::lock_guard<std::mutex> l(pool_mu);
        for (RawEvent& r : batch) {
          const size_t c = r.bytes.capacity();
          if (c > kPoolMaxEvent || pool_bytes + c > kPoolBytes) continue;
          pool_bytes += c;
          pool.push_back(std::move(r.bytes));
        }
      }
      batch.clear();
      batch_at = 0;
      Status qst;
      bool closed = false;
      if (queue.PopBatch(&batch, 256, std::chrono::milliseconds(200), &qst, &closed) == 0) {
        if (closed) {
          result = qst.ok() ? Status::Unavailable("the server ended the binlog stream") : qst;
          break;
        }
        update_queue_gauges();
        continue;
      }
      // Counted per batch taken (two atomic updates per event were 1% of this thread).
      size_t batch_bytes = 0;
      for (const RawEvent& r : batch) batch_bytes += r.bytes.size();
      m_events.Add(static_cast<double>(batch.size()));
      m_bytes.Add(static_cast<double>(batch_bytes));
    }
    RawEvent* raw = &batch[batch_at++];
    if (batch_at < batch.size()) {
      // The reader wrote the next event's bytes on the other core: ask for them now, so that
      // they arrive while this one is decoded (the first touch of each event was 6% of a JSON
      // lines catch-up's CPU, all of it waiting for memory on this thread).
      const std::string& next = batch[batch_at].bytes;
      const size_t n = std::min<size_t>(next.size(), kPrefetchBytes);
      for (size_t off = 0; off < n; off += 64) __builtin_prefetch(next.data() + off);
    }
    if (++since_gauges % 256 == 0) update_queue_gauges();
    txn_bytes += raw->bytes.size();
    auto span = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw->bytes.data()),
                                         raw->bytes.size());
    if (Status dst = stream.NextInto(span, &event, raw->crc_checked); !dst.ok()) {
      result = dst;
      break;
    }
    Status st = handle(event);
    while (st.ok() && !wait_copy_now && stream.HasPendingInner()) {
      auto inner = stream.NextInner();
      if (!inner.ok()) { st = inner.status(); break; }
      st = handle(*inner);
    }
    if (!st.ok()) { result = st; break; }
    if (wait_copy_now) {
      LogInfo("a statement on a table being re-read at {}: the stream waits for the copy there",
              current_event.ToString());
      blocking_reread_ = true;
      *again = true;
      break;
    }
    if (copy_wanted) {
      copy_wanted = false;
      start_copy(passed);
    }
  }
  join_reader();
  if (copy_running) {
    // Stopped unless it is done: its progress is in the sink, and the next copy continues it.
    copy_stop = true;
    copy_thread.join();
    if (result.ok() && !copy_status.ok() && copy_status.code() != StatusCode::kCancelled) result = copy_status;
  }
  join_writer();  // every whole transaction read so far reaches the sink (or a sink error)
  join_watchdog();
  {
    // What was read and is not in the sink now was dropped (the parts of a transaction the
    // connection was lost in, taken back, or items after a sink error): the next connection
    // reads it again. Counted, so that the lag is 0 once the sink holds what was read again
    // (a new user's probe: it grew by a second a second, idle, until a restart).
    metrics::Value& m_applied_now = reg.Counter("sluice_stream_items_applied_total",
                                                "source transactions (and position-only advances) the sink holds");
    metrics::Value& m_dropped = reg.Counter("sluice_stream_items_dropped_total",
                                            "items read and then dropped (read again after a reconnect)");
    const double gone = m_read.Get() - m_applied_now.Get() - m_dropped.Get();
    if (gone > 0) m_dropped.Add(gone);
  }
  if (!writer_status.ok()) {
    if (writer_status.code() == StatusCode::kCancelled && Stopping(options_.stop)) return Status::Ok();
    return writer_status;  // definite sink error
  }
  if (result.code() == StatusCode::kCancelled && Stopping(options_.stop)) result = Status::Ok();
  // Everything read up to the target is in the sink now: a stop that came meanwhile (the
  // threads winding down) did not interrupt anything.
  if (result.ok() && read_to_target) caught_up_ = true;
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
  // Metrics: row changes by table and op (series looked up once per table), transactions,
  // sink commits, and the items applied (lag: read minus applied, see cli/observe.h).
  auto& reg = metrics::Registry::Global();
  metrics::Value& m_txns = reg.Counter("sluice_transactions_total", "source transactions applied to the sink");
  metrics::Value& m_commits = reg.Counter("sluice_sink_commits_total", "sink transactions (group commits)");
  metrics::Value& m_applied = reg.Counter("sluice_stream_items_applied_total",
                                          "source transactions (and position-only advances) the sink holds");
  metrics::Value& m_ts = reg.Gauge("sluice_last_applied_source_timestamp_seconds",
                                   "source commit time of the last applied transaction (unix seconds)");
  std::map<std::pair<const TableSchema*, char>, metrics::Value*> row_counters;
  auto counter_of = [&](const TableSchemaPtr& table, Op op) {
    auto& slot = row_counters[{table.get(), static_cast<char>(op)}];
    if (!slot) {
      const char* name = op == Op::kCreate ? "insert" : op == Op::kUpdate ? "update" : op == Op::kDelete ? "delete" : "read";
      slot = &reg.Counter("sluice_rows_total", "row changes applied to the sink, by table and op",
                          {{"op", name}, {"table", table ? table->QualifiedName() : "?"}});
    }
    return slot;
  };
  auto count_rows = [&](const std::vector<Transaction>& txns) {
    const RowChange* prev = nullptr;
    metrics::Value* v = nullptr;
    for (const Transaction& t : txns) {
      for (const RowChange& c : t.changes) {
        if (!prev || prev->table.get() != c.table.get() || prev->op != c.op) {
          v = counter_of(c.table, c.op);
          prev = &c;
        }
        v->Add(1);
      }
      for (const ChangeCounts::Run& run : t.counted.runs) counter_of(run.table, run.op)->Add(static_cast<double>(run.rows));
    }
  };
  auto publish_position = [&] {
    reg.SetText("stream.position", checkpoint_.stream_start.ToString());
    reg.SetText("stream.file", checkpoint_.stream_start.file);
    reg.Gauge("sluice_stream_position_bytes", "offset of the applied position in its binlog file")
        .Set(static_cast<double>(checkpoint_.stream_start.pos));
  };
  size_t group_items = 0;
  const bool every_checkpoint = sink.CheckpointsEachTransaction();
  // A copy beside the stream (CopyCall) records versions in its own schema history; the
  // state's history is the stream's with the copy's newer versions of its tables added.
  std::shared_ptr<const SchemaHistory> stream_schemas = checkpoint_.schemas, copy_schemas;
  std::vector<std::string> copy_names;
  const SchemaHistory *merged_stream = nullptr, *merged_copy = nullptr;
  std::shared_ptr<const SchemaHistory> merged_hist;
  std::shared_ptr<const SchemaHistoryText> merged_text;
  auto merged = [&]() -> std::shared_ptr<const SchemaHistory> {
    if (!copy_schemas) return stream_schemas;
    if (merged_stream == stream_schemas.get() && merged_copy == copy_schemas.get()) return merged_hist;
    SchemaHistory h = stream_schemas ? *stream_schemas : SchemaHistory();
    for (const std::string& name : copy_names) {
      for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
        const std::string db = name.substr(0, dot), table = name.substr(dot + 1);
        const std::vector<TableVersion>& versions = copy_schemas->Versions(db, table);
        if (versions.empty()) continue;
        const TableVersion* latest = h.Latest(db, table);
        const BinlogPosition after = latest ? latest->since : BinlogPosition{};
        const bool any = latest != nullptr;
        for (const TableVersion& v : versions) {
          if (any && ComparePositions(v.since, after) <= 0) continue;
          Status st = h.Add(db, table, v);
          if (!st.ok()) LogWarning("re-read of {}: its definition was not recorded: {}", name, st.ToString());
        }
        break;
      }
    }
    h.CacheJson();
    merged_hist = h.empty() ? nullptr : std::make_shared<const SchemaHistory>(std::move(h));
    merged_text = merged_hist ? SchemaHistoryTextOf(*merged_hist) : nullptr;
    merged_stream = stream_schemas.get();
    merged_copy = copy_schemas.get();
    return merged_hist;
  };
  auto advance = [&](Checkpoint& cp, const SinkItem& item) {
    cp.stream_start = item.stream_start;
    cp.witness = item.witness;
    cp.gtid = item.gtid;
    stream_schemas = item.schemas;
    cp.schemas = merged();
    cp.others_at = item.others_at;
    cp.rereading = item.rereading;
    cp.replayed = item.replayed;
    for (const SinkItem::Mark& m : item.marks) {
      TableSnapshotProgress p;
      p.reread = true;
      p.db = m.db;
      cp.tables[m.table] = std::move(p);
      cp.snapshot_done = false;
    }
  };
  // The history text a checkpoint of `cp` refers to: the stream's, or the merged one.
  auto text_of = [&](const Checkpoint& cp, const std::shared_ptr<const SchemaHistoryText>& stream_text) {
    return copy_schemas && cp.schemas == merged_hist ? merged_text : stream_text;
  };
  std::optional<SinkItem> copy_held;  // a copy's call waits while a large transaction's parts are open
  struct FinishHeld {
    std::optional<SinkItem>& held;
    ~FinishHeld() {
      if (held && held->copy) held->copy->Finish(Status::Cancelled("the sink writer stopped"));
    }
  } finish_held{copy_held};
  // A large source transaction's parts are in an open sink transaction: only the group that
  // holds its end commits it; a stop or error before that takes them back.
  bool parts_open = false;
  uint64_t parts_rows = 0;  // rows in the open parts, counted when committed
  // The open parts' rows per table and op (sluice_rows_total), added when they commit: a
  // transaction applied in parts counted only its last part's rows.
  std::map<metrics::Value*, double> parts_tally;
  // Items of the open parts: applied (sluice_stream_items_applied_total, which the lag compares
  // with the items read) once the transaction they belong to commits or is taken back.
  uint64_t parts_items = 0;
  struct AbortOpenParts {
    Sink& sink;
    bool& open;
    ~AbortOpenParts() {
      if (open) sink.AbortParts();
    }
  } abort_open_parts{sink, parts_open};
  // A failed call with parts open has aborted them: no retry in place, the run starts again
  // from the last checkpoint (kUnavailable) or stops (definite).
  auto part_failure = [&](const char* what, const Status& st) -> Status {
    sink.AbortParts();  // whatever the failed call left open
    parts_open = false;
    parts_rows = 0;
    parts_items = 0;
    parts_tally.clear();
    if (st.code() == StatusCode::kUnavailable)
      return Status::Unavailable(fmt::format("sink: {} of a large transaction failed ({}); starting again from {}",
                                             what, st.message(), checkpoint_.stream_start.ToString()));
    return st.WithContext(fmt::format("sink: {} of a large transaction", what));
  };
  publish_position();
  auto prepare = [&](const TableSchemaPtr& t) -> Status {
    if (!t || prepared.count(t.get())) return Status::Ok();
    RETURN_IF_ERROR(CallSink("prepare table", [&] { return sink.PrepareTable(*t); }));
    prepared.emplace(t.get(), t);
    return Status::Ok();
  };
  auto save_pending = [&](bool force) -> Status {
    if (!unsaved || parts_open || (!force && Clock::now() - last_save < std::chrono::seconds(1))) return Status::Ok();
    const std::string text = checkpoint_.ToJson();
    RETURN_IF_ERROR(CallSink("save checkpoint", [&] { return sink.SaveCheckpoint(text); }));
    unsaved = false;
    last_save = Clock::now();
    return Status::Ok();
  };
  while (true) {
    std::optional<SinkItem> first;
    if (copy_held && !parts_open) {
      first = std::move(copy_held);
      copy_held.reset();
    } else if (held) {
      first = std::move(held);
      held.reset();
    } else {
      Status st;
      bool closed = false;
      first = queue.Pop(milliseconds(200), &st, &closed);
      if (!first) {
        if (closed) {
          RETURN_IF_ERROR(st);
          if (parts_open) sink.AbortParts();  // stopped inside a large transaction
          parts_open = false;
          return save_pending(true);
        }
        RETURN_IF_ERROR(save_pending(false));
        if (!parts_open) RETURN_IF_ERROR(CallSink("commit the open group", [&] { return sink.Idle(); }));
        if (options_.on_applied) options_.on_applied(checkpoint_, 0);  // idle: the progress line still comes
        continue;
      }
    }
    if (first->copy) {
      if (parts_open) {
        copy_held = std::move(first);
        continue;
      }
      CopyCall& c = *first->copy;
      Checkpoint after = checkpoint_;
      for (const std::string& n : c.names) {
        auto it = c.tables.find(n);
        if (it != c.tables.end()) after.tables[n] = it->second;
      }
      copy_names = c.names;
      copy_schemas = c.schemas;
      after.schemas = merged();
      after.snapshot_done = true;
      for (const auto& [n, p] : after.tables) after.snapshot_done = after.snapshot_done && p.done;
      const std::string text = c.stores_checkpoint ? after.ToJson() : std::string();
      Status st = CallSink("re-read", [&] { return c.call(sink, text); });
      c.Finish(st);
      RETURN_IF_ERROR(st);
      if (c.stores_checkpoint) {
        checkpoint_ = std::move(after);
        unsaved = false;
      }
      continue;
    }
    if (first->part) {
      SinkBusy busy(this, "apply a part");
      Status st = sink.ApplyPart(first->txn);
      if (!st.ok()) return part_failure("applying a part", st);
      parts_open = true;
      parts_rows += first->txn.row_count();
      ++parts_items;
      for (const RowChange& c : first->txn.changes) parts_tally[counter_of(c.table, c.op)] += 1;
      for (const ChangeCounts::Run& run : first->txn.counted.runs)
        parts_tally[counter_of(run.table, run.op)] += static_cast<double>(run.rows);
      if (options_.on_applied) options_.on_applied(checkpoint_, 0);
      continue;
    }
    if (first->abort_parts) {
      sink.AbortParts();  // the source transaction rolled back
      parts_open = false;
      parts_rows = 0;
      parts_tally.clear();
      advance(checkpoint_, *first);
      unsaved = true;
      m_applied.Add(static_cast<double>(1 + std::exchange(parts_items, 0)));
      publish_position();
      continue;
    }
    if (!first->schema_changes.empty()) {
      Checkpoint after = checkpoint_;
      advance(after, *first);
      const std::string text = after.ToJson();
      RETURN_IF_ERROR(CallSink("follow schema change",
                               [&] { return sink.ApplySchemaChanges(first->schema_changes, text); }));
      for (const SchemaChange& c : first->schema_changes)
        if (c.after) prepared.emplace(c.after.get(), c.after);
      checkpoint_ = std::move(after);
      unsaved = false;
      m_applied.Add(1);
      publish_position();
      continue;
    }
    if (first->reset) {
      Checkpoint after = checkpoint_;
      advance(after, *first);
      const std::string text = after.ToJson();
      TableSchemaPtr schema = first->reset;
      RETURN_IF_ERROR(prepare(schema));
      RETURN_IF_ERROR(CallSink("truncate table", [&] { return sink.TruncateTable(*schema, first->reset_at, text); }));
      checkpoint_ = std::move(after);
      unsaved = false;
      m_applied.Add(1);
      publish_position();
      continue;
    }
    // Group: this item and whatever is ready behind it, within the byte and time budgets.
    // Each item is a whole source transaction, so a group never ends inside one.
    group.clear();
    group_txns = group_rows = 0;
    size_t bytes = 0;
    const auto started = Clock::now();
    Checkpoint last = checkpoint_;  // once per group: the state after its last item
    std::shared_ptr<const SchemaHistoryText> last_schemas;  // the text of last.schemas
    BinlogPosition group_last_data_pos;
    group_items = 0;
    auto add = [&](SinkItem& item) {
      ++group_items;
      advance(last, item);
      last_schemas = text_of(last, item.txn.schemas);
      if (every_checkpoint && item.txn.has_rows() && (copy_schemas || !last.others_at.empty())) {
        // Beside a re-read the decoding thread cannot know the state (the copy's progress is
        // the writer's): each transaction's checkpoint is made here.
        item.txn.checkpoint = last.ToJsonWithRef(last_schemas.get());
        item.txn.schemas = last_schemas;
      }
      if (item.txn.preformatted) {
        bytes += item.txn.preformatted->size();
      } else {
        for (const auto& c : item.txn.changes) bytes += 64 + c.after.size() * 16 + c.before.size() * 16;
      }
      if (item.txn.has_rows()) {
        group_last_data_pos = item.stream_start;
        group_rows += item.txn.row_count();
        ++group_txns;
        group_source_ts = std::max(group_source_ts, item.txn.last_source_timestamp());
        group.push_back(std::move(item.txn));
      }
    };
    // The item that ends a transaction applied in parts counts it, rows or not (its rows went
    // in the parts: a new user's probe read "streamed 0 transactions, 1 row changes").
    if (parts_open && !first->txn.has_rows()) ++group_txns;
    add(*first);
    while (bytes < options_.group_max_bytes &&
           Clock::now() - started < milliseconds(options_.group_max_ms)) {
      Status st;
      bool closed = false;
      auto next = queue.Pop(milliseconds(0), &st, &closed);
      if (!next) break;  // nothing more ready: commit now (latency first when idle)
      if (next->reset || !next->schema_changes.empty() || next->part || next->abort_parts || next->copy) {
        held = std::move(next);
        break;
      }
      add(*next);
    }
    if (group.empty() && parts_open) group.emplace_back();  // commits the parts' transaction
    if (group.empty()) {
      checkpoint_ = std::move(last);  // nothing to deliver (filtered tables, DDL)
      unsaved = true;
      m_applied.Add(static_cast<double>(group_items));
      publish_position();
      RETURN_IF_ERROR(save_pending(false));
      continue;
    }
    const TableSchema* seen = nullptr;
    for (const Transaction& t : group) {
      for (const RowChange& c : t.changes)
        if (c.table.get() != seen) {
          RETURN_IF_ERROR(prepare(c.table));
          seen = c.table.get();
        }
      for (const ChangeCounts::Run& run : t.counted.runs)
        if (run.table.get() != seen) {
          RETURN_IF_ERROR(prepare(run.table));
          seen = run.table.get();
        }
    }
    // The group ends with the state after its last item (it may be a position-only one).
    if (!every_checkpoint || ComparePositions(last.stream_start, group_last_data_pos) != 0) {
      group.back().checkpoint = last.ToJsonWithRef(last_schemas.get());
      group.back().schemas = last_schemas;
    }
    if (parts_open) {
      SinkBusy busy(this, "commit");
      Status st = sink.ApplyGroup(group);
      if (!st.ok()) return part_failure("committing", st);
      parts_open = false;
      group_rows += parts_rows;
      parts_rows = 0;
      group_items += std::exchange(parts_items, 0);
      for (const auto& [v, n] : parts_tally) v->Add(n);
      parts_tally.clear();
    } else {
      RETURN_IF_ERROR(CallSink("apply", [&] { return sink.ApplyGroup(group); }));
    }
    checkpoint_ = std::move(last);
    unsaved = false;
    last_save = Clock::now();
    applied_transactions_ += group_txns;
    applied_rows_ += group_rows;
    ++applied_groups_;
    last_source_ts_ = group_source_ts;
    count_rows(group);
    m_txns.Add(static_cast<double>(group_txns));
    m_commits.Add(1);
    m_ts.Set(group_source_ts);
    m_applied.Add(static_cast<double>(group_items));
    publish_position();
    if (options_.on_applied) options_.on_applied(checkpoint_, group_rows);
  }
}

}  // namespace sluice
