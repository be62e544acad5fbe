#include "cli/resnapshot.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "checkpoint/checkpoint.h"
#include "cli/run.h"
#include "mysql/schema_loader.h"
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

}  // namespace

Status RequestResnapshot(const Config& config, const std::vector<std::string>& tables, std::string* outcome) {
  const bool server_sink = config.sink.type == SinkType::kMysql || config.sink.type == SinkType::kPostgres;
  if (config.sink.type != SinkType::kSqlite && config.sink.type != SinkType::kJsonl && !server_sink)
    return Status::InvalidArgument("resnapshot works with sink.type = \"sqlite\", \"jsonl\", \"mysql\" or \"postgres\"");
  const TableFilter filter{config.source.tables, config.source.exclude};
  for (const std::string& t : tables)
    if (!Selected(filter, t))
      return Status::InvalidArgument(fmt::format(
          "table {} is not selected by source.tables/source.exclude; name tables as db.table", t));
  if (server_sink) {
    // No local file to hand a request to a running run: opening the sink takes the
    // destination's one-writer lock (MySQL named lock, PostgreSQL advisory lock), which a
    // running run holds, so this works while no run does.
    Status st = [&]() -> Status {
      auto sink = OpenSink(config.sink);
      if (!sink.ok())
        return sink.status().WithContext("resnapshot of a MySQL/PostgreSQL destination needs the run stopped");
      ASSIGN_OR_RETURN(auto stored, (*sink)->LoadCheckpoint());
      if (!stored)
        return Status::InvalidArgument("the destination has no checkpoint yet: the first run copies every table anyway");
      ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::FromJson(*stored));
      MarkForReread(ckpt, tables);
      RETURN_IF_ERROR((*sink)->SaveCheckpoint(ckpt.ToJson()));
      return (*sink)->Flush();
    }();
    if (st.ok()) *outcome = "marked in the destination's checkpoint; the next run re-reads the table(s)";
    return st;
  }
  const std::string lock_path = Base(config.sink) + ".lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::InvalidArgument(fmt::format("cannot open lock file {}: {}", lock_path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    // A run holds the sink: hand the request to it.
    const std::string path = RequestPath(config.sink);
    int rfd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rfd < 0)
      return Status::InvalidArgument(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
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
    MarkForReread(ckpt, tables);
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
