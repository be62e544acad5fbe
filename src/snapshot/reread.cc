#include "snapshot/reread.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <thread>

#include "mysql/schema_loader.h"
#include "mysql/server_probe.h"
#include "util/log.h"

namespace sluice {

namespace {

std::string Ident(const std::string& name) {
  std::string q = "`";
  for (char c : name) q += c == '`' ? std::string("``") : std::string(1, c);
  return q + "`";
}

// Whether "db.table" (split at any of its dots) exists, asked by opening it: information_schema
// does not list a table while another ALTER TABLE that copies it swaps the new copy in (the
// name is briefly free), so a table missing there is not yet gone. Opening the table waits
// for that ALTER's metadata lock and then finds it, or fails with ER_NO_SUCH_TABLE.
Result<std::optional<TableName>> OpenTable(Connection& conn, const std::string& name) {
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    TableName t{name.substr(0, dot), name.substr(dot + 1)};
    auto r = conn.Query("SELECT 1 FROM " + Ident(t.db) + "." + Ident(t.table) + " LIMIT 0");
    if (r.ok()) return std::optional<TableName>(t);
    if (r.status().code() != StatusCode::kNotFound) return r.status();
  }
  return std::optional<TableName>();
}

// Where "db.table" is at the source as a base table (its split into database and table), or
// nullopt when it no longer exists there: information_schema first, then opening it.
// `db_part`, when known (the stream marks a table with its database), is the only split
// looked at: with the database `a.b` renamed into the patterns, "a.b.c" found `a`.`b.c` first
// and copied that table in its place (a new user's probe).
Result<std::optional<TableName>> FindTable(Connection& meta, const std::string& name, const std::string& db_part) {
  if (!db_part.empty() && name.size() > db_part.size() && name.starts_with(db_part + ".")) {
    const TableName t{db_part, name.substr(db_part.size() + 1)};
    ASSIGN_OR_RETURN(QueryResult r,
                     meta.Query("SELECT 1 FROM information_schema.TABLES WHERE TABLE_TYPE IN ('BASE TABLE', "
                                "'SYSTEM VERSIONED') AND TABLE_SCHEMA = " + meta.Quote(t.db) +
                                " AND TABLE_NAME = " + meta.Quote(t.table)));
    if (!r.rows.empty()) return std::optional<TableName>(t);
    auto opened = meta.Query("SELECT 1 FROM " + Ident(t.db) + "." + Ident(t.table) + " LIMIT 0");
    if (opened.ok()) return std::optional<TableName>(t);
    if (opened.status().code() != StatusCode::kNotFound) return opened.status();
    return std::optional<TableName>();
  }
  ASSIGN_OR_RETURN(QueryResult r,
                   meta.Query("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                              "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND "
                              "CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) = " + meta.Quote(name)));
  if (r.rows.size() == 1 && r.rows[0].size() == 2 && r.rows[0][0] && r.rows[0][1])
    return std::optional<TableName>(TableName{*r.rows[0][0], *r.rows[0][1]});
  return OpenTable(meta, name);
}

// Records the marked tables `gone` ("db.table" name, its db part if known) as no longer at the
// source: nothing to copy. Every event of one before the server's position now is dropped
// (copied_at) and every DDL on it before then skipped (a version at that position); a RENAME
// of it into a captured name re-reads that table. Its sink table follows a DROP, stored with
// the checkpoint; `none_left` (no other table to copy) also ends the re-read.
Status RecordGone(const SnapshotRunOptions& options, Connection& meta, Checkpoint& ckpt, Sink& sink,
                  const std::vector<std::pair<std::string, std::string>>& gone, bool none_left) {
  ASSIGN_OR_RETURN(BinlogPosition now, ReadBinlogPosition(meta));
  SchemaHistory h = ckpt.schemas ? *ckpt.schemas : SchemaHistory();
  std::vector<SchemaChange> drops;
  for (const auto& [name, db_part] : gone) {
    LogWarning("table {} was {} but no longer exists at the source (dropped or renamed away); not "
               "copied, its sink table is treated as dropped",
               name,
               ckpt.tables.count(name) && ckpt.tables[name].reread ? "marked for a re-read"
               : ckpt.tables.count(name) && ckpt.tables[name].rows == 0 ? "waiting to be copied"
                                                                         : "being copied");
    TableSnapshotProgress p;
    p.done = true;
    p.copied_at = now;
    ckpt.tables[name] = std::move(p);
    // The history is keyed by (db, table). A table renamed into the patterns has no version
    // before its copy: it gets one at `now` too, under the (db, table) the stream looks it
    // up by, or a restart that reads its RENAME again would mark it again (a run that never
    // ends when the database name holds a dot: the version used to go under the split at
    // the first dot), and a later RENAME of it would find no definition to move instead of
    // re-reading its new name. The split is the one the stream marked the table with; a
    // name marked without one (`sluice resnapshot`, older checkpoints) is split where the
    // history knows the table, else at its first dot.
    std::vector<size_t> dots;
    if (!db_part.empty() && name.size() > db_part.size() && name.starts_with(db_part + ".")) {
      dots.push_back(db_part.size());
    } else {
      for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) dots.push_back(dot);
    }
    bool known = false;
    for (size_t dot : dots) known = known || h.Latest(name.substr(0, dot), name.substr(dot + 1)) != nullptr;
    for (size_t dot : dots) {
      const std::string db = name.substr(0, dot), table = name.substr(dot + 1);
      const TableVersion* latest = h.Latest(db, table);
      if (!latest && !known) {
        RETURN_IF_ERROR(h.Add(db, table, TableVersion{now, nullptr, ""}));
        break;
      }
      if (!latest) continue;
      if (latest->schema) {
        SchemaChange c;
        c.kind = SchemaChange::Kind::kDrop;
        c.before = latest->schema;
        c.ddl = "-- sluice: " + name + " no longer exists at the source";
        c.source.flavor = ckpt.flavor;
        c.source.server_id = options.source_server_id;
        c.source.file = now.file;
        c.source.pos = now.pos;
        c.source.timestamp = static_cast<uint32_t>(std::time(nullptr));
        drops.push_back(std::move(c));
      }
      if (ComparePositions(latest->since, now) < 0) RETURN_IF_ERROR(h.Add(db, table, TableVersion{now, nullptr, ""}));
      break;
    }
  }
  h.CacheJson();
  ckpt.schemas = h.empty() ? nullptr : std::make_shared<const SchemaHistory>(std::move(h));
  if (none_left) ckpt.snapshot_done = true;
  return sink.ApplySchemaChanges(drops, ckpt.ToJson());
}

}  // namespace

bool TableBackAgain(const Status& why, int* tries) {
  if (++*tries > 3) return false;
  LogInfo("snapshot: {}; every table is there now (dropped and created again meanwhile?): planning again",
          why.message());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return true;
}

Result<size_t> RecordTablesGoneDuringTheCopy(const SnapshotRunOptions& options, Connection& meta, Checkpoint& ckpt,
                                             Sink& sink, std::vector<TableName>* names) {
  std::vector<TableName> left;
  std::vector<std::pair<std::string, std::string>> gone;
  for (const TableName& t : *names) {
    const std::string name = t.QualifiedName();
    const TableSnapshotProgress& p = ckpt.tables[name];
    std::optional<TableName> found = t;
    if (!p.done) {
      ASSIGN_OR_RETURN(found, FindTable(meta, name, p.db));
    }
    if (found) {
      left.push_back(*found);
    } else {
      gone.emplace_back(name, p.db);
    }
  }
  if (gone.empty()) return size_t{0};
  *names = std::move(left);
  RETURN_IF_ERROR(RecordGone(options, meta, ckpt, sink, gone, names->empty()));
  return gone.size();
}

void MarkForReread(Checkpoint& ckpt, const std::vector<std::string>& names) {
  bool binlog_tables = false;
  for (const std::string& name : names) {
    if (auto inc = ckpt.incremental.find(name); inc != ckpt.incremental.end()) {
      inc->second.restart = true;
      continue;
    }
    binlog_tables = true;
    TableSnapshotProgress p;
    p.reread = true;
    if (auto it = ckpt.tables.find(name); it != ckpt.tables.end()) p.db = it->second.db;  // a mark's split stays
    ckpt.tables[name] = std::move(p);
  }
  if (binlog_tables) ckpt.snapshot_done = false;
}

Status RunRereads(const SnapshotRunOptions& options, Checkpoint& ckpt, Sink& sink) {
  ASSIGN_OR_RETURN(auto meta, Connection::Connect(options.connection));
  std::vector<TableName> names;
  std::vector<std::pair<std::string, std::string>> gone;  // "db.table" name, its db part if known
  for (const auto& [name, p] : ckpt.tables) {
    if (p.done) continue;
    ASSIGN_OR_RETURN(std::optional<TableName> found, FindTable(*meta, name, p.db));
    if (found) {
      names.push_back(*found);
    } else {
      gone.emplace_back(name, p.db);
    }
  }
  if (!gone.empty()) {
    // Gone from the source since it was marked (dropped or renamed away while the stream
    // caught up to its mark).
    RETURN_IF_ERROR(RecordGone(options, *meta, ckpt, sink, gone, names.empty()));
    if (names.empty()) return Status::Ok();
  }
  std::string list;
  for (const TableName& t : names) list += (list.empty() ? "" : ", ") + t.QualifiedName();
  LogInfo("re-reading {} table(s) online: {}", names.size(), list);
  // SLUICE_TEST_REREAD_PAUSE_TABLE: only the copy of that table pauses (a later re-read).
  const char* pause_table = std::getenv("SLUICE_TEST_REREAD_PAUSE_TABLE");
  if (pause_table == nullptr || *pause_table == '\0' ||
      std::any_of(names.begin(), names.end(), [&](const TableName& t) { return t.QualifiedName() == pause_table; }))
    PauseForTest("SLUICE_TEST_REREAD_PAUSE_FILE", "re-read: paused before planning");
  int back = 0;  // TableBackAgain
  for (int attempt = 1;; ++attempt) {
    Status st = RunSnapshot(options, *meta, names, ckpt, sink);
    if (st.code() == StatusCode::kNotFound) {
      // A table found above can be gone by the time its copy plans it (LoadTableSchema, the
      // planner's COUNT(*)) or reads it: the DROP or RENAME that removes it is later in the
      // binlog than its mark, and the server runs it whenever it comes. Such a table is
      // handled as one gone before the copy started, and the others' copy goes on where it
      // stopped. When every unfinished table is still there, the error stands: a table this
      // user may not read gives the same NotFound as a missing one, so the server is asked.
      ASSIGN_OR_RETURN(size_t n, RecordTablesGoneDuringTheCopy(options, *meta, ckpt, sink, &names));
      if (n > 0) {
        LogInfo("re-read: {}; {} table(s) gone from the source since the copy began", st.ToString(), n);
        if (names.empty()) return Status::Ok();
        continue;
      }
      if (TableBackAgain(st, &back)) continue;
    }
    // Another DDL on a table while its copy is read: RunSnapshot plans it again itself
    // (coordinator.h), its sink table replaced again. The stream has not read past the mark,
    // so the new copy's point is still after it. This loop is the fallback for a change
    // reported as an error instead (ER_TABLE_DEF_CHANGED, 1412, outside a worker).
    const bool changed =
        (st.code() == StatusCode::kFailedPrecondition &&
         st.message().find("changed its definition during the snapshot") != std::string::npos) ||
        st.message().find("[1412]") != std::string::npos;
    if (st.ok() || !changed || attempt >= 20) return st;
    std::vector<std::string> again;
    for (const TableName& t : names)
      if (!ckpt.tables[t.QualifiedName()].done) again.push_back(t.QualifiedName());
    LogInfo("re-read: {} (attempt {}); copying again: {}", st.message(), attempt, again.size());
    MarkForReread(ckpt, again);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
  }
}

}  // namespace sluice
