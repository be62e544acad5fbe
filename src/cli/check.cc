#include "cli/check.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "checkpoint/checkpoint_file.h"
#include "cli/run.h"
#include "cli/table_config.h"
#include "mysql/replication.h"
#include "snapshot/coordinator.h"
#include "snapshot/incremental.h"
#include "schema/text_value.h"
#include "sink/jsonl_sink.h"
#include "sink/mysql_sink.h"
#include "sink/postgres_sink.h"
#include "sink/sqlite_sink.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/utf8.h"

namespace sluice::cli {
namespace {

uint64_t ToU64(const std::optional<std::string>& s) {
  uint64_t v = 0;
  if (!s) return 0;
  std::from_chars(s->data(), s->data() + s->size(), v);
  return v;
}

std::string Duration(double s) {
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string Bytes(uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} bytes", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{} KiB", b / 1024);
  return fmt::format("{} MiB", b / (1024 * 1024));
}

// Largest bytes a value of a non-LOB column can take (declared), for the packet estimate.
uint64_t DeclaredBytes(const std::string& type, uint64_t octets, uint64_t precision) {
  static const std::map<std::string, uint64_t> fixed = {
      {"tinyint", 1}, {"smallint", 2}, {"mediumint", 3}, {"int", 4},      {"bigint", 8},
      {"float", 4},   {"double", 8},   {"date", 3},      {"time", 6},     {"datetime", 8},
      {"timestamp", 7}, {"year", 1},   {"bit", 8},       {"enum", 2},     {"set", 8},
      {"inet4", 4},   {"inet6", 16},   {"uuid", 16}};
  if (auto it = fixed.find(type); it != fixed.end()) return it->second;
  if (type == "decimal") return precision / 2 + 2;
  return octets > 0 ? octets : 8;
}

// Columns whose declared maximum (16 MiB and more) says nothing about real rows: measured.
bool IsLargeObject(const std::string& type) {
  static const std::set<std::string> lob = {
      "mediumtext", "longtext", "mediumblob", "longblob", "json", "geometry", "point",
      "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection"};
  return lob.count(type) > 0;
}

// LOB columns are measured (MAX(LENGTH)) only in tables up to this many rows: the check must
// stay quick at every run start.
constexpr uint64_t kMeasureLobMaxRows = 200000;

// Whether `pid` is a process on this machine other than this one, running a program of this
// one's name (/proc/<pid>/comm): an id left in SHOW SLAVE HOSTS by a run killed a moment ago
// may since belong to an unrelated process.
bool SluiceProcessRunning(int64_t pid) {
  if (pid <= 0 || pid == static_cast<int64_t>(::getpid())) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  auto comm = [](const std::string& path) {
    std::ifstream in(path);
    std::string name;
    std::getline(in, name);
    return name;
  };
  std::string theirs = comm(fmt::format("/proc/{}/comm", pid));
  return !theirs.empty() && theirs == comm("/proc/self/comm");
}

std::string JoinedHosts(const std::vector<std::string>& hosts) {
  std::string out;
  for (const std::string& h : hosts) out += (out.empty() ? "" : ", ") + h;
  return out;
}

CheckLine Line(std::string name, CheckOutcome o, std::string detail, std::string fix = "",
               bool fatal = false) {
  CheckLine l;
  l.name = std::move(name);
  l.outcome = o;
  l.detail = std::move(detail);
  l.fix = std::move(fix);
  l.fatal = fatal && o == CheckOutcome::kFail;
  return l;
}

std::optional<double> FileAgeSeconds(const std::vector<std::string>& paths) {
  std::optional<time_t> newest;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;
    if (!newest || st.st_mtime > *newest) newest = st.st_mtime;
  }
  if (!newest) return std::nullopt;
  return std::max(0.0, std::difftime(std::time(nullptr), *newest));
}

// TCP reachability of the first "host:port" of a list, within 3 s.
Status TcpReachable(std::string endpoint, const char* default_port) {
  if (auto comma = endpoint.find(','); comma != std::string::npos) endpoint.resize(comma);
  if (auto scheme = endpoint.find("://"); scheme != std::string::npos) endpoint.erase(0, scheme + 3);
  if (auto at = endpoint.rfind('@'); at != std::string::npos) endpoint.erase(0, at + 1);
  std::string host = endpoint, port = default_port;
  if (auto colon = endpoint.rfind(':'); colon != std::string::npos) {
    host = endpoint.substr(0, colon);
    port = endpoint.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::Unavailable(fmt::format("cannot resolve {}: {}", host, gai_strerror(rc)));
  Status result = Status::Unavailable(fmt::format("cannot connect to {}:{}", host, port));
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 3000) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        if (err) errno = err;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) result = Status::Ok();
    else result = Status::Unavailable(fmt::format("cannot connect to {}:{}: {}", host, port, std::strerror(errno)));
    ::close(fd);
    if (rc == 0) break;
  }
  ::freeaddrinfo(res);
  return result;
}

// The SQLite replica's stored checkpoint, read through a read-only connection.
Result<std::optional<std::string>> ReadSqliteCheckpoint(const std::string& path) {
  Result<sqlite3*> opened = OpenSqliteReader(path);
  sqlite3* db = opened.ok() ? *opened : nullptr;
  std::optional<std::string> out;
  Status st;
  if (!opened.ok()) {
    st = opened.status();
  } else {
    auto text = sluice::ReadSqliteCheckpoint(db);
    if (text.ok()) out = std::move(text).value();
    else st = text.status().WithContext(fmt::format("the checkpoint of {}", path));
  }
  sqlite3_close(db);
  if (!st.ok()) return st;
  return out;
}

// A file sluice will write: its directory must exist and be writable, the file (if there) too.
std::string FileProblem(const std::string& path, const char* key) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fmt::format("{} {} is a directory; name a file", key, path);
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    return fmt::format("{} {} is a symbolic link: name the file itself", key, path);
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::exists(parent, ec)) return fmt::format("{} {}: directory {} does not exist", key, path, parent.string());
  if (!fs::is_directory(parent, ec)) return fmt::format("{} {}: {} is not a directory", key, path, parent.string());
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return fmt::format("{} {}: directory {} is not writable: {}", key, path, parent.string(), std::strerror(errno));
  if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0)
    return fmt::format("{} {} is not writable: {}", key, path, std::strerror(errno));
  return "";
}

// Whether another run holds "<path>.lock" (run.cc SinkLock). Never creates the lock file.
bool LockHeld(const std::string& lock_path) {
  int fd = ::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);  // releases our lock if we got it
  return held;
}

}  // namespace

const char* OutcomeName(CheckOutcome o) {
  switch (o) {
    case CheckOutcome::kPass: return "PASS";
    case CheckOutcome::kWarn: return "WARN";
    case CheckOutcome::kFail: return "FAIL";
  }
  return "?";
}

namespace {

// True when some selected table is streamed from the binlog (mode cdc, the default). When
// none is, the binlog, its settings and the replication privileges are not needed: their
// lines pass, saying so (docs/incremental.md).

void RelaxBinlogLines(std::vector<CheckLine>& lines) {
  static const std::set<std::string> binlog = {
      "log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "GTID",
      "REPLICATION SLAVE privilege", "REPLICATION CLIENT privilege", "LOCK TABLES privilege", "server_id",
      "binlog retention: resume position", "binlog retention: snapshot time"};
  for (CheckLine& l : lines) {
    if (l.name.starts_with("binlog retention")) {
      // About a stream position and a snapshot that this run does not have.
      l = CheckLine{l.name, CheckOutcome::kPass, false, "not needed: no selected table uses mode cdc", "", l.code};
      continue;
    }
    if (!binlog.count(l.name) || l.outcome == CheckOutcome::kPass) continue;
    // The FAIL it would have been, said as what would apply with a cdc table (a new user's
    // probe read "(source.server_id is missing ...)" on a passing line as a failure).
    l.detail = "not needed: no selected table uses mode cdc (with one: " + l.detail + ")";
    l.outcome = CheckOutcome::kPass;
    l.fatal = false;
    l.fix.clear();
  }
}

}  // namespace

// The selected tables' names, as `check` found them.
static std::vector<TableName> SelectedNames(const SourceFacts& f) {
  std::vector<TableName> names;
  for (const TableFacts& t : f.tables) names.push_back(t.name);
  return names;
}

// Whether the [table] sections give each selected table one mode (ModesForTables).
static bool ModesResolve(const SourceFacts& f, const Config& config) {
  if (config.tables.empty()) return true;
  const std::vector<TableName> names = SelectedNames(f);
  return ModesForTables(config, names).ok();
}

Status AddResumeHistory(Connection& conn, const std::optional<Checkpoint>& checkpoint, SourceFacts* facts) {
  if (!checkpoint || checkpoint->stream_start.empty() || !facts->info.log_bin) return Status::Ok();
  if (checkpoint->source.server_id != 0 && checkpoint->source.server_id != facts->info.server_id)
    return Status::Ok();  // another server's position: the GTID history decides (stream/resume.h)
  ASSIGN_OR_RETURN(HistoryFacts h, ReadHistoryAt(conn, facts->info.flavor, checkpoint->stream_start, checkpoint->gtid,
                                                 facts->info.gtid_mode, facts->info.gtid_executed,
                                                 facts->binlogs_known ? &facts->binlogs : nullptr));
  facts->resume_history = std::move(h);
  return Status::Ok();
}

bool NeedsBinlog(const SourceFacts& f, const Config& config) {
  if (config.tables.empty() || f.tables.empty()) return true;
  const std::vector<TableName> names = SelectedNames(f);
  auto modes = ModesForTables(config, names);
  return !modes.ok() || !modes->cdc.empty();
}

Result<SourceFacts> GatherSourceFacts(Connection& conn, const Config& config, bool exact_counts,
                                      bool settle_replica_ids) {
  SourceFacts f;
  f.endpoint = fmt::format("{}:{}", config.source.host, config.source.port);
  f.replica_ids_settled = settle_replica_ids;
  ASSIGN_OR_RETURN(f.info, ProbeServer(conn));
  {
    ASSIGN_OR_RETURN(QueryResult v, conn.Query("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                                               "('max_allowed_packet', 'binlog_expire_logs_seconds', "
                                               "'expire_logs_days')"));
    double seconds = 0, days = 0;
    for (const TextRow& row : v.rows) {
      if (row.size() < 2 || !row[0] || !row[1]) continue;
      if (*row[0] == "max_allowed_packet") f.max_allowed_packet = ToU64(row[1]);
      else if (*row[0] == "binlog_expire_logs_seconds") seconds = std::atof(row[1]->c_str());
      else if (*row[0] == "expire_logs_days") days = std::atof(row[1]->c_str());
    }
    f.expire_seconds = seconds > 0 ? seconds : days * 86400;
  }
  ASSIGN_OR_RETURN(f.privileges, CheckPrivileges(conn, config.source.tables));
  if (!conn.tls_cipher().empty()) f.tls_description = conn.DescribeTls();

  if (auto logs = ListBinaryLogs(conn); logs.ok()) {
    f.binlogs = std::move(logs).value();
    f.binlogs_known = true;
  } else if (logs.status().code() == StatusCode::kUnavailable) {
    return logs.status();
  }

  // A replica that has just disconnected (sluice's own last run, stopped a moment ago) stays
  // listed until its dump thread notices, 1-2 s: only an id still listed after 3 s is in use
  // (settle_replica_ids).
  for (int attempt = 0;; ++attempt) {
    auto hosts = conn.Query("SHOW SLAVE HOSTS");
    if (hosts.status().code() == StatusCode::kUnavailable) return hosts.status();
    if (!hosts.ok()) {
      f.replica_hosts_error = hosts.status().message();
      break;
    }
    f.replica_hosts_known = true;
    f.replica_hosts.clear();
    bool ours = false;
    int id = hosts->ColumnIndex("Server_id"), host = hosts->ColumnIndex("Host");
    for (const TextRow& row : hosts->rows)
      if (id >= 0 && row[id]) {
        f.replica_hosts.emplace_back(static_cast<uint32_t>(ToU64(row[id])),
                                     host >= 0 && row[host] ? *row[host] : "");
        ours |= f.replica_hosts.back().first == config.source.server_id;
      }
    f.replica_hosts_running.clear();
    for (const auto& [sid, listed] : f.replica_hosts)
      if (sid == config.source.server_id && config.source.server_id != 0)
        if (auto pid = SluicePidOf(listed); pid && SluiceProcessRunning(*pid)) f.replica_hosts_running.push_back(listed);
    if (!ours || !settle_replica_ids || config.source.server_id == 0 || attempt == 12 ||
        !f.replica_hosts_running.empty())
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }

  // Tables: engines, row counts, and the largest row from the declared column sizes. A
  // pattern that matches nothing is a fact (EvaluatePatterns); the tables the other patterns
  // match are still judged here.
  auto listed = ListTablesSkippingUnmatched(conn, TableFilter{config.source.tables, config.source.exclude},
                                            &f.unmatched_patterns);
  if (!listed.ok()) {
    if (listed.status().code() == StatusCode::kUnavailable) return listed.status();
    if (listed.status().code() == StatusCode::kNotFound && f.unmatched_patterns.empty())
      f.unmatched_patterns.push_back(listed.status().message());
    return f;  // EvaluateServer reports the missing tables through the privilege lines
  }
  for (const std::string& p : config.source.exclude) {
    auto some = ListTables(conn, TableFilter{{p}, {}});
    if (!some.ok() && some.status().code() == StatusCode::kUnavailable) return some.status();
    if (!some.ok() && some.status().code() == StatusCode::kNotFound) f.unmatched_excludes.push_back(p);
  }
  std::map<std::string, size_t> index;
  std::set<std::string> dbs;
  for (const TableName& t : *listed) {
    index[t.db + '\0' + t.table] = f.tables.size();
    dbs.insert(t.db);
    TableFacts tf;
    tf.name = t;
    f.tables.push_back(std::move(tf));
  }
  if (f.tables.empty()) return f;
  std::string in;
  for (const auto& db : dbs) in += (in.empty() ? "" : ", ") + conn.Quote(db);
  ASSIGN_OR_RETURN(QueryResult tables,
                   conn.Query("SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE, TABLE_ROWS FROM "
                              "information_schema.TABLES WHERE TABLE_SCHEMA IN (" + in + ")"));
  for (const TextRow& row : tables.rows) {
    if (row.size() < 4 || !row[0] || !row[1]) continue;
    auto it = index.find(*row[0] + '\0' + *row[1]);
    if (it == index.end()) continue;
    f.tables[it->second].engine = row[2].value_or("");
    f.tables[it->second].rows = ToU64(row[3]);
  }
  ASSIGN_OR_RETURN(QueryResult cols,
                   conn.Query("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, "
                              "CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION FROM information_schema.COLUMNS "
                              "WHERE TABLE_SCHEMA IN (" + in + ")"));
  std::map<size_t, std::vector<std::string>> lob_columns;
  for (const TextRow& row : cols.rows) {
    if (row.size() < 6 || !row[0] || !row[1] || !row[2] || !row[3]) continue;
    auto it = index.find(*row[0] + '\0' + *row[1]);
    if (it == index.end()) continue;
    std::string type = *row[3];
    for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (IsLargeObject(type)) lob_columns[it->second].push_back(*row[2]);
    else f.tables[it->second].largest_row += DeclaredBytes(type, ToU64(row[4]), ToU64(row[5]));
  }
  // Cascades: changes InnoDB makes to the child rows are not in the binlog (a new user's
  // probe: parents deleted and re-keyed, the replica's children kept; `check` was READY).
  if (auto fks = conn.Query("SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, UNIQUE_CONSTRAINT_SCHEMA, "
                            "REFERENCED_TABLE_NAME, DELETE_RULE, UPDATE_RULE FROM "
                            "information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA IN (" + in +
                            ") ORDER BY 1, 2, 3");
      fks.ok()) {
    for (const TextRow& row : fks->rows) {
      if (row.size() < 7 || !row[0] || !row[1] || !index.count(*row[0] + '\0' + *row[1])) continue;
      std::string rules;
      for (const auto& [what, rule] : {std::pair{"DELETE", row[5]}, std::pair{"UPDATE", row[6]}})
        if (rule && *rule != "RESTRICT" && *rule != "NO ACTION")
          rules += fmt::format("{}ON {} {}", rules.empty() ? "" : ", ", what, *rule);
      if (rules.empty()) continue;
      f.fk_cascades.push_back(fmt::format("{}.{} ({}: {} from {}.{})", *row[0], *row[1], row[2].value_or("?"), rules,
                                          row[3].value_or("?"), row[4].value_or("?")));
    }
  } else if (fks.status().code() == StatusCode::kUnavailable) {
    return fks.status();
  }
  // Long unique indexes (MariaDB): INDEX_TYPE HASH on a unique index of an engine other than
  // MEMORY (whose plain indexes are HASH).
  if (f.info.flavor == Flavor::kMariaDB) {
    if (auto lu = conn.Query("SELECT s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME FROM information_schema.STATISTICS s "
                             "JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.TABLE_SCHEMA AND "
                             "t.TABLE_NAME = s.TABLE_NAME WHERE s.TABLE_SCHEMA IN (" + in + ") AND s.NON_UNIQUE = 0 "
                             "AND s.INDEX_TYPE = 'HASH' AND t.ENGINE <> 'MEMORY' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3");
        lu.ok()) {
      for (const TextRow& row : lu->rows) {
        if (row.size() < 3 || !row[0] || !row[1] || !row[2]) continue;
        auto it = index.find(*row[0] + '\0' + *row[1]);
        if (it != index.end()) f.tables[it->second].long_unique.push_back(*row[2]);
      }
    } else if (lu.status().code() == StatusCode::kUnavailable) {
      return lu.status();
    }
  }
  if (auto xa = conn.Query("XA RECOVER"); xa.ok()) {
    const int data = xa->ColumnIndex("data");
    for (const TextRow& row : xa->rows)
      if (data >= 0 && row[data]) f.prepared_xa.push_back(*row[data]);
  } else if (xa.status().code() == StatusCode::kUnavailable) {
    return xa.status();
  }
  for (TableFacts& t : f.tables) {
    const std::string q = QuoteIdentifier(t.name.db) + "." + QuoteIdentifier(t.name.table);
    if (exact_counts && t.rows < config.snapshot.exact_count_max_rows) {
      // The estimate of a small table can be far off (InnoDB statistics); the planner counts.
      auto r = conn.Query("SELECT COUNT(*) FROM " + q);
      if (r.ok() && !r->rows.empty()) t.rows = ToU64(r->rows[0][0]);
      else if (!r.ok() && r.status().code() == StatusCode::kUnavailable) return r.status();
    }
  }
  for (auto& [i, names] : lob_columns) {
    TableFacts& t = f.tables[i];
    if (t.rows > kMeasureLobMaxRows) {
      t.lob_unmeasured = true;
      continue;
    }
    std::string sum;
    for (const auto& c : names) sum += (sum.empty() ? "" : " + ") + fmt::format("COALESCE(LENGTH({}), 0)", QuoteIdentifier(c));
    auto r = conn.Query(fmt::format("SELECT MAX({}) FROM {}.{}", sum, QuoteIdentifier(t.name.db),
                                    QuoteIdentifier(t.name.table)));
    if (r.ok() && !r->rows.empty()) t.largest_row += ToU64(r->rows[0][0]);
    else if (!r.ok() && r.status().code() == StatusCode::kUnavailable) return r.status();
    else t.lob_unmeasured = true;
  }
  return f;
}

// The first `max` of `items` joined by `sep`, then " and N more" when there are others.
static std::string FirstOf(const std::vector<std::string>& items, size_t max, std::string_view sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max; ++i) out += (i ? std::string(sep) : std::string()) + items[i];
  if (items.size() > max) out += fmt::format("{}and {} more", sep == ", " ? " " : sep, items.size() - max);
  return out;
}

std::vector<CheckLine> EvaluateServer(const SourceFacts& f, const Config& config) {
  std::vector<CheckLine> out;
  const ServerInfo& info = f.info;
  const bool mariadb = info.flavor == Flavor::kMariaDB;

  out.push_back(Line("TCP connection", CheckOutcome::kPass, fmt::format("connected to {}", f.endpoint)));
  {
    bool supported = mariadb ? info.version_major >= 10 : info.version_major >= 8;
    out.push_back(Line("server version",
                       supported ? CheckOutcome::kPass : CheckOutcome::kWarn,
                       fmt::format("{} {}{}", FlavorName(info.flavor), info.version,
                                   supported ? "" : ": sluice supports MySQL 8.0+ and MariaDB 10.x+"),
                       supported ? "" : "upgrade the server, or expect untested behaviour"));
  }
  out.push_back(info.log_bin
                    ? Line("log_bin", CheckOutcome::kPass, "ON")
                    : Line("log_bin", CheckOutcome::kFail, "OFF: the server writes no binlog, there is nothing to stream",
                           "restart the server with log_bin (e.g. --log-bin=mysql-bin) and binlog_format=ROW", true));
  if (info.binlog_format == "ROW") {
    out.push_back(Line("binlog_format", CheckOutcome::kPass, "ROW"));
  } else {
    out.push_back(Line("binlog_format", CheckOutcome::kFail,
                       fmt::format("{}: sluice reads row changes and needs ROW (a statement cannot be replayed as rows)",
                                   info.binlog_format.empty() ? "unknown" : info.binlog_format),
                       "SET GLOBAL binlog_format = 'ROW' and binlog_format=ROW in the server config; existing "
                       "sessions keep their old format until they reconnect",
                       true));
  }
  {
    const std::string& img = info.binlog_row_image;
    const bool sqlite = config.sink.type == SinkType::kSqlite;
    if (img.empty() || img == "FULL") {
      out.push_back(Line("binlog_row_image", CheckOutcome::kPass, img.empty() ? "not reported (FULL assumed)" : "FULL"));
    } else {
      std::string means =
          sqlite ? "updates carry only some columns: the replica leaves the others as they were and new rows "
                   "get column defaults; a snapshot resumed across two runs is exact only with FULL"
                 : "change records carry only the logged columns (the others are absent from 'before' and "
                   "'after'); consumers must merge them by key";
      if (img == "NOBLOB")
        means = sqlite ? "unchanged BLOB/TEXT columns are missing from updates: the replica keeps its old value; a "
                         "snapshot resumed across two runs is exact only with FULL"
                       : "unchanged BLOB/TEXT columns are absent from change records";
      out.push_back(Line("binlog_row_image", CheckOutcome::kWarn, fmt::format("{}: {}", img, means),
                         "SET GLOBAL binlog_row_image = 'FULL' (and in the server config)"));
    }
  }
  {
    const std::string& md = info.binlog_row_metadata;
    if (md == "FULL") {
      out.push_back(Line("binlog_row_metadata", CheckOutcome::kPass, "FULL"));
    } else {
      out.push_back(Line(
          "binlog_row_metadata", CheckOutcome::kWarn,
          md.empty() ? "not supported by this server: column names, signedness and ENUM/SET labels come from "
                       "information_schema, so a binlog written before a DDL is read with the current definition"
                     : fmt::format("{}: column names, signedness and ENUM/SET labels are not in the binlog and come "
                                   "from information_schema, so a binlog written before a DDL is read with the "
                                   "current definition (a reordered column would stop the run)",
                                   md),
          md.empty() ? "MySQL 8.0.1+ / MariaDB 10.5+ log it" : "SET GLOBAL binlog_row_metadata = 'FULL'"));
    }
  }
  if (mariadb) {
    out.push_back(Line("GTID", CheckOutcome::kPass,
                       fmt::format("MariaDB GTIDs (gtid_binlog_pos {}, gtid_domain_id {}, gtid_strict_mode {})",
                                   info.gtid_binlog_pos.empty() ? "empty" : info.gtid_binlog_pos,
                                   info.gtid_domain_id, info.gtid_strict_mode ? "ON" : "OFF")));
  } else if (info.gtid_mode == "ON") {
    out.push_back(Line("GTID", CheckOutcome::kPass, "gtid_mode ON"));
  } else {
    out.push_back(Line("GTID", CheckOutcome::kWarn,
                       fmt::format("gtid_mode {}: positions are file/offset only, so a failover to another "
                                   "server cannot be followed",
                                   info.gtid_mode.empty() ? "unknown" : info.gtid_mode),
                       "enable GTIDs: enforce_gtid_consistency=ON, then gtid_mode OFF_PERMISSIVE -> ON_PERMISSIVE -> ON"));
  }
  for (const ServerCheck& c : f.privileges)
    out.push_back(Line(c.name, c.passed ? CheckOutcome::kPass : CheckOutcome::kFail, c.detail, c.fix, true));
  {
    std::vector<std::string> bad, allowed;
    std::map<std::string, size_t> engines;
    const TableFilter allow{config.snapshot.allow_inconsistent_read, {}};
    for (const TableFacts& t : f.tables) {
      ++engines[t.engine.empty() ? "unknown" : t.engine];
      if (t.engine.empty() || !ConsistentReadEngine(t.engine))
        (TableSelected(allow, t.name.db, t.name.table) ? allowed : bad)
            .push_back(fmt::format("{} ({})", t.name.QualifiedName(), t.engine.empty() ? "unknown" : t.engine));
    }
    std::string summary;
    for (const auto& [e, n] : engines) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, e);
    if (f.tables.empty()) {
      out.push_back(Line("table engines", CheckOutcome::kWarn, "no table matches source.tables (or none is visible to the user)",
                         "check source.tables and the user's SELECT privilege"));
    } else if (bad.empty() && allowed.empty()) {
      out.push_back(Line("table engines", CheckOutcome::kPass, fmt::format("{} table(s): {}", f.tables.size(), summary)));
    } else if (bad.empty()) {
      const std::string list = FirstOf(allowed, 10);
      out.push_back(Line("table engines", CheckOutcome::kWarn,
                         fmt::format("not transactional, copied without a consistent read "
                                     "(snapshot.allow_inconsistent_read): {} (one without a primary key is "
                                     "refused even so)",
                                     list),
                         "ALTER TABLE ... ENGINE=InnoDB"));
    } else {
      const std::string list = FirstOf(bad, 10);
      out.push_back(Line("table engines", CheckOutcome::kFail,
                         fmt::format("not transactional: {}: their copy is not one consistent read (rows change "
                                     "while they are read; the stream repairs them only with FULL row images)",
                                     list),
                         "ALTER TABLE ... ENGINE=InnoDB, leave them out (source.exclude), or accept an "
                         "inconsistent copy (snapshot.allow_inconsistent_read)"));
    }
  }
  {
    // Tables the stream reads (mode cdc) with a long unique index: their rows carry one
    // hidden hash column per such index, which sluice does not map (a new user's probe: the
    // first change stopped every run, and the resnapshot it advised did not help).
    std::vector<TableName> listed;
    for (const TableFacts& t : f.tables) listed.push_back(t.name);
    std::set<std::string> streamed;
    if (auto modes = ModesForTables(config, listed); modes.ok())
      for (const TableName& t : modes->cdc) streamed.insert(t.QualifiedName());
    std::vector<std::string> hashed;
    for (const TableFacts& t : f.tables)
      if (!t.long_unique.empty() && streamed.count(t.name.QualifiedName()))
        hashed.push_back(fmt::format("{} ({})", t.name.QualifiedName(), FirstOf(t.long_unique, 3)));
    if (!hashed.empty())
      out.push_back(Line("long unique indexes", CheckOutcome::kFail,
                         fmt::format("MariaDB long unique indexes (UNIQUE on a BLOB/TEXT column, or USING HASH) on "
                                     "tables the stream reads: {}; the server logs a hidden hash column of each in "
                                     "every row, which sluice does not map yet",
                                     FirstOf(hashed, 10, "; ")),
                         "read those tables without the binlog ([table.\"db.t\"] mode = \"full\" or "
                         "\"incremental\"), leave them out (source.exclude), or make the index a unique one on a "
                         "prefix (UNIQUE (c(255)), which the server enforces on the prefix only)",
                         true));
  }
  if (!f.unmatched_excludes.empty())
    out.push_back(Line("source.exclude", CheckOutcome::kWarn,
                       fmt::format("{} match(es) no table this user can see: a typo leaves the table it meant to "
                                   "leave out captured",
                                   FirstOf(f.unmatched_excludes, 5)),
                       "correct the pattern, or remove it if its tables are gone"));
  if (!f.fk_cascades.empty()) {
    const std::string list = FirstOf(f.fk_cascades, 5, "; ");
    out.push_back(Line("foreign key cascades", CheckOutcome::kWarn,
                       fmt::format("rows of captured tables change by cascade, which the binlog does not carry (the "
                                   "server makes those changes itself): {}; the replica keeps the child rows as "
                                   "they were",
                                   list),
                       "have the application change the child rows itself (the binlog then holds them), or copy "
                       "those tables again after such changes (`sluice resnapshot`); docs/design.md, Known limits"));
  }
  if (!f.prepared_xa.empty()) {
    const std::string list = FirstOf(f.prepared_xa, 5);
    out.push_back(Line("prepared XA transactions", CheckOutcome::kWarn,
                       fmt::format("{} XA transaction(s) prepared and not committed or rolled back (XA RECOVER): {}; "
                                   "while one is pending the resume point stays at its PREPARE (binlogs purged past "
                                   "it make the next run stop), and one prepared before a first snapshot has every "
                                   "captured table copied again when it commits",
                                   f.prepared_xa.size(), list),
                       "XA COMMIT or XA ROLLBACK them"));
  }
  {
    const uint32_t id = config.source.server_id;
    std::string users;
    bool from_here = false;  // registered by sluice on this machine (mysql/replication.h)
    for (const auto& [sid, host] : f.replica_hosts) {
      if (sid != id) continue;
      users += (users.empty() ? "" : ", ") + (host.empty() ? std::string("a replica") : host);
      from_here = from_here || host == ReplicaHostName() || SluicePidOf(host).has_value();
    }
    if (id == 0 && !ModesResolve(f, config)) {
      // Two [table] sections match one table: which tables are cdc (and so whether an id is
      // needed) is unknown until that is fixed; the "table modes" line says so, alone.
    } else if (id == 0 && f.tables.empty() && !config.tables.empty()) {
      // Sections for reads without the binlog, and no table: a table dropped or renamed away
      // (a new user's probe got only the server_id advice, which would turn the pipeline into
      // a binlog stream).
      out.push_back(Line("server_id", CheckOutcome::kFail,
                         "source.tables matches no table at the source, so a run would stream the binlog for the "
                         "tables created later (mode cdc, the default), and that needs source.server_id",
                         "check source.tables and the [table] sections (a table dropped or renamed?); for a binlog "
                         "stream, set source.server_id to a replica id unique among the server's replicas",
                         true));
    } else if (id == 0) {
      std::string cdc;
      if (!config.tables.empty()) {
        const std::vector<TableName> names = SelectedNames(f);
        if (auto modes = ModesForTables(config, names); modes.ok()) {
          for (size_t i = 0; i < modes->cdc.size() && i < 5; ++i)
            cdc += (i ? ", " : "") + modes->cdc[i].QualifiedName();
          if (modes->cdc.size() > 5) cdc += fmt::format(" and {} more", modes->cdc.size() - 5);
        }
      }
      out.push_back(Line("server_id", CheckOutcome::kFail,
                         cdc.empty() ? std::string("source.server_id is missing: the binlog stream of the tables in "
                                                   "mode cdc needs one")
                                     : fmt::format("source.server_id is missing: the binlog stream of the tables in "
                                                   "mode cdc needs one: {} (a table no [table] section matches is cdc)",
                                                   cdc),
                         cdc.empty() ? std::string("set source.server_id to a replica id unique among the server's "
                                                   "replicas (e.g. 5401)")
                                     : std::string("give those tables a [table] section with another mode, or set "
                                                   "source.server_id to a replica id unique among the server's "
                                                   "replicas (e.g. 5401)"),
                         true));
    } else if (id == info.server_id) {
      out.push_back(Line("server_id", CheckOutcome::kFail,
                         fmt::format("source.server_id {} is the server's own server_id", id),
                         "pick another source.server_id, unique among the server's replicas", true));
    } else if (!f.replica_hosts_running.empty()) {
      // The server would drop the running one's connection for this run's: refuse instead.
      out.push_back(Line("server_id", CheckOutcome::kFail,
                         fmt::format("source.server_id {} is in use by another sluice run on this machine, still "
                                     "running ({}): the server drops one of two replicas with the same id",
                                     id, JoinedHosts(f.replica_hosts_running)),
                         "give this pipeline its own source.server_id, or stop the other run first", true));
    } else if (!users.empty() && from_here && !f.replica_ids_settled) {
      // `sluice run` does not wait for the id to leave the list: most often it is this
      // tool's own run, stopped a moment ago.
      out.push_back(Line("server_id", CheckOutcome::kWarn,
                         fmt::format("source.server_id {} is listed by the server ({}, this machine): a replica "
                                     "that just disconnected, such as this tool's previous run, stays listed for a "
                                     "few seconds; if another replica uses it, the server drops one of the two",
                                     id, users),
                         "if another replica uses it, pick another source.server_id (SHOW SLAVE HOSTS lists the "
                         "ids in use)"));
    } else if (!users.empty()) {
      out.push_back(Line("server_id", CheckOutcome::kFail,
                         fmt::format("source.server_id {} is in use by a connected replica ({}): the server drops "
                                     "one of two replicas with the same id",
                                     id, users),
                         "pick another source.server_id (SHOW SLAVE HOSTS lists the ids in use)"));
    } else if (!f.replica_hosts_known) {
      out.push_back(Line("server_id", CheckOutcome::kPass,
                         fmt::format("{} differs from the server's ({}); other replicas not checked (SHOW SLAVE "
                                     "HOSTS refused: {})",
                                     id, info.server_id, f.replica_hosts_error)));
    } else {
      out.push_back(Line("server_id", CheckOutcome::kPass,
                         fmt::format("{}: not the server's ({}), not used by any of {} connected replica(s)", id,
                                     info.server_id, f.replica_hosts.size())));
    }
  }
  if (!f.tls_description.empty()) {
    out.push_back(Line("TLS", CheckOutcome::kPass,
                       fmt::format("{} (source.tls = \"{}\", server certificate {})", f.tls_description,
                                   TlsModeName(config.source.tls),
                                   TlsVerifiesServer(config.source.tls) ? "verified" : "not verified")));
  } else if (config.source.tls == TlsMode::kDisabled) {
    out.push_back(Line("TLS", CheckOutcome::kPass, "off, as configured (source.tls = \"disabled\")"));
  } else {
    out.push_back(Line("TLS", CheckOutcome::kWarn,
                       "the server offers no TLS: queries, row data and the binlog travel in plain text "
                       "(source.tls = \"preferred\")",
                       "configure ssl_cert/ssl_key on the server and set source.tls = \"verify_identity\", or "
                       "source.tls = \"disabled\" to accept plain text"));
  }
  {
    const TableFacts* widest = nullptr;
    std::vector<std::string> unmeasured;
    for (const TableFacts& t : f.tables) {
      if (!widest || t.largest_row > widest->largest_row) widest = &t;
      if (t.lob_unmeasured) unmeasured.push_back(t.name.QualifiedName());
    }
    std::string note = unmeasured.empty() ? ""
                                          : fmt::format("; large-object columns of {} table(s) with more than {} rows "
                                                        "not measured (e.g. {})",
                                                        unmeasured.size(), kMeasureLobMaxRows, unmeasured.front());
    if (!widest) {
      out.push_back(Line("max_allowed_packet", CheckOutcome::kPass, fmt::format("{} (no table to compare with)", Bytes(f.max_allowed_packet))));
    } else {
      // An update event carries the row twice (before and after image), plus headers.
      const uint64_t need = 2 * widest->largest_row + 1024;
      if (f.max_allowed_packet >= need) {
        out.push_back(Line("max_allowed_packet", CheckOutcome::kPass,
                           fmt::format("{}; the largest row is about {} ({}), an update event of it about {}{}",
                                       Bytes(f.max_allowed_packet), Bytes(widest->largest_row),
                                       widest->name.QualifiedName(), Bytes(need), note)));
      } else {
        uint64_t suggest = 1024;
        while (suggest < need) suggest *= 2;
        // The dump sends larger events (its own limit), and result rows are not held to it: a
        // new user's probe streamed and copied 2 MB rows under 1 MB. What it breaks is
        // MariaDB's BINLOG_GTID_POS past such an event (NULL, read as a reset before).
        out.push_back(Line("max_allowed_packet", CheckOutcome::kWarn,
                           fmt::format("{} is smaller than an update event of the largest row: {} can hold rows of "
                                       "about {} (declared column sizes, large objects measured), so its event "
                                       "needs about {}; the stream reads such events, but past one MariaDB's "
                                       "BINLOG_GTID_POS answers NULL, so a start or reconnect cannot check its "
                                       "resume position by it (sluice then checks the checkpoint's last event, or "
                                       "stops asking for a larger value){}",
                                       Bytes(f.max_allowed_packet), widest->name.QualifiedName(),
                                       Bytes(widest->largest_row), Bytes(need), note),
                           fmt::format("SET GLOBAL max_allowed_packet = {} (and in the server config)", suggest)));
      }
    }
  }
  if (!NeedsBinlog(f, config)) RelaxBinlogLines(out);
  if (config.snapshot.watermark)
    for (CheckLine& l : out)
      if (l.name == "LOCK TABLES privilege" && l.outcome != CheckOutcome::kPass)
        // Watermarks pin each read's point instead (snapshot/watermark.h).
        l = CheckLine{l.name, CheckOutcome::kPass, false,
                      "not needed: snapshot.consistency = \"watermark\" (" + l.detail + ")", "", l.code};
  return out;
}

std::vector<CheckLine> EvaluateRetention(const SourceFacts& f, const Config& config,
                                         const std::optional<Checkpoint>& checkpoint,
                                         std::optional<double> age) {
  std::vector<CheckLine> out;
  const std::string retention = f.expire_seconds > 0
                                    ? fmt::format("binlogs expire after {} (binlog_expire_logs_seconds)", Duration(f.expire_seconds))
                                    : "binlogs never expire (binlog_expire_logs_seconds = 0)";
  // The resume position against what the server still has.
  if (!checkpoint) {
    out.push_back(Line("binlog retention: resume position", CheckOutcome::kPass,
                       "no checkpoint yet: a new destination starts from a new snapshot"));
  } else if (checkpoint->source.server_id != 0 && checkpoint->source.server_id != f.info.server_id) {
    out.push_back(Line("binlog retention: resume position", CheckOutcome::kWarn,
                       fmt::format("the checkpoint belongs to another server ({}; this one has server_id {}): a "
                                   "failover or restore. Its file/position mean nothing here; the run continues "
                                   "only if this server's GTID history holds the checkpoint's GTID position {}",
                                   checkpoint->source.ToString(), f.info.server_id,
                                   checkpoint->gtid.empty() ? "(none recorded)" : checkpoint->gtid),
                       "point source.host at the server the destination was copied from, or let `sluice run` "
                       "check the GTID history (it stops with exit 3 if the position is missing)"));
  } else if (checkpoint->stream_start.file.empty() || !f.binlogs_known || !f.info.log_bin) {
    out.push_back(Line("binlog retention: resume position", CheckOutcome::kPass,
                       fmt::format("resume position {} not checked (the server's binlog list is unknown)",
                                   checkpoint->stream_start.ToString())));
  } else {
    // The same server (or an older checkpoint naming none): does it still hold the place,
    // with our history there (stream/resume.h CheckHistoryHolds)? `run` refuses the same way.
    HistoryFacts history;
    if (f.resume_history) {
      history = *f.resume_history;
    } else {
      history.flavor = f.info.flavor;
      history.binlogs = f.binlogs;
      history.binlogs_known = true;
    }
    const HistoryCheck held = CheckHistoryHolds(*checkpoint, history);
    if (held.verdict == HistoryVerdict::kNotChecked) {
      out.push_back(Line("binlog retention: resume position", CheckOutcome::kPass,
                         fmt::format("resume position {} not checked (the server lists no binlogs)",
                                     checkpoint->stream_start.ToString())));
    } else if (held.verdict == HistoryVerdict::kOtherFile) {
      out.push_back(Line("binlog retention: resume position", CheckOutcome::kWarn,
                         fmt::format("the resume file {} is not one of this server's binlogs ({} .. {}): another "
                                     "server wrote it (failover, restore?); the stream resumes only if this "
                                     "server's GTID history holds the checkpoint's GTID position",
                                     checkpoint->stream_start.file,
                                     f.binlogs.empty() ? "none" : f.binlogs.front().first,
                                     f.binlogs.empty() ? "none" : f.binlogs.back().first),
                         "point source.host at the server the destination was copied from, or resnapshot"));
    } else if (held.verdict == HistoryVerdict::kReset) {
      CheckLine l = Line(
          "binlog retention: resume position", CheckOutcome::kFail,
          fmt::format("{}: the server's binlog history was reset (RESET MASTER) or the server was restored from "
                      "an older backup since this destination was written. The changes after the checkpoint are "
                      "lost to this destination",
                      held.detail),
          "take a new snapshot into a new destination (a new sink.path, snapshot.mode = \"initial\")", true);
      l.code = StatusCode::kDataLoss;
      out.push_back(std::move(l));
    } else if (held.verdict == HistoryVerdict::kCannotTell) {
      out.push_back(Line("binlog retention: resume position", CheckOutcome::kFail, held.detail,
                         "SET GLOBAL max_allowed_packet = 1073741824 (and in the server's configuration), then "
                         "check again",
                         true));
    } else if (held.verdict == HistoryVerdict::kHolds && !held.detail.empty()) {
      out.push_back(Line("binlog retention: resume position", CheckOutcome::kWarn, held.detail,
                         "SET GLOBAL max_allowed_packet = 1073741824 (and in the server's configuration)"));
    } else if (held.verdict == HistoryVerdict::kPurged) {
      CheckLine l = Line(
          "binlog retention: resume position", CheckOutcome::kFail,
          fmt::format("the resume position {} is no longer on the server (its binlogs were purged); the oldest "
                      "binlog it has is {}. The changes in between are lost to this destination",
                      checkpoint->stream_start.ToString(), f.binlogs.empty() ? "none" : f.binlogs.front().first),
          "take a new snapshot into a new destination (a new sink.path, snapshot.mode = \"initial\"), and keep "
          "binlogs longer than sluice may be stopped (binlog_expire_logs_seconds)",
          true);
      l.code = StatusCode::kDataLoss;
      out.push_back(std::move(l));
    } else if (f.expire_seconds > 0 && age && *age > f.expire_seconds / 2) {
      out.push_back(Line("binlog retention: resume position", CheckOutcome::kWarn,
                         fmt::format("the resume position {} is still on the server, but the destination was last "
                                     "written {} ago and {}: it will be purged in about {} unless sluice runs",
                                     checkpoint->stream_start.ToString(), Duration(*age), retention,
                                     Duration(std::max(0.0, f.expire_seconds - *age))),
                         "start sluice now, or raise binlog_expire_logs_seconds"));
    } else {
      out.push_back(Line("binlog retention: resume position", CheckOutcome::kPass,
                         fmt::format("{} is on the server (oldest binlog {}){}; {}", checkpoint->stream_start.ToString(),
                                     f.binlogs.empty() ? "none" : f.binlogs.front().first,
                                     age ? fmt::format(", destination last written {} ago", Duration(*age)) : "",
                                     retention)));
    }
  }
  // The snapshot still to do against the retention: the stream starts at the snapshot's
  // first point, so that binlog must outlive the whole copy.
  if (config.snapshot.mode == SnapshotMode::kInitial) {
    uint64_t rows = 0;
    size_t tables = 0;
    for (const TableFacts& t : f.tables) {
      uint64_t done = 0;
      if (checkpoint) {
        auto it = checkpoint->tables.find(t.name.QualifiedName());
        if (it != checkpoint->tables.end()) {
          if (it->second.done) continue;
          done = it->second.rows;
        }
      }
      ++tables;
      rows += t.rows > done ? t.rows - done : 0;
    }
    const double rate = std::max<double>(1, config.snapshot.expected_rows_per_second);
    const double secs = static_cast<double>(rows) / rate;
    if (tables == 0) {
      out.push_back(Line("binlog retention: snapshot time", CheckOutcome::kPass, "no snapshot to take"));
    } else if (f.expire_seconds > 0 && secs > f.expire_seconds / 2) {
      out.push_back(Line(
          "binlog retention: snapshot time", CheckOutcome::kWarn,
          fmt::format("{} rows in {} table(s) to copy take about {} at {} rows/s (snapshot.expected_rows_per_second), "
                      "and {}: if the snapshot outlasts it, its start position is purged before streaming "
                      "begins and the run ends with exit code 3",
                      rows, tables, Duration(secs), config.snapshot.expected_rows_per_second, retention),
          fmt::format("SET GLOBAL binlog_expire_logs_seconds = {} (at least twice the expected snapshot time) "
                      "for the snapshot, or snapshot fewer tables at a time",
                      static_cast<uint64_t>(std::ceil(secs * 2)))));
    } else {
      out.push_back(Line("binlog retention: snapshot time", CheckOutcome::kPass,
                         fmt::format("{} rows in {} table(s) to copy, about {} at {} rows/s; {}", rows, tables,
                                     Duration(secs), config.snapshot.expected_rows_per_second, retention)));
    }
  }
  if (!NeedsBinlog(f, config)) RelaxBinlogLines(out);
  return out;
}

std::vector<CheckLine> EvaluateIncremental(Connection& conn, const SourceFacts& f, const Config& config) {
  std::vector<CheckLine> out;
  if (config.tables.empty()) return out;
  const std::vector<TableName> names = SelectedNames(f);
  auto modes = ModesForTables(config, names);
  if (!modes.ok()) {
    out.push_back(Line("table modes", CheckOutcome::kFail, modes.status().message(),
                       "make the [table.\"...\"] patterns disjoint", true));
    return out;
  }
  for (const std::string& key : modes->unmatched)
    out.push_back(Line("[" + key + "]", CheckOutcome::kWarn, UnmatchedSectionMessage(key),
                       "correct the section's db.table pattern, or remove the section"));
  for (const IncrementalTableOptions& t : modes->other) {
    const std::string name = fmt::format("{}: {}", TableModeName(t.mode), t.name.QualifiedName());
    auto schema = LoadTableSchema(conn, t.name.db, t.name.table);
    if (!schema.ok()) {
      out.push_back(Line(name, CheckOutcome::kFail, schema.status().message(), "see the message", true));
      continue;
    }
    if (!schema->has_primary_key()) {
      out.push_back(Line(name, CheckOutcome::kFail, "no primary key: rows are read and resumed in key order",
                         fmt::format("add a primary key, or leave the table in mode cdc ({})", t.config_key), true));
      continue;
    }
    if (t.mode != TableMode::kIncremental) {
      out.push_back(Line(name, CheckOutcome::kPass,
                         fmt::format("copied in primary-key order, write {}", WritePolicyName(t.write))));
      continue;
    }
    auto cursor = ChooseCursor(*schema, t.cursor, t.config_key);
    if (!cursor.ok()) {
      out.push_back(Line(name, CheckOutcome::kFail, cursor.status().message(),
                         fmt::format("set {}.cursor to a NOT NULL DATETIME or TIMESTAMP column", t.config_key), true));
      continue;
    }
    const ColumnDesc& c = schema->columns[*cursor];
    if (Status zone = CheckCursorTimeZone(conn, c, t); !zone.ok()) {
      out.push_back(Line(name, CheckOutcome::kFail, zone.message(), "see the message", true));
      continue;
    }
    // A cursor in the primary key: every update of the row moves it to another key, and the
    // old key's row stays in the replica (deletes are not seen). A new user's probe: `check`
    // passed such a table.
    if (std::find(schema->primary_key.begin(), schema->primary_key.end(), *cursor) != schema->primary_key.end()) {
      out.push_back(Line(name, CheckOutcome::kWarn,
                         fmt::format("the cursor {} is part of the primary key: an update that moves it gives the "
                                     "row another key, and the row under the old key stays in the replica (mode "
                                     "incremental does not see deletes)",
                                     QuoteIdentifier(c.name)),
                         fmt::format("use mode = \"full\" or \"cdc\" for {}, or a primary key without the cursor",
                                     schema->QualifiedName())));
    }
    auto advice = AdviseIndex(conn, *schema, *cursor);
    if (!advice.ok()) {
      out.push_back(Line(name, CheckOutcome::kFail, advice.status().message(), "see the message"));
      continue;
    }
    const std::string what = fmt::format("cursor {} ({}{}), write {}, lookback {} s", QuoteIdentifier(c.name),
                                         c.column_type,
                                         t.cursor_time_zone.empty() ? "" : ", written in " + t.cursor_time_zone,
                                         WritePolicyName(t.write), t.lookback_seconds);
    if (advice->plan_uses_index) {
      out.push_back(Line(name, CheckOutcome::kPass,
                         fmt::format("{}; index {} serves the paging order (EXPLAIN: {})", what,
                                     QuoteIdentifier(advice->index_name), advice->explain)));
    } else if (advice->has_index) {
      // The index is there, but the plan does not read it: a small table, or statistics that
      // mislead the optimizer. Stated as seen, not as served.
      out.push_back(Line(name, CheckOutcome::kWarn,
                         fmt::format("{}; index {} begins with {} then the primary key, but the server does not "
                                     "plan the paging query with it: it reads and sorts all matching rows (EXPLAIN: "
                                     "{}); the optimizer may prefer that while the table is small",
                                     what, QuoteIdentifier(advice->index_name), QuoteIdentifier(c.name),
                                     advice->explain),
                         fmt::format("nothing while the table is small; else ANALYZE TABLE {} and check again",
                                     QuoteIdentifier(schema->db) + "." + QuoteIdentifier(schema->table))));
    } else {
      out.push_back(Line(name, CheckOutcome::kWarn,
                         fmt::format("{}; no index begins with {} then the primary key, so every paging query "
                                     "reads and sorts all matching rows (EXPLAIN: {})",
                                     what, QuoteIdentifier(c.name), advice->explain),
                         advice->create_index));
    }
  }
  return out;
}

std::optional<CheckLine> EvaluateSqliteTables(Connection& conn, const SourceFacts& f, const Config& config,
                                              const SinkFacts& sink) {
  // A replica sluice has written (a checkpoint) has its tables in the stream's hands; a file
  // without one (new, or another tool's) meets the snapshot's PrepareTable for each table.
  const SinkConfig& k = config.sink;
  std::error_code ec;
  if (k.type != SinkType::kSqlite || sink.checkpoint || sink.line.outcome != CheckOutcome::kPass ||
      !std::filesystem::exists(k.path, ec))
    return std::nullopt;
  std::vector<std::pair<std::string, std::string>> tables;
  for (const TableFacts& t : f.tables) tables.emplace_back(t.name.db, t.name.table);
  const char* name = "sink: existing tables";
  auto existing = CheckSqliteTables(k.path, tables, [&conn](const std::string& db, const std::string& table) {
    return LoadTableSchema(conn, db, table);
  });
  if (!existing.ok()) {
    return Line(name, CheckOutcome::kFail, existing.status().message(),
                "drop or rename that table in the SQLite file, or point sink.path at another file", true);
  }
  if (*existing == 0) return std::nullopt;
  return Line(name, CheckOutcome::kPass,
              fmt::format("{} captured table(s) already in {} have the source's columns", *existing, k.path));
}

std::vector<CheckLine> EvaluatePatterns(const SourceFacts& f, const std::optional<Checkpoint>& checkpoint) {
  std::vector<CheckLine> out;
  for (const std::string& m : f.unmatched_patterns) {
    if (checkpoint)
      out.push_back(Line("source.tables", CheckOutcome::kWarn,
                         m + "; `sluice run` continues this existing pipeline (its tables may have been "
                             "dropped or renamed)",
                         "nothing, if the tables are gone on purpose; else correct the pattern in source.tables"));
    else
      out.push_back(Line("source.tables", CheckOutcome::kFail,
                         m + "; a first `sluice run` refuses to start",
                         "correct the pattern in source.tables, create the table, or GRANT SELECT on it", true));
  }
  return out;
}

std::string ConnectFailureFix(const SourceConfig& source, std::string_view message) {
  const std::string mode = fmt::format("source.tls = \"{}\"", TlsModeName(source.tls));
  if (message.find("needs TLS, but the server does not offer it") != std::string_view::npos)
    return fmt::format("enable TLS on the server (ssl_cert and ssl_key in its config, then restart it; "
                       "SHOW VARIABLES LIKE 'have_ssl' says YES), or choose another source.tls: \"preferred\" "
                       "uses TLS when the server offers it and plain text otherwise, \"disabled\" never ({} "
                       "insists on TLS)",
                       mode);
  if (message.find("server certificate") != std::string_view::npos)
    return fmt::format("make source.ca the CA that signed the server certificate and source.host a name the "
                       "certificate holds, or choose another source.tls (\"verify_ca\" does not check the host "
                       "name, \"required\" not the certificate) ({})",
                       mode);
  if (message.find("TLS handshake failed") != std::string_view::npos)
    return fmt::format("check the server's TLS setup (ssl_cert, ssl_key, tls_version) and source.cert/source.key, "
                       "or choose another source.tls ({})",
                       mode);
  if (message.find("allow_cleartext_auth") != std::string_view::npos)
    return "use source.tls = \"verify_ca\" or \"verify_identity\" (the password then goes to a verified "
           "server), or set source.allow_cleartext_auth = true";
  return "check source.host, source.port, that the server listens on TCP there (bind_address, "
         "skip_networking=OFF), and the user and password";
}

std::optional<CheckLine> EvaluateSinkNames(const SourceFacts& f, const Config& config, const SinkFacts& sink) {
  const std::vector<TableName> names = SelectedNames(f);
  Status st = CheckNameCollisions(names, config.sink, sink.lower_case_table_names);
  if (st.ok()) return std::nullopt;
  CheckLine l = Line("sink table names", CheckOutcome::kFail, st.message(),
                     config.sink.type == SinkType::kPostgres ? "map the two databases onto different schemas "
                                                               "(sink.postgres.schemas), or leave one table out"
                     : config.sink.type == SinkType::kMysql && sink.lower_case_table_names != 0 &&
                             st.message().find("lower_case_table_names") != std::string::npos
                         ? "leave one table out (source.exclude) or rename it; a destination with "
                           "lower_case_table_names = 0 keeps both"
                     : config.sink.type == SinkType::kMysql ? "map the two databases onto different databases "
                                                               "(sink.mysql.databases), or leave one table out"
                     : config.sink.type == SinkType::kKafka || config.sink.type == SinkType::kNats
                         ? "leave one table out (source.exclude) or rename it: one topic or subject per table keeps "
                           "a delete's tombstone to its own table"
                                                             : "leave one table out (source.exclude) or rename it",
                     true);
  l.code = StatusCode::kInvalidArgument;
  return l;
}

std::optional<CheckLine> EvaluateSinkNameLengths(Connection& source, const SourceFacts& f, const Config& config) {
  const std::vector<TableName> names = SelectedNames(f);
  Status st = CheckSinkNameLengths(source, names, config.sink);
  if (st.ok()) return std::nullopt;
  if (st.code() != StatusCode::kInvalidArgument)
    return Line("sink name lengths", CheckOutcome::kWarn,
                fmt::format("cannot read the captured tables' column names: {}", st.message()),
                "run `sluice check` again");
  CheckLine l = Line("sink name lengths", CheckOutcome::kFail, st.message(),
                     "leave the table out (source.exclude), give it or its column a shorter name in the source, or "
                     "map its database onto a shorter schema (sink.postgres.schemas)",
                     true);
  l.code = StatusCode::kInvalidArgument;
  return l;
}

std::optional<CheckLine> EvaluateSinkServer(Connection& source, const Config& config) {
  if (config.sink.type != SinkType::kMysql) return std::nullopt;
  const char* name = "sink server";
  const ConnectOptions& d = config.sink.mysql.connect;
  auto dest = Connection::Connect(d);
  if (!dest.ok()) return std::nullopt;
  std::string evidence;
  Result<bool> same = SameServer(source, **dest, &evidence);
  if (!same.ok())
    return Line(name, CheckOutcome::kWarn,
                fmt::format("cannot tell whether the destination {} is the source server: {}", d.Describe(),
                            same.status().message()),
                "make sure sink.mysql does not name the source server, or that no source.tables pattern matches "
                "the databases sluice writes there");
  if (!*same) return std::nullopt;
  Status st = CheckSelfDestination(config, d.Describe(), source.options().Describe(), evidence);
  if (!st.ok()) {
    CheckLine l = Line(name, CheckOutcome::kFail, st.message(),
                       "map the captured databases onto databases no source.tables pattern matches "
                       "(sink.mysql.databases; sink.mysql.database for the bookkeeping tables), or point "
                       "sink.mysql at another server",
                       true);
    l.code = StatusCode::kInvalidArgument;
    return l;
  }
  std::string dbs;
  for (const MysqlSinkDatabase& d : MysqlSinkDatabases(config)) dbs += (dbs.empty() ? "" : ", ") + d.name;
  return Line(name, CheckOutcome::kPass,
              fmt::format("the destination {} is the source server; the databases sluice writes there ({}) are "
                          "matched by no source.tables pattern",
                          d.Describe(), dbs));
}

// What a sink's stored checkpoint holds, for the sink line: the stream position, and the
// tables read without the binlog (a pipeline of only such tables has no stream position).
static std::string DescribeCheckpoint(const std::optional<Checkpoint>& cp) {
  if (!cp) return "no checkpoint yet";
  std::string out = cp->stream_start.empty() ? "checkpoint without a binlog position"
                                             : fmt::format("checkpoint at {}", cp->stream_start.ToString());
  if (!cp->incremental.empty())
    out += fmt::format(", with the state of {} table(s) read without the binlog", cp->incremental.size());
  return out;
}

std::optional<CheckLine> EvaluateSinkPacket(const SourceFacts& f, const SinkFacts& sink) {
  if (sink.max_allowed_packet == 0) return std::nullopt;
  const TableFacts* widest = nullptr;
  for (const TableFacts& t : f.tables)
    if (!widest || t.largest_row > widest->largest_row) widest = &t;
  const char* name = "sink max_allowed_packet";
  if (!widest)
    return Line(name, CheckOutcome::kPass, fmt::format("{} (no table to compare with)", Bytes(sink.max_allowed_packet)));
  // One row's statement: its values (bound in binary, so at their size) and the statement
  // text with the key of an update.
  const uint64_t need = widest->largest_row + 1024;
  if (sink.max_allowed_packet >= need)
    return Line(name, CheckOutcome::kPass,
                fmt::format("{} on the destination; a statement holding the largest row ({}, about {}) needs about {}",
                            Bytes(sink.max_allowed_packet), widest->name.QualifiedName(), Bytes(widest->largest_row),
                            Bytes(need)));
  uint64_t suggest = 1024;
  while (suggest < need) suggest *= 2;
  return Line(name, CheckOutcome::kFail,
              fmt::format("{} is smaller than a statement holding the largest row: {} can hold rows of about {} "
                          "(declared column sizes, large objects measured), so the destination refuses it and the "
                          "run stops on that row",
                          Bytes(sink.max_allowed_packet), widest->name.QualifiedName(), Bytes(widest->largest_row)),
              fmt::format("SET GLOBAL max_allowed_packet = {} on the destination (and in its server config)", suggest));
}

SinkFacts CheckSink(const Config& config) {
  SinkFacts s;
  const SinkConfig& k = config.sink;
  const char* name = "sink reachable and writable";
  if (k.type == SinkType::kKafka || k.type == SinkType::kNats) {
    const std::string& ep = k.type == SinkType::kKafka ? k.kafka.bootstrap_servers : k.nats.url;
    Status st = TcpReachable(ep, k.type == SinkType::kKafka ? "9092" : "4222");
    const std::string shown = RedactUrlCredentials(ep);
    s.line = st.ok() ? Line(name, CheckOutcome::kPass,
                            fmt::format("{} broker {} accepts TCP connections (topics and permissions are "
                                        "checked when the run starts)",
                                        k.type == SinkType::kKafka ? "Kafka" : "NATS", shown))
                     : Line(name, CheckOutcome::kFail, st.message(),
                            k.type == SinkType::kKafka ? "check sink.kafka.bootstrap_servers and that the brokers run"
                                                       : "check sink.nats.url and that the server runs",
                            true);
    return s;
  }
  if (k.type == SinkType::kMysql) {
    // Connects as the run will (session setup, checkpoint table); the named lock it takes
    // also tells whether another run holds this destination.
    Result<std::unique_ptr<MysqlSink>> m = MysqlSink::Open(k.mysql);
    if (!m.ok()) {
      s.line = Line(name, CheckOutcome::kFail, m.status().message(),
                    "check sink.mysql (host, port, user, password_env, database) and that the server runs", true);
      return s;
    }
    Result<std::optional<std::string>> stored = (*m)->LoadCheckpoint();
    if (stored.ok() && *stored) {
      auto cp = Checkpoint::FromJson(**stored);
      if (cp.ok()) s.checkpoint = std::move(cp).value();
    }
    s.max_allowed_packet = (*m)->max_allowed_packet();
    s.lower_case_table_names = (*m)->lower_case_table_names();
    if (!stored.ok()) {
      s.line = Line(name, CheckOutcome::kFail, stored.status().message(), "see the message", true);
      return s;
    }
    s.line = Line(name, CheckOutcome::kPass,
                  fmt::format("MySQL/MariaDB destination {} accepts the session, {} (in {}._sluice_checkpoint)",
                              k.mysql.connect.Describe(), DescribeCheckpoint(s.checkpoint), k.mysql.database));
    return s;
  }
  if (k.type == SinkType::kPostgres) {
    // As for MySQL: connects as the run will (session setup, the _sluice schema), and the
    // advisory lock it takes tells whether another run writes into this database.
    Result<std::unique_ptr<PostgresSink>> pg = PostgresSink::Open(k.postgres);
    if (!pg.ok()) {
      s.line = Line(name, CheckOutcome::kFail, pg.status().message(),
                    "check sink.postgres (conninfo, password_env) and that the server runs", true);
      return s;
    }
    Result<std::optional<std::string>> stored = (*pg)->LoadCheckpoint();
    if (!stored.ok()) {
      s.line = Line(name, CheckOutcome::kFail, stored.status().message(), "see the message", true);
      return s;
    }
    if (*stored) {
      auto cp = Checkpoint::FromJson(**stored);
      if (!cp.ok()) {
        s.line = Line(name, CheckOutcome::kFail, cp.status().message(), "check the destination's _sluice.checkpoint",
                      true);
        return s;
      }
      s.checkpoint = std::move(cp).value();
    }
    s.line = Line(name, CheckOutcome::kPass,
                  fmt::format("PostgreSQL destination {} accepts the session, {} (in _sluice.checkpoint)",
                              PostgresConninfoForDisplay(k.postgres.conninfo), DescribeCheckpoint(s.checkpoint)));
    return s;
  }
  std::string problem = k.path == "-" ? "" : FileProblem(k.path, "sink.path");
  if (problem.empty() && k.type == SinkType::kJsonl) problem = FileProblem(k.checkpoint, "sink.checkpoint");
  if (!problem.empty()) {
    s.line = Line(name, CheckOutcome::kFail, problem, "point sink.path at a file in an existing, writable directory", true);
    return s;
  }
  std::string lock = (k.path == "-" ? k.checkpoint : k.path) + ".lock";
  bool busy = LockHeld(lock);
  if (!busy && k.type == SinkType::kJsonl && k.path != "-" && !k.checkpoint.empty() &&
      LockHeld(k.checkpoint + ".lock")) {
    lock = k.checkpoint + ".lock";  // another pipeline's output with this checkpoint file
    busy = true;
  }
  Result<std::optional<std::string>> stored = std::optional<std::string>();
  if (k.type == SinkType::kSqlite) {
    if (std::filesystem::exists(k.path)) {
      // Before reading: a read-only connection may create the -wal file.
      s.checkpoint_age_seconds = FileAgeSeconds({k.path, k.path + "-wal"});
      stored = ReadSqliteCheckpoint(k.path);
    }
  } else {
    stored = ReadJsonlCheckpoint(k.checkpoint);  // errors name the file
    if (stored.ok() && *stored) {
      s.checkpoint_age_seconds = FileAgeSeconds({k.checkpoint});
    }
  }
  if (!stored.ok()) {
    s.line = Line(name, CheckOutcome::kFail, stored.status().message(), "check the destination file", true);
    return s;
  }
  if (busy) {
    // The checkpoint is read all the same (as `verify` reads a replica a run writes), so that
    // the retention lines judge the run's position (a new user's probe: check beside a running
    // pipeline said "no checkpoint yet" and that a whole snapshot was to be taken).
    if (*stored)
      if (auto cp = Checkpoint::FromJson(**stored); cp.ok()) s.checkpoint = std::move(cp).value();
    s.line = Line(name, CheckOutcome::kFail,
                  fmt::format("sink {} is in use by another sluice run (lock {} is held); {}", k.path, lock,
                              DescribeCheckpoint(s.checkpoint)),
                  "stop the other run, or give this one its own sink.path", true);
    return s;
  }
  if (k.type == SinkType::kJsonl && k.path != "-") {
    // What the run's sink refuses when it opens the output (an output cut short), found
    // without opening it for writing.
    Status output = CheckJsonlOutput(k.path, k.checkpoint);
    if (!output.ok()) {
      s.line = Line(name, CheckOutcome::kFail, output.message(),
                    "put back the output file as sluice wrote it, or remove it and its checkpoint to start over",
                    true);
      return s;
    }
  }
  if (*stored) {
    auto cp = Checkpoint::FromJson(**stored);
    if (!cp.ok()) {
      s.line = Line(name, CheckOutcome::kFail, cp.status().message(), "check the destination file", true);
      return s;
    }
    s.checkpoint = std::move(cp).value();
  }
  s.line = Line(name, CheckOutcome::kPass,
                fmt::format("{} {} writable, {}", k.type == SinkType::kSqlite ? "SQLite replica" : "JSON lines output",
                            k.path, DescribeCheckpoint(s.checkpoint)));
  return s;
}

Status RefuseOnFatal(const std::vector<CheckLine>& lines) {
  std::string msg;
  StatusCode code = StatusCode::kFailedPrecondition;
  for (const CheckLine& l : lines) {
    if (l.outcome == CheckOutcome::kPass) continue;
    if (!l.fatal) {
      LogWarning("check: {}: {}{}", l.name, l.detail, l.fix.empty() ? "" : " (fix: " + l.fix + ")");
      continue;
    }
    if (msg.empty()) code = l.code;
    msg += fmt::format("{}{}: {} (fix: {})", msg.empty() ? "" : "; ", l.name, l.detail, l.fix);
  }
  if (msg.empty()) return Status::Ok();
  msg = "refusing to start (`sluice check` lists every requirement): " + msg;
  return code == StatusCode::kDataLoss ? Status::DataLoss(std::move(msg)) : Status::FailedPrecondition(std::move(msg));
}

int RunCheckCommand(const Config& config, std::FILE* out) {
  std::vector<CheckLine> lines;
  std::optional<CheckLine> packet_line;  // after the sink's own line
  auto conn = Connection::Connect(SourceConnectOptions(config.source));
  // A MySQL destination that is the source server: asked first, since opening the sink
  // (CheckSink) creates its bookkeeping tables, and not opened when the run would refuse.
  std::optional<CheckLine> sink_server;
  if (conn.ok()) sink_server = EvaluateSinkServer(**conn, config);
  const bool refused = sink_server && sink_server->outcome == CheckOutcome::kFail;
  SinkFacts sink;
  if (!refused) sink = CheckSink(config);
  if (!conn.ok()) {
    lines.push_back(Line("TCP connection", CheckOutcome::kFail,
                         fmt::format("cannot connect to {}:{}: {}", config.source.host, config.source.port,
                                     conn.status().message()),
                         ConnectFailureFix(config.source, conn.status().message()), true));
  } else {
    auto facts = GatherSourceFacts(**conn, config);
    if (!facts.ok()) {
      lines.push_back(Line("server", CheckOutcome::kFail, facts.status().message(), "see the message", true));
    } else {
      lines = EvaluateServer(*facts, config);
      if (Status st = AddResumeHistory(**conn, sink.checkpoint, &*facts); !st.ok())
        lines.push_back(Line("binlog retention: resume history", CheckOutcome::kWarn,
                             fmt::format("could not read the server's binlog at the resume position: {}", st.message()),
                             "run `sluice check` again"));
      for (auto& l : EvaluateRetention(*facts, config, sink.checkpoint, sink.checkpoint_age_seconds)) {
        // A destination whose checkpoint could not be read (another run holds a database
        // destination, or it failed): "no checkpoint yet" would be a guess.
        if (!sink.checkpoint && sink.line.outcome == CheckOutcome::kFail &&
            (l.name == "binlog retention: resume position" || l.name == "binlog retention: snapshot time") &&
            l.outcome == CheckOutcome::kPass)
          l = Line(l.name, CheckOutcome::kWarn,
                   "not checked: the destination's checkpoint could not be read (see the sink line)",
                   "run `sluice check` again once the sink line passes");
        lines.push_back(std::move(l));
      }
      for (auto& l : EvaluateIncremental(**conn, *facts, config)) lines.push_back(std::move(l));
      for (auto& l : EvaluatePatterns(*facts, sink.checkpoint)) lines.push_back(std::move(l));
      if (auto l = EvaluateSinkNames(*facts, config, sink)) lines.push_back(std::move(*l));
      if (auto l = EvaluateSinkNameLengths(**conn, *facts, config)) lines.push_back(std::move(*l));
      if (auto l = EvaluateSqliteTables(**conn, *facts, config, sink)) lines.push_back(std::move(*l));
      packet_line = EvaluateSinkPacket(*facts, sink);
    }
  }
  if (sink_server) lines.push_back(std::move(*sink_server));
  if (!refused) lines.push_back(sink.line);
  if (packet_line) lines.push_back(std::move(*packet_line));
  size_t counts[3] = {0, 0, 0};
  for (const CheckLine& l : lines) {
    ++counts[static_cast<int>(l.outcome)];
    // A detail quotes table names and servers' messages: one line each, no control character.
    std::fprintf(out, "%s  %-36s %s\n", OutcomeName(l.outcome), EscapeControls(l.name).c_str(),
                 EscapeControls(l.detail).c_str());
    if (l.outcome != CheckOutcome::kPass && !l.fix.empty())
      std::fprintf(out, "      fix: %s\n", EscapeControls(l.fix).c_str());
  }
  // Warnings alone do not stop `sluice run` (it starts and logs them); failures do. The exit
  // code is 1 for either (README, "Exit codes").
  const char* verdict = counts[2] > 0 ? "NOT READY" : counts[1] > 0 ? "READY, WITH WARNINGS" : "OK";
  std::fprintf(out, "%s: %zu passed, %zu warning(s), %zu failed\n", verdict, counts[0], counts[1], counts[2]);
  std::fflush(out);
  return counts[1] + counts[2] == 0 ? 0 : 1;
}

}  // namespace sluice::cli
