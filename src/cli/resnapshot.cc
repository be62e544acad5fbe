#include "cli/resnapshot.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "checkpoint/checkpoint.h"
#include "cli/run.h"
#include "cli/table_config.h"
#include "mysql/schema_loader.h"
#include "snapshot/incremental.h"
#include "snapshot/reread.h"

namespace sluice::cli {
namespace {

std::string Base(const SinkConfig& sink) { return sink.path == "-" ? sink.checkpoint : sink.path; }
std::string RequestPath(const SinkConfig& sink) { return Base(sink) + ".resnapshot"; }
std::string ClaimPath(const SinkConfig& sink) { return Base(sink) + ".resnapshot.claimed"; }

std::vector<std::string> ReadNames(const std::string& path) {
  std::vector<std::string> names;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

bool Selected(const TableFilter& filter, const std::string& name) {
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
    if (TableSelected(filter, name.substr(0, dot), name.substr(dot + 1))) return true;
  return false;
}

// The tables of `names` read without the binlog (a [table] section gives them a mode other
// than cdc), with their mode.
Result<std::map<std::string, std::string>> BinlogFreeTables(const Config& config, const TableFilter& filter,
                                                            const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;
  for (const std::string& name : names) {
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      TableName t{name.substr(0, dot), name.substr(dot + 1)};
      if (!TableSelected(filter, t.db, t.table)) continue;
      ASSIGN_OR_RETURN(TableModes modes, ModesForTables(config, {t}));
      if (!modes.other.empty()) out[name] = TableModeName(modes.other[0].mode);
      break;
    }
  }
  return out;
}

// Marks `tables` in `ckpt`; a table read without the binlog that no run has read yet is left
// out (its first run copies it; marked, it would be taken for a binlog table).
void MarkRequested(Checkpoint& ckpt, const std::vector<std::string>& tables,
                   const std::map<std::string, std::string>& binlog_free) {
  std::vector<std::string> marked;
  for (const std::string& t : tables)
    if (!binlog_free.count(t) || ckpt.incremental.count(t)) marked.push_back(t);
  MarkForReread(ckpt, marked);
}

}  // namespace

Status RequestResnapshot(const Config& config, const std::vector<std::string>& tables, std::string* outcome) {
  const bool server_sink = config.sink.type == SinkType::kMysql || config.sink.type == SinkType::kPostgres;
  if (config.sink.type != SinkType::kSqlite && config.sink.type != SinkType::kJsonl && !server_sink)
    return Status::InvalidArgument("resnapshot works with sink.type = \"sqlite\", \"jsonl\", \"mysql\" or \"postgres\"");
  const TableFilter filter{config.source.tables, config.source.exclude};
  for (const std::string& t : tables) {
    // A pattern is not a table: `w.t?a?x` was "marked" as a table of that name, and the next
    // run only warned that it no longer exists (a new user's probe).
    if (t.find_first_of("*?") != std::string::npos)
      return Status::InvalidArgument(fmt::format(
          "{} is a pattern; resnapshot takes table names (db.table), each as the source names it", t));
    if (!Selected(filter, t))
      return Status::InvalidArgument(fmt::format(
          "table {} is not selected by source.tables/source.exclude; name tables as db.table", t));
  }
  // A name that is no table at the source (a typo) is refused while it can be said; when the
  // source does not answer, the next run says it (a marked table that is gone is recorded so).
  if (auto source = Connection::Connect(SourceConnectOptions(config.source)); source.ok()) {
    for (const std::string& t : tables) {
      auto r = (*source)->Query("SELECT 1 FROM information_schema.TABLES WHERE CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) = " +
                                (*source)->Quote(t));
      if (r.ok() && r->rows.empty())
        return Status::InvalidArgument(fmt::format(
            "table {} does not exist at the source ({}) as far as this user can see (a table the user has no "
            "privilege on is invisible: if it exists, GRANT SELECT on it); name tables as db.table, as the source "
            "names them",
            t,
            config.source.host + ":" + std::to_string(config.source.port)));
    }
  }
  // Tables of modes incremental, full and snapshot_only are read when a run starts: they are
  // marked in the checkpoint to start over (snapshot/reread.h MarkForReread), which needs the
  // run stopped; one never read yet needs nothing (its first run copies it).
  ASSIGN_OR_RETURN(auto binlog_free, BinlogFreeTables(config, filter, tables));
  if (server_sink) {
    // No local file to hand a request to a running run: opening the sink takes the
    // destination's one-writer lock (MySQL named lock, PostgreSQL advisory lock), which a
    // running run holds, so this works while no run does.
    Status st = [&]() -> Status {
      if (config.sink.type == SinkType::kMysql) {
        // A destination that is the source server, writing captured tables: refused as `run`
        // refuses it, before the sink (its bookkeeping tables) is opened. Either server out of
        // reach: not the same one up (the sink's open below says what is wrong).
        const ConnectOptions source_options = SourceConnectOptions(config.source);
        auto source = Connection::Connect(source_options);
        auto dest = Connection::Connect(config.sink.mysql.connect);
        if (source.ok() && dest.ok()) RETURN_IF_ERROR(RefuseSelfDestination(config, **source, source_options, **dest));
      }
      auto sink = OpenSink(config.sink);
      if (!sink.ok())
        return sink.status().WithContext("resnapshot of a MySQL/PostgreSQL destination needs the run stopped");
      ASSIGN_OR_RETURN(auto stored, (*sink)->LoadCheckpoint());
      if (!stored)
        return Status::InvalidArgument("the destination has no checkpoint yet: the first run copies every table anyway");
      ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::FromJson(*stored));
      MarkRequested(ckpt, tables, binlog_free);
      RETURN_IF_ERROR((*sink)->SaveCheckpoint(ckpt.ToJson()));
      return (*sink)->Flush();
    }();
    if (st.ok()) *outcome = "marked in the destination's checkpoint; the next run re-reads the table(s)";
    return st;
  }
  const std::string lock_path = Base(config.sink) + ".lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::InvalidArgument(fmt::format("cannot open lock file {}: {}", lock_path, OpenErrorText(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    // A run holds the sink: hand the request to it.
    for (const auto& [name, mode] : binlog_free)
      return Status::FailedPrecondition(fmt::format(
          "table {} is read in mode {} when a run starts (docs/incremental.md), and a run holds the sink now: "
          "ask again once it has stopped (or ended), and the next run reads the table again from the start",
          name, mode));
    const std::string path = RequestPath(config.sink);
    int rfd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rfd < 0)
      return Status::InvalidArgument(fmt::format("cannot write {}: {}", path, OpenErrorText(errno)));
    std::string text;
    for (const std::string& t : tables) text += t + "\n";
    bool ok = ::write(rfd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(rfd) == 0;
    ::close(rfd);
    if (!ok) return Status::Unavailable(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    *outcome = fmt::format("a run holds the sink: requested in {}; it re-reads the table(s) within seconds", path);
    return Status::Ok();
  }
  // No run: mark them in the checkpoint (the lock stays held until the marks are stored).
  Status st = [&]() -> Status {
    ASSIGN_OR_RETURN(auto sink, OpenSink(config.sink));
    ASSIGN_OR_RETURN(auto stored, sink->LoadCheckpoint());
    if (!stored)
      return Status::InvalidArgument(fmt::format(
          "sink {} has no checkpoint yet: the first run copies every table anyway", config.sink.path));
    ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::FromJson(*stored));
    MarkRequested(ckpt, tables, binlog_free);
    RETURN_IF_ERROR(sink->SaveCheckpoint(ckpt.ToJson()));
    return sink->Flush();
  }();
  ::close(fd);
  if (st.ok()) *outcome = "marked in the sink's checkpoint; the next run re-reads the table(s)";
  return st;
}

std::vector<std::string> ClaimResnapshotRequests(const SinkConfig& sink) {
  const std::string req = RequestPath(sink), claim = ClaimPath(sink);
  std::vector<std::string> names = ReadNames(claim);
  const std::string taking = req + ".taking";
  if (::rename(req.c_str(), taking.c_str()) == 0) {
    // Moved away first: a request written after this goes to a new file.
    std::vector<std::string> more = ReadNames(taking);
    std::ofstream out(claim, std::ios::app);
    for (const std::string& n : more) out << n << "\n";
    out.close();
    ::unlink(taking.c_str());
    names.insert(names.end(), more.begin(), more.end());
  }
  std::set<std::string> seen;
  std::vector<std::string> unique;
  for (const std::string& n : names)
    if (seen.insert(n).second) unique.push_back(n);
  return unique;
}

void ClearResnapshotClaim(const SinkConfig& sink) { ::unlink(ClaimPath(sink).c_str()); }

}  // namespace sluice::cli
