#include "cli/run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "cli/check.h"
#include "cli/observe.h"
#include "cli/table_config.h"
#include "mysql/schema_loader.h"
#include "mysql/server_probe.h"
#include "schema/sql_tokenizer.h"
#include "sink/jsonl_sink.h"
#include "sink/mysql_sink.h"
#include "sink/postgres_sink.h"
#include "sink/sqlite_sink.h"
#include "snapshot/coordinator.h"
#include "snapshot/reread.h"
#include "cli/resnapshot.h"
#include "snapshot/incremental.h"
#include "stream/resume.h"
#include "stream/streamer.h"
#include "util/log.h"

namespace sluice::cli {
namespace {

bool Stopping(const RunOptions& o) { return o.stop && o.stop->load(); }

// The sink's last flush. At a stop a transient failure (a full disk for the state file) is
// not the run's failure: what the sink committed before stays, and the next run continues
// from it (a JSON lines output is cut back to its recorded length). A new user's probe got
// exit 1 for a SIGTERM that came while the disk was full.
Status FlushSink(Sink& sink, const RunOptions& options) {
  Status st = sink.Flush();
  if (st.ok() || st.code() != StatusCode::kUnavailable || !Stopping(options)) return st;
  LogWarning("stopping: the sink could not record its last state ({}); the next run continues from the last one "
             "it recorded",
             st.message());
  return Status::Ok();
}

// The (db, table) of every table the schema history holds a live definition of (not dropped),
// each "db.table" name tried at every dot (a database name may hold one).
std::vector<std::pair<std::string, std::string>> LiveTables(const SchemaHistory& history) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : history.Tables())
    for (size_t dot = n.find('.'); dot != std::string::npos; dot = n.find('.', dot + 1)) {
      std::string db = n.substr(0, dot), table = n.substr(dot + 1);
      const TableVersion* v = history.Latest(db, table);
      if (v && v->schema) out.emplace_back(std::move(db), std::move(table));
    }
  return out;
}

// An exclusive lock on "<sink>.lock" held for the whole run, so two runs can never write
// one sink at once, and for JSON lines written to a file also on "<sink.checkpoint>.lock":
// two pipelines with their own outputs and one checkpoint file would take each other's state
// (a new user's probe: the second stopped advising to delete the running one's checkpoint).
// The locks go away with the process (also on SIGKILL).
class SinkLock {
 public:
  static Result<SinkLock> Take(const SinkConfig& sink) {
    SinkLock held;
    std::vector<std::string> paths = {(sink.path == "-" ? sink.checkpoint : sink.path) + ".lock"};
    if (sink.type == SinkType::kJsonl && sink.path != "-" && !sink.checkpoint.empty())
      paths.push_back(sink.checkpoint + ".lock");
    for (const std::string& path : paths) {
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0) {
        return Status::InvalidArgument(
            fmt::format("sink.path: cannot create lock file {}: {}", path, OpenErrorText(errno)));
      }
      held.fds_.push_back(fd);
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        return Status::FailedPrecondition(fmt::format(
            "sink {} is in use by another sluice run (lock {} is held)", sink.path, path));
      }
    }
    return held;
  }
  SinkLock(SinkLock&& o) noexcept : fds_(std::exchange(o.fds_, {})) {}
  SinkLock& operator=(SinkLock&&) = delete;
  ~SinkLock() {
    for (int fd : fds_) ::close(fd);
  }

 private:
  SinkLock() = default;
  std::vector<int> fds_;
};

// A sink file (or the jsonl checkpoint) must be a file in an existing directory; say so
// before SQLite or open() report something vaguer ("unable to open database file").
Status CheckSinkFilePath(const std::string& path, std::string_view key) {
  if (path.empty() || path == "-") return Status::Ok();
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return Status::InvalidArgument(fmt::format(
        "{} {} is a directory; name a file (e.g. {}/replica.db)", key, path, path));
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    return Status::InvalidArgument(fmt::format(
        "{} {} is a symbolic link: name the file itself (sluice does not follow a link to write through it)", key,
        path));
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  fs::file_status ps = fs::status(parent, ec);
  if (!fs::exists(ps))
    return Status::InvalidArgument(
        fmt::format("{} {}: directory {} does not exist", key, path, parent.string()));
  if (!fs::is_directory(ps))
    return Status::InvalidArgument(
        fmt::format("{} {}: {} is not a directory", key, path, parent.string()));
  return Status::Ok();
}

// The sink's name in messages.
const char* SinkName(SinkType type) {
  switch (type) {
    case SinkType::kSqlite: return "SQLite";
    case SinkType::kJsonl: return "JSON lines";
    case SinkType::kKafka: return "Kafka";
    case SinkType::kNats: return "NATS";
    case SinkType::kMysql: return "MySQL";
    case SinkType::kPostgres: return "PostgreSQL";
  }
  return "?";
}

}  // namespace

// Two selected source tables must not share one name downstream: the checkpoint keys the
// snapshot progress by "db.table" (so `a.b`.c and a.`b.c` would share one entry), the
// SQLite sink names its tables "db.table" where SQLite ignores ASCII case (so `d`.`T` and
// `d`.`t` would share one table), and the PostgreSQL and MySQL sinks map source databases
// onto schemas/databases (sink.postgres.schemas, sink.mysql.databases), where two databases
// mapped onto one share the table names they both hold. The Kafka and NATS sinks name a
// table's topic/subject after it with the characters a name cannot hold as '_' (`we ird`
// and we_ird, and for Kafka, which keeps '.', `a.b`.c and a.`b.c`, share one), through the
// configured template or prefix: two tables there would mix their records under equal keys,
// and a delete in one would send a tombstone for a live row of the other. Refused before
// anything is copied (kInvalidArgument: a configuration error, exit code 2), naming both.
Status CheckNameCollisions(const std::vector<TableName>& tables, const SinkConfig& sink, int mysql_lower_case_table_names) {
  auto quoted = [](const TableName& t) { return fmt::format("`{}`.`{}`", t.db, t.table); };
  if (sink.type == SinkType::kKafka || sink.type == SinkType::kNats) {
    const bool kafka = sink.type == SinkType::kKafka;
    const std::string how =
        kafka ? fmt::format("sink.kafka.topic = \"{}\"; characters outside [A-Za-z0-9._-] become '_'",
                            sink.kafka.topic_template)
              : fmt::format("sink.nats.subject_prefix = \"{}\"; characters outside [A-Za-z0-9_-] become '_'",
                            sink.nats.subject_prefix);
    // Sluice's own topics: the checkpoint's, the schema changes', the transaction metadata's.
    std::map<std::string, std::string> own;
    if (kafka) {
      own[KafkaStateTopic(sink.kafka)] = "the checkpoint (sink.kafka.state_topic)";
      own[sink.kafka.topic_prefix] = "the schema changes";
      own[sink.kafka.topic_prefix + ".transaction"] = "the transaction metadata";
    }
    std::map<std::string, const TableName*> dest;
    for (const auto& t : tables) {
      const std::string name = kafka ? KafkaTopicFor(sink.kafka, t.db, t.table) : NatsSubjectFor(sink.nats, t.db, t.table);
      if (auto it = own.find(name); it != own.end())
        return Status::InvalidArgument(fmt::format(
            "source table {} would publish to the Kafka topic {} ({}), which holds {}; change sink.kafka.topic "
            "or sink.kafka.topic_prefix, or leave the table out (source.exclude)",
            quoted(t), name, how, it->second));
      auto [it, inserted] = dest.emplace(name, &t);
      if (inserted) continue;
      return Status::InvalidArgument(fmt::format(
          "source tables {} and {} would both publish to the {} {} ({}), where a delete in one would send a "
          "tombstone for a key of the other; leave one out (source.exclude) or rename it{}",
          quoted(*it->second), quoted(t), kafka ? "Kafka topic" : "NATS subject", name, how,
          kafka && sink.kafka.topic_template.find("{db}") == std::string::npos && it->second->db != t.db
              ? ", or put {db} in sink.kafka.topic"
              : ""));
    }
  }
  std::map<std::string, const TableName*> seen;
  for (const auto& t : tables) {
    std::string key = t.QualifiedName();
    if (sink.type == SinkType::kSqlite)
      for (char& c : key)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    auto [it, inserted] = seen.emplace(key, &t);
    if (inserted) continue;
    return Status::InvalidArgument(fmt::format(
        "source tables {} and {} would both become \"{}\" in the {} sink{}; leave one out "
        "(source.exclude) or rename it",
        quoted(*it->second), quoted(t), it->second->QualifiedName(),
        SinkName(sink.type),
        sink.type == SinkType::kSqlite && it->second->QualifiedName() != t.QualifiedName()
            ? " (SQLite table names ignore case)"
            : ""));
  }
  if (sink.type != SinkType::kPostgres && sink.type != SinkType::kMysql) return Status::Ok();
  const bool pg = sink.type == SinkType::kPostgres;
  const char* key = pg ? "sink.postgres.schemas" : "sink.mysql.databases";
  // A MySQL destination with lower_case_table_names 1 or 2 ignores the case of table and
  // database names: `db`.`T` and `db`.`t` are one table there (before this check the two
  // tables' rows were merged into one, silently).
  const bool fold = !pg && mysql_lower_case_table_names != 0;
  const auto folded = [fold](const std::string& s) { return fold ? sql::AsciiLower(s) : s; };
  std::map<std::pair<std::string, std::string>, const TableName*> dest;
  for (const auto& t : tables) {
    std::string ns = pg ? PostgresSchemaName(sink.postgres, t.db) : MysqlDestinationDatabase(sink.mysql, t.db);
    if (!pg && folded(ns) == folded(sink.mysql.database))
      return Status::InvalidArgument(fmt::format(
          "source table {} would go to the MySQL database {}, which holds sluice's bookkeeping (sink.mysql.database "
          "= \"{}\"; {}); set sink.mysql.database to another name, map {} onto another database "
          "(sink.mysql.databases), or leave it out (source.exclude)",
          quoted(t), ns, sink.mysql.database,
          sink.mysql.databases.count(t.db) ? fmt::format("sink.mysql.databases.{} = \"{}\"", t.db, ns)
                                           : "its database unmapped",
          t.db));
    auto [it, inserted] = dest.emplace(std::make_pair(folded(ns), folded(t.table)), &t);
    if (inserted) continue;
    const TableName& first = *it->second;
    const std::string first_ns = MysqlDestinationDatabase(sink.mysql, first.db);
    if (fold && (first_ns != ns || first.table != t.table))
      return Status::InvalidArgument(fmt::format(
          "source tables {} and {} would both become the MySQL table {}.{}: the destination ignores the case of "
          "table and database names (lower_case_table_names = {}), so their rows would be mixed in one table; "
          "leave one out (source.exclude){}",
          quoted(first), quoted(t), first_ns, first.table, mysql_lower_case_table_names,
          first.db != t.db ? fmt::format(", or map {} onto another database (sink.mysql.databases)", t.db) : ""));
    auto mapped = [&](const std::string& db) {
      const auto& m = pg ? sink.postgres.schemas : sink.mysql.databases;
      return m.count(db) ? fmt::format("{}.{} = \"{}\"", key, db, m.at(db)) : fmt::format("{} unmapped", db);
    };
    return Status::InvalidArgument(fmt::format(
        "source tables {} and {} would both become the {} table {}.{} ({}, {}): two source databases "
        "mapped onto one {} must not hold tables of the same name; map them onto different {}s in {}, "
        "or leave one table out (source.exclude)",
        quoted(first), quoted(t), pg ? "PostgreSQL" : "MySQL", ns, t.table, mapped(first.db), mapped(t.db),
        pg ? "schema" : "database", pg ? "schema" : "database", key));
  }
  return Status::Ok();
}

Status CheckSinkNameLengths(Connection& source, const std::vector<TableName>& tables, const SinkConfig& sink) {
  if (sink.type != SinkType::kPostgres || tables.empty()) return Status::Ok();
  std::set<std::pair<std::string, std::string>> selected;
  std::set<std::string> dbs;
  for (const TableName& t : tables) {
    RETURN_IF_ERROR(CheckPostgresNames(sink.postgres, t.db, t.table, {}));
    selected.emplace(t.db, t.table);
    dbs.insert(t.db);
  }
  // Only the columns too long are read (LENGTH counts bytes), of the captured databases.
  std::string in;
  for (const std::string& db : dbs) in += (in.empty() ? "" : ", ") + source.Quote(db);
  ASSIGN_OR_RETURN(QueryResult r,
                   source.Query(fmt::format("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS "
                                            "WHERE LENGTH(COLUMN_NAME) > {} AND TABLE_SCHEMA IN ({}) "
                                            "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
                                            kPostgresMaxNameBytes, in)));
  for (const TextRow& row : r.rows) {
    if (row.size() < 3 || !row[0] || !row[1] || !row[2] || !selected.count({*row[0], *row[1]})) continue;
    RETURN_IF_ERROR(CheckPostgresNames(sink.postgres, *row[0], *row[1], {*row[2]}));
  }
  return Status::Ok();
}

namespace {

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// The database part of a "db.table" pattern; nullopt without a '.' (refused elsewhere).
std::optional<std::string_view> PatternDatabase(std::string_view pattern) {
  size_t dot = pattern.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  return pattern.substr(0, dot);
}

}  // namespace

std::vector<MysqlSinkDatabase> MysqlSinkDatabases(const Config& config) {
  std::map<std::string, MysqlSinkDatabase> by_name;
  auto entry = [&](const std::string& name) -> MysqlSinkDatabase& {
    MysqlSinkDatabase& d = by_name[name];
    d.name = name;
    return d;
  };
  for (const std::string& p : config.source.tables) {
    std::optional<std::string_view> db = PatternDatabase(p);
    if (!db || HasWildcard(*db)) continue;
    MysqlSinkDatabase& d = entry(MysqlDestinationDatabase(config.sink.mysql, std::string(*db)));
    if (std::find(d.sources.begin(), d.sources.end(), *db) == d.sources.end()) d.sources.emplace_back(*db);
  }
  entry(config.sink.mysql.database).bookkeeping = true;
  std::vector<MysqlSinkDatabase> out;
  for (auto& [name, d] : by_name) out.push_back(std::move(d));
  return out;
}

// The MySQL sink writes map(db).t for each captured db.t and its bookkeeping tables; on the
// source server, each of those writes is a binlog event of a table that, if a pattern
// captures it, the stream reads back and writes again (a CREATE becomes DROP + CREATE of the
// source's own table, and so on without end). Decided on the patterns, not on the tables
// there are now, since the stream follows tables created later.
Status RefuseSelfDestination(const Config& config, Connection& source, const ConnectOptions& source_options,
                             Connection& destination) {
  std::string evidence;
  ASSIGN_OR_RETURN(bool same, SameServer(source, destination, &evidence));
  if (!same) return Status::Ok();
  const std::string described = config.sink.mysql.connect.Describe();
  RETURN_IF_ERROR(CheckSelfDestination(config, described, source_options.Describe(), evidence));
  std::string dbs;
  for (const MysqlSinkDatabase& d : MysqlSinkDatabases(config)) dbs += (dbs.empty() ? "" : ", ") + d.name;
  LogInfo("the MySQL destination {} is the source server; the databases sluice writes there ({}) are matched by "
          "no source.tables pattern",
          described, dbs);
  return Status::Ok();
}

Status CheckSelfDestination(const Config& config, std::string_view destination, std::string_view source,
                            std::string_view evidence) {
  const std::string head =
      fmt::format("the MySQL destination {} is the source server {} ({}), and ", destination, source, evidence);
  const char* loop = "sluice would write the source's own tables and read its writes back from the binlog";
  const char* elsewhere = "or point sink.mysql at another server";
  const auto written = MysqlSinkDatabases(config);
  for (const std::string& p : config.source.tables) {
    std::optional<std::string_view> db = PatternDatabase(p);
    if (!db) continue;
    if (HasWildcard(*db))
      return Status::InvalidArgument(fmt::format(
          "{}source.tables pattern '{}' can select any database its name matches, also one created later, which "
          "sluice would copy onto itself (a database not in sink.mysql.databases keeps its name): {}; name the "
          "databases in source.tables without wildcards and map each onto a database no pattern matches "
          "([sink.mysql.databases]), {}",
          head, p, loop, elsewhere));
    for (const MysqlSinkDatabase& d : written) {
      if (AsciiLower(d.name) != AsciiLower(*db)) continue;
      std::string what, fix;
      for (const std::string& src : d.sources) {
        what += fmt::format("{}source database {} is copied into it", what.empty() ? "" : "; ", src);
        fix += fmt::format("{}{} = \"{}_copy\"", fix.empty() ? "" : ", ", src, src);
      }
      if (!fix.empty())
        fix = fmt::format("map {} onto a database no source.tables pattern matches ([sink.mysql.databases] {})",
                          d.sources.size() == 1 ? "source database " + d.sources[0] : "those source databases", fix);
      if (d.bookkeeping) {
        what += fmt::format("{}it is sink.mysql.database, which holds the bookkeeping tables", what.empty() ? "" : "; ");
        fix += fmt::format("{}set sink.mysql.database to a database no source.tables pattern matches",
                           fix.empty() ? "" : ", and ");
      }
      return Status::InvalidArgument(
          fmt::format("{}destination database {} ({}) is captured by source.tables pattern '{}': {}; {}, {}", head,
                      d.name, what, p, loop, fix, elsewhere));
    }
  }
  return Status::Ok();
}

ConnectOptions SourceConnectOptions(const SourceConfig& s) {
  ConnectOptions o;
  o.host = s.host;
  o.port = s.port;
  o.user = s.user;
  o.password = s.password;
  o.password_env = s.password_env;
  o.password_env_key = "source.password_env";
  o.connect_timeout_s = s.connect_timeout_seconds;
  o.tls = s.tls;
  o.tls_ca = s.ca;
  o.tls_cert = s.cert;
  o.tls_key = s.key;
  o.allow_cleartext_auth = s.allow_cleartext_auth;
  return o;
}

Result<std::unique_ptr<Sink>> OpenSink(const SinkConfig& config) {
  if (config.type == SinkType::kSqlite) {
    SqliteSinkOptions o;
    o.path = config.path;
    o.busy_timeout_ms = static_cast<int>(config.busy_timeout_ms);
    o.drop_tables = config.drop_tables;
    o.cache_bytes = SqlitePageCacheBytes(config.max_buffered_bytes);
    ASSIGN_OR_RETURN(auto s, SqliteSink::Open(o));
    return std::unique_ptr<Sink>(std::move(s));
  }
  if (config.type == SinkType::kMysql) {
    ASSIGN_OR_RETURN(auto s, MysqlSink::Open(config.mysql));
    s->set_drop_tables(config.drop_tables);
    return std::unique_ptr<Sink>(std::move(s));
  }
  if (config.type == SinkType::kKafka) {
    ASSIGN_OR_RETURN(auto s, KafkaSink::Open(config.kafka));
    return std::unique_ptr<Sink>(std::move(s));
  }
  if (config.type == SinkType::kNats) {
    ASSIGN_OR_RETURN(auto s, NatsSink::Open(config.nats));
    return std::unique_ptr<Sink>(std::move(s));
  }
  if (config.type == SinkType::kPostgres) {
    ASSIGN_OR_RETURN(auto s, PostgresSink::Open(config.postgres));
    s->set_drop_tables(config.drop_tables);
    return std::unique_ptr<Sink>(std::move(s));
  }
  JsonlSinkOptions o;
  o.path = config.path;
  o.checkpoint_path = config.checkpoint;
  ASSIGN_OR_RETURN(auto s, JsonlSink::Open(o));
  return std::unique_ptr<Sink>(std::move(s));
}

// Calls `attempt` (returning a Result) again while it fails with kUnavailable, waiting 200 ms
// doubling to 5 s in between, for at most two minutes; a definite error, a stop, or transient
// ones for longer than that return the last result. `what` names the step in the warnings.
template <typename Attempt>
auto WaitOutUnavailable(std::string_view what, const RunOptions& options, Attempt&& attempt) -> decltype(attempt()) {
  constexpr auto kPatience = std::chrono::seconds(120);
  const auto first = std::chrono::steady_clock::now();
  auto backoff = std::chrono::milliseconds(200);
  for (int n = 1;; ++n) {
    auto result = attempt();
    if (result.ok() || result.status().code() != StatusCode::kUnavailable || Stopping(options) ||
        std::chrono::steady_clock::now() - first >= kPatience) {
      return result;
    }
    LogWarning("{} failed (attempt {}): {}; trying again in {} ms", what, n, result.status().message(),
               backoff.count());
    const auto until = std::chrono::steady_clock::now() + backoff;
    while (std::chrono::steady_clock::now() < until && !Stopping(options))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

// A destination server that is restarting or briefly unreachable when the run starts is
// waited for, as the stream waits for it mid-run (Streamer's sink retries).
Result<std::unique_ptr<Sink>> OpenSinkWaiting(const SinkConfig& config, const RunOptions& options) {
  return WaitOutUnavailable("sink: opening", options, [&] { return OpenSink(config); });
}

Result<RunEnd> RunPipeline(const Config& config, const RunOptions& options) {
  if (config.sink.type == SinkType::kSqlite || config.sink.type == SinkType::kJsonl)
    RETURN_IF_ERROR(CheckSinkFilePath(config.sink.path, "sink.path"));
  if (config.sink.type == SinkType::kJsonl)
    RETURN_IF_ERROR(CheckSinkFilePath(config.sink.checkpoint, "sink.checkpoint"));
  // Before the source's checks: a second run of one config hears about the sink it shares,
  // not about the server_id the first one holds. Kafka and NATS need no local lock: a
  // transactional producer fences an older one, and JetStream drops resent records by id.
  // PostgreSQL: an advisory lock (postgres_sink.h).
  std::optional<SinkLock> lock;
  if (config.sink.type == SinkType::kSqlite || config.sink.type == SinkType::kJsonl) {
    ASSIGN_OR_RETURN(SinkLock taken, SinkLock::Take(config.sink));
    lock.emplace(std::move(taken));
  }
  ConnectOptions conn_opts = SourceConnectOptions(config.source);
  ASSIGN_OR_RETURN(std::unique_ptr<Observer> observer, Observer::Start(config, conn_opts));
  ASSIGN_OR_RETURN(auto meta, Connection::Connect(conn_opts));
  // The preflight checks of `sluice check` (cli/check.h) first: a user without REPLICATION
  // SLAVE would otherwise copy every table and only then fail, one without SELECT would hear
  // "matches no table". Fatal lines stop the run here; the rest are logged as warnings. The
  // retention lines need the checkpoint and come after the sink is opened. Row counts are the
  // optimizer's estimates (see GatherSourceFacts).
  ASSIGN_OR_RETURN(SourceFacts facts, GatherSourceFacts(*meta, config, /*exact_counts=*/false,
                                                                 /*settle_replica_ids=*/false));
  const ServerInfo& info = facts.info;
  {
    // Two [table] sections matching one table: the configuration's error, before any line
    // that depends on the tables' modes (server_id, the binlog settings).
    std::vector<TableName> names;
    for (const TableFacts& t : facts.tables) names.push_back(t.name);
    RETURN_IF_ERROR(ModesForTables(config, names).status());
    std::vector<CheckLine> lines = EvaluateServer(facts, config);
    std::erase_if(lines, [](const CheckLine& l) { return l.name == "TLS"; });  // logged below
    RETURN_IF_ERROR(RefuseOnFatal(lines));
  }
  // A run of only incremental/full/snapshot_only tables reads no binlog (and its user may not
  // see the position at all).
  LogInfo("connected to {} {} (server_id {}){}", FlavorName(info.flavor), info.version, info.server_id,
          NeedsBinlog(facts, config) ? ", binlog at " + info.position.ToString() : std::string());
  if (meta->tls_cipher().empty()) {
    if (config.source.tls == TlsMode::kPreferred)
      LogWarning("the server offers no TLS: queries, row data and the binlog travel in plain text "
                 "(source.tls = \"preferred\"; use \"verify_identity\" to insist on TLS)");
    else
      LogInfo("TLS: disabled (source.tls = \"disabled\")");
  } else {
    LogInfo("TLS: {} (source.tls = \"{}\"{})", meta->DescribeTls(), TlsModeName(config.source.tls),
            TlsVerifiesServer(config.source.tls) ? ", server certificate verified" : ", server certificate not verified");
  }

  TableFilter filter{config.source.tables, config.source.exclude};
  // A pattern that matches nothing is refused on a first run (a typo, a missing privilege),
  // but an existing pipeline goes on: its tables may have been dropped or renamed away, and
  // the stream has to read past that (decided once the checkpoint is loaded).
  std::vector<TableName> tables;
  Status unmatched;
  {
    auto listed = ListTables(*meta, filter);
    if (listed.ok()) {
      tables = std::move(listed).value();
    } else if (listed.status().code() == StatusCode::kNotFound) {
      unmatched = listed.status();
      for (const std::string& p : filter.include) {
        auto some = ListTables(*meta, TableFilter{{p}, filter.exclude});
        if (some.ok()) tables.insert(tables.end(), some->begin(), some->end());
      }
      std::sort(tables.begin(), tables.end());
      tables.erase(std::unique(tables.begin(), tables.end()), tables.end());
    } else {
      return listed.status();
    }
  }
  RETURN_IF_ERROR(CheckNameCollisions(tables, config.sink));
  RETURN_IF_ERROR(CheckSinkNameLengths(*meta, tables, config.sink));
  if (config.sink.type == SinkType::kMysql) {
    // A destination that is the source server itself: refused before the sink is opened (it
    // creates its bookkeeping tables), when it would write captured tables.
    ASSIGN_OR_RETURN(std::unique_ptr<Connection> dest,
                     WaitOutUnavailable("sink: connecting", options,
                                        [&] { return Connection::Connect(config.sink.mysql.connect); }));
    RETURN_IF_ERROR(RefuseSelfDestination(config, *meta, conn_opts, *dest));
    // Table names that differ only in case are one table there when it ignores case.
    ASSIGN_OR_RETURN(QueryResult lower, dest->Query("SELECT @@lower_case_table_names"));
    if (!lower.rows.empty() && !lower.rows[0].empty() && lower.rows[0][0])
      RETURN_IF_ERROR(CheckNameCollisions(tables, config.sink, std::atoi(lower.rows[0][0]->c_str())));
  }
  // Tables of modes incremental/full/snapshot_only are read by cursor or copied
  // (snapshot/incremental.h), never streamed; the rest go through snapshot + binlog.
  ASSIGN_OR_RETURN(TableModes modes, ModesForTables(config, tables));
  for (const std::string& key : modes.unmatched) LogWarning("{}", UnmatchedSectionMessage(key));
  tables = modes.cdc;
  for (const IncrementalTableOptions& t : modes.other) filter.exclude.push_back(t.name.QualifiedName());
  IncrementalRunOptions incremental;
  incremental.connection = conn_opts;
  incremental.flavor = info.flavor;
  incremental.source_server_id = info.server_id;
  incremental.fetch_rows = config.snapshot.fetch_rows;
  incremental.stop = options.stop;

  ASSIGN_OR_RETURN(auto sink, OpenSinkWaiting(config.sink, options));
  ASSIGN_OR_RETURN(auto stored, sink->LoadCheckpoint());
  if (!unmatched.ok()) {
    if (!stored) return unmatched;
    LogWarning("{}; continuing this existing pipeline (its tables may have been dropped or renamed)",
               unmatched.message());
  }
  Checkpoint ckpt;
  // Tables of another mode now that the stream kept until this run (their copy or definition
  // is in the checkpoint): their first read in the new mode starts over (RunIncremental).
  auto note_were_cdc = [&](const Checkpoint& c) {
    for (const IncrementalTableOptions& t : modes.other) {
      const std::string n = t.name.QualifiedName();
      if (c.incremental.count(n) == 0 &&
          (c.tables.count(n) > 0 || (c.schemas && c.schemas->Latest(t.name.db, t.name.table) != nullptr)))
        incremental.were_cdc.insert(n);
    }
  };
  if (tables.empty() && !modes.other.empty()) {
    // No table needs the binlog: read, then stop. No replication session, no binlog position.
    if (stored) {
      ASSIGN_OR_RETURN(ckpt, Checkpoint::FromJson(*stored));
      note_were_cdc(ckpt);
    }
    LogInfo("no table uses mode cdc: reading {} table(s) without the binlog, then stopping", modes.other.size());
    Status st = RunIncremental(incremental, *meta, modes.other, ckpt, *sink);
    Status flushed = FlushSink(*sink, options);
    RETURN_IF_ERROR(st);
    RETURN_IF_ERROR(flushed);
    // RunIncremental does not say whether it read everything: a stop that comes just after
    // the last chunk counts as one before it.
    if (Stopping(options)) {
      LogInfo("stopped; the next run resumes after the last committed chunk");
      return RunEnd::kStopped;
    }
    LogInfo("incremental reads done");
    return RunEnd::kDone;
  }
  // By GTID or by file/position, and whether this server can continue the checkpoint at all
  // (a failover target can, if its GTID history holds the checkpoint's position).
  ASSIGN_OR_RETURN(ServerGtidState server_state,
                   ReadServerGtidState(*meta, info.flavor, info.server_id, info.gtid_mode, info.gtid_executed));
  ResumePlan resume;
  if (stored) {
    ASSIGN_OR_RETURN(ckpt, Checkpoint::FromJson(*stored));
    note_were_cdc(ckpt);
    LogInfo("resuming from checkpoint {}{}", ckpt.stream_start.empty() ? "GTID " + ckpt.gtid : ckpt.stream_start.ToString(),
            ckpt.snapshot_done ? "" : " (snapshot not finished)");
    ASSIGN_OR_RETURN(resume, PlanResume(&ckpt, server_state));
    if (resume.server_changed) LogWarning("{}", resume.note);
    else LogInfo("{}", resume.note);
  } else {
    ckpt.source = server_state.identity;
    // Only if the snapshot leaves no position: the stream starts at the snapshot's point.
    resume.by_gtid = server_state.gtids_on;
  }
  // Retention: a purged resume position, or one the server no longer holds because its
  // history was reset (RESET MASTER, a restore), stops here (exit 3) before a snapshot is
  // resumed for nothing; a snapshot expected to outlast the binlog retention is warned about.
  if (stored && !resume.server_changed)
    RETURN_IF_ERROR(AddResumeHistory(*meta, std::optional<Checkpoint>(ckpt), &facts));
  RETURN_IF_ERROR(RefuseOnFatal(EvaluateRetention(
      facts, config, stored ? std::optional<Checkpoint>(ckpt) : std::nullopt, std::nullopt)));

  if (!stored && config.snapshot.mode == SnapshotMode::kNever) {
    ckpt.flavor = info.flavor;
    ckpt.stream_start = info.position;
    ckpt.gtid = info.flavor == Flavor::kMariaDB ? info.gtid_binlog_pos : info.gtid_executed;
    if (info.flavor == Flavor::kMariaDB && !info.position.empty()) {
      // The GTID position at exactly that point: @@gtid_binlog_pos was read before the
      // position, and a transaction in between would leave the pair apart, which the next
      // run's history check takes for a reset binlog (stream/resume.h).
      ASSIGN_OR_RETURN(QueryResult g, meta->Query(fmt::format("SELECT BINLOG_GTID_POS({}, {})",
                                                              meta->Quote(info.position.file), info.position.pos)));
      if (!g.rows.empty() && !g.rows[0].empty() && g.rows[0][0]) ckpt.gtid = *g.rows[0][0];
    }
    ckpt.snapshot_done = true;
    SchemaHistory history;  // the definitions at the start point (docs/schema-changes.md)
    for (const auto& t : tables) {
      ASSIGN_OR_RETURN(TableSchema s, LoadTableSchema(*meta, t.db, t.table));
      if (s.system_versioned) RETURN_IF_ERROR(CheckSnapshotTable(s, SnapshotRunOptions{}));  // nothing is copied
      RETURN_IF_ERROR(sink->PrepareTable(s));
      RETURN_IF_ERROR(history.Add(t.db, t.table, TableVersion{BinlogPosition{}, std::make_shared<const TableSchema>(std::move(s)), ""}));
    }
    history.CacheJson();
    if (!history.empty()) ckpt.schemas = std::make_shared<const SchemaHistory>(std::move(history));
    RETURN_IF_ERROR(sink->SaveCheckpoint(ckpt.ToJson()));
  }
  if (stored) {
    // A table read without the binlog until now (modes incremental, full, snapshot_only) and
    // in mode cdc from this run on: its rows in the sink are of some earlier read, and rows
    // deleted since are there too. It is copied again, its sink table replaced: as a table new
    // to the stream once the snapshot is done (marked below), or with the others (its sink
    // table replaced here, in one step with the checkpoint that forgets its old state).
    std::vector<std::string> switched;
    std::vector<SchemaChange> replaced;
    for (const auto& t : tables) {
      auto it = ckpt.incremental.find(t.QualifiedName());
      if (it == ckpt.incremental.end()) continue;
      LogInfo("{}: mode changed from \"{}\" to \"cdc\": copying it again, its sink table replaced", it->first,
              it->second.mode);
      ckpt.incremental.erase(it);
      switched.push_back(t.QualifiedName());
      if (!ckpt.snapshot_done) {
        ASSIGN_OR_RETURN(TableSchema s, LoadTableSchema(*meta, t.db, t.table));
        SourceInfo at;
        at.flavor = info.flavor;
        at.server_id = info.server_id;
        at.timestamp = static_cast<uint32_t>(std::time(nullptr));
        at.snapshot = true;
        replaced.push_back(ReplaceTableChange(std::make_shared<const TableSchema>(std::move(s)),
                                              t.QualifiedName() + " read from the binlog from now on", at));
      }
    }
    if (!replaced.empty()) RETURN_IF_ERROR(sink->ApplySchemaChanges(replaced, ckpt.ToJson()));
    if (!switched.empty() && ckpt.snapshot_done) MarkForReread(ckpt, switched);
  }
  if (stored && ckpt.snapshot_done) {
    // Tables added to the configuration since the snapshot: copy them now. Their copy gets
    // its own snapshot point (copied_at), so the stream skips their earlier changes.
    std::vector<std::string> added;
    // A table the stored patterns already selected but the checkpoint does not know was
    // created after it: the stream creates it from its CREATE (docs/schema-changes.md). One
    // they did not select is copied, even if the schema history knows it: a table excluded
    // for a while and selected again missed the changes made meanwhile.
    const TableFilter stored_filter{ckpt.filter_include, ckpt.filter_exclude};
    const bool know_created = ckpt.schemas != nullptr && !ckpt.filter_include.empty();
    for (const auto& t : tables) {
      if (ckpt.tables.count(t.QualifiedName())) continue;
      if (know_created && TableSelected(stored_filter, t.db, t.table)) continue;
      added.push_back(t.QualifiedName());
    }
    if (!added.empty()) {
      std::string list;
      for (const auto& a : added) list += (list.empty() ? "" : ", ") + a;
      if (config.snapshot.mode == SnapshotMode::kNever) {
        // Said, not done silently: the replica holds none of their rows from before the
        // checkpoint (a table selected again keeps whatever an earlier copy left, unkept since:
        // a new user's probe read "from now on" where the changes came from the checkpoint on).
        LogWarning("{} table(s) new to this replica ({}) are not copied (snapshot.mode = \"never\"): it gets "
                   "their changes from the checkpoint's position ({}) on, and none of the rows they held before "
                   "(a sink table of that name left from an earlier copy stays as it was, missing what changed "
                   "while it was not selected); `sluice resnapshot --config FILE TABLE` copies one",
                   added.size(), list,
                   ckpt.stream_start.empty() ? "GTID " + ckpt.gtid : ckpt.stream_start.ToString());
      } else {
        if (resume.server_changed)
          return Status::FailedPrecondition(fmt::format(
              "source.tables adds {} in the same run that switches to another server; run once with "
              "the old table list first (it continues by GTID), then add the tables", list));
        LogInfo("snapshotting {} table(s) new to this replica: {}", added.size(), list);
        MarkForReread(ckpt, added);
      }
    }
  }
  ckpt.filter_include = config.source.tables;
  ckpt.filter_exclude = config.source.exclude;
  // `sluice resnapshot` requests left for this run (cli/resnapshot.h).
  const bool local_sink = config.sink.type == SinkType::kSqlite || config.sink.type == SinkType::kJsonl;
  auto selected_names = [&filter](std::vector<std::string> names) {
    std::erase_if(names, [&](const std::string& n) {
      for (size_t dot = n.find('.'); dot != std::string::npos; dot = n.find('.', dot + 1))
        if (TableSelected(filter, n.substr(0, dot), n.substr(dot + 1))) return false;
      LogWarning("resnapshot of {} ignored: source.tables does not select it", n);
      return true;
    });
    return names;
  };
  if (local_sink && stored) {
    std::vector<std::string> asked = selected_names(ClaimResnapshotRequests(config.sink));
    if (asked.empty()) ClearResnapshotClaim(config.sink);  // nothing (or nothing selected)
    // A claim left by a run stopped during the copy it asked for: the checkpoint holds the
    // mark and the copy's progress, so the copy continues (marked again, it started over at
    // every run: a new user's probe).
    std::erase_if(asked, [&](const std::string& n) {
      const auto it = ckpt.tables.find(n);
      if (it == ckpt.tables.end() || !it->second.reread || it->second.done) return false;
      LogInfo("{}: continuing the re-read asked for by sluice resnapshot", n);
      return true;
    });
    if (!asked.empty()) {
      LogInfo("re-reading on request (sluice resnapshot): {} table(s)", asked.size());
      MarkForReread(ckpt, asked);
    }
  }
  // A sink table that is gone although the checkpoint holds rows copied into it (dropped by
  // hand, or the destination restored from an older backup, while sluice was stopped): the
  // stream would create it empty and fill it with later changes only (a new user's probe). It
  // is copied again instead.
  if (stored) {
    std::vector<std::string> missing;
    for (const auto& t : tables) {
      const std::string name = t.QualifiedName();
      const auto it = ckpt.tables.find(name);
      const auto inc = ckpt.incremental.find(name);
      const bool copied =
          (it != ckpt.tables.end() && !it->second.reread && (it->second.done || it->second.rows > 0)) ||
          (inc != ckpt.incremental.end() && !inc->second.restart &&
           (inc->second.backfill_done || inc->second.backfill_rows > 0 || inc->second.runs > 0));
      if (!copied) continue;
      TableSchema named;
      named.db = t.db;
      named.table = t.table;
      ASSIGN_OR_RETURN(std::optional<bool> has, sink->HasTable(named));
      if (has && !*has) missing.push_back(name);
    }
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      LogWarning("the sink has no table for {}, although rows were copied into it (dropped while sluice was "
                 "stopped?): copying {} again from the source",
                 list, missing.size() == 1 ? "it" : "them");
      MarkForReread(ckpt, missing);
    }
  }
  SnapshotRunOptions so;
  so.connection = conn_opts;
  so.source_server_id = info.server_id;
  so.workers = config.snapshot.workers;
  so.fetch_rows = config.snapshot.fetch_rows;
  so.plan.chunk_rows = config.snapshot.chunk_rows;
  so.plan.max_ranges_per_table = config.snapshot.max_ranges_per_table;
  so.plan.exact_count_max_rows = config.snapshot.exact_count_max_rows;
  so.plan.parallel = config.snapshot.parallel;
  so.stop = options.stop;
  so.allow_inconsistent_read.include = config.snapshot.allow_inconsistent_read;
  if (config.snapshot.watermark) {
    const std::string& wt = config.snapshot.watermark_table;
    so.watermark = WatermarkOptions{TableName{wt.substr(0, wt.find('.')), wt.substr(wt.find('.') + 1)},
                                    config.snapshot.watermark_server_id};
  }
  bool rereads = false;
  for (auto it = ckpt.tables.begin(); it != ckpt.tables.end();) {
    // A table no longer selected: its copy, finished or not (an interrupted snapshot, or a
    // re-read marked by a DDL, a table added to source.tables, `sluice resnapshot`), is
    // forgotten. Kept, an excluded table's interrupted first copy was finished by the next
    // re-read of any other table (a new user's probe: excluded because it could not be
    // copied, the run then failed on it at every start), and a table selected again later
    // was taken as copied though it missed the changes made meanwhile (now it is new again).
    bool selected = false;
    for (size_t dot = it->first.find('.'); !selected && dot != std::string::npos; dot = it->first.find('.', dot + 1))
      selected = TableSelected(filter, it->first.substr(0, dot), it->first.substr(dot + 1));
    if (!selected) {
      if (incremental.were_cdc.count(it->first))
        LogInfo("{}: no longer streamed: its [table] section gives it another mode (read below)", it->first);
      else
        LogInfo("{}: no longer selected by source.tables/exclude; it is no longer kept up to date, and is copied "
                "again if it is selected again", it->first);
      it = ckpt.tables.erase(it);
      continue;
    }
    if (it->second.reread && !it->second.done) rereads = true;
    ++it;
  }
  if (stored && ckpt.schemas && incremental.were_cdc.empty()) {
    // Every table the checkpoint's history holds left out: a configuration rewritten, or
    // another pipeline's destination (a new user's probe: two pipelines into one PostgreSQL
    // database took turns copying their tables again, in silence).
    const auto live = LiveTables(*ckpt.schemas);
    const size_t known = live.size();
    const bool any_selected = std::any_of(live.begin(), live.end(),
                                          [&](const auto& t) { return TableSelected(filter, t.first, t.second); });
    if (known > 0 && !any_selected)
      LogWarning("none of the {} tables this destination's checkpoint holds is selected by this configuration: if "
                 "the destination belongs to another pipeline, stop and give this one a destination of its own (the "
                 "checkpoint is per destination: per SQLite file, JSON lines checkpoint file, PostgreSQL database or "
                 "sink.mysql.database)",
                 known);
  }
  if (!ckpt.snapshot_done) {
    if (stored && !rereads && config.snapshot.mode == SnapshotMode::kNever)
      LogWarning("snapshot.mode = \"never\" applies to a destination sluice has not written to yet: this one "
                 "holds an unfinished snapshot, which is finished first (left as it is, its tables would miss "
                 "rows)");
    if (rereads) {
      // Online re-reads (snapshot/reread.h): the streamer copies them beside the stream
      // (stream/streamer.h `reread`), so the other tables do not wait for them.
    } else {
      // A table dropped or renamed away while the snapshot plans or reads it: not copied
      // (the stream reads its DROP or RENAME), the others go on (snapshot/reread.h).
      std::vector<TableName> copying = tables;
      PauseForTest("SLUICE_TEST_LISTED_PAUSE_FILE", "snapshot: paused after listing the tables");
      Status st = RunSnapshot(so, *meta, copying, ckpt, *sink);
      int back = 0;  // passes after a NotFound with every table there (TableBackAgain)
      for (int round = 0; st.code() == StatusCode::kNotFound && round < 100; ++round) {
        ASSIGN_OR_RETURN(size_t gone, RecordTablesGoneDuringTheCopy(so, *meta, ckpt, *sink, &copying));
        if (gone == 0 && !TableBackAgain(st, &back)) break;
        st = copying.empty() ? Status::Ok() : RunSnapshot(so, *meta, copying, ckpt, *sink);
      }
      RETURN_IF_ERROR(st);
      if (!Stopping(options)) {
        // A table created or renamed into the patterns after they were listed above and
        // before the snapshot's point is in no copy, and its statement is before the stream's
        // start, so the stream never sees it (a new user's probe: its rows that never changed
        // afterwards were missing, exit 0; a later DDL on it stopped every run). Listed again
        // now, such a table is copied beside the stream at a point of its own, as a table
        // added to the configuration; marked in the checkpoint at once, so that a crash before
        // the stream stores anything does not forget it. (One created after the point is
        // copied too, though the stream would have created it.)
        // On a connection of its own: the first one may have been reset during a long copy.
        auto now = WaitOutUnavailable("listing the tables again", options, [&]() -> Result<std::vector<TableName>> {
          ASSIGN_OR_RETURN(auto c, Connection::Connect(conn_opts));
          return ListTables(*c, filter);
        });
        if (!now.ok() && now.status().code() != StatusCode::kNotFound) return now.status();
        std::vector<std::string> appeared;
        if (now.ok())
          for (const TableName& t : *now)
            if (!ckpt.tables.count(t.QualifiedName()) &&
                std::find(tables.begin(), tables.end(), t) == tables.end())
              appeared.push_back(t.QualifiedName());
        if (!appeared.empty()) {
          std::string list;
          for (const auto& a : appeared) list += (list.empty() ? "" : ", ") + a;
          LogInfo("{} table(s) appeared at the source while the snapshot was planned ({}): copying them beside the "
                  "stream",
                  appeared.size(), list);
          MarkForReread(ckpt, appeared);
          RETURN_IF_ERROR(sink->SaveCheckpoint(ckpt.ToJson()));
        }
      }
    }
    if (Stopping(options)) {
      LogInfo("stopped during the snapshot; the next run resumes it");
      RETURN_IF_ERROR(FlushSink(*sink, options));
      return RunEnd::kStopped;
    }
  }
  if (!modes.other.empty()) {
    // The other tables are read once per run, before streaming the cdc tables.
    RETURN_IF_ERROR(RunIncremental(incremental, *meta, modes.other, ckpt, *sink));
    if (Stopping(options)) {
      RETURN_IF_ERROR(FlushSink(*sink, options));
      return RunEnd::kStopped;
    }
  }
  // --until-caught-up streams to the binlog's end as it is now, after the snapshot: a parallel
  // snapshot's later ranges were read at later points, and a target read before the copy
  // could stop the stream before them, leaving rows copied at those points beside rows that
  // lack the same changes (found by a new-user test: "streaming from P until T < P").
  // On a connection of its own: the run's first one may have been reset during a long copy
  // (the snapshot's workers reconnect), and a source briefly away is waited for.
  meta.reset();
  BinlogPosition target;
  if (options.until_caught_up) {
    ASSIGN_OR_RETURN(target, WaitOutUnavailable("reading the binlog's end", options, [&]() -> Result<BinlogPosition> {
                       ASSIGN_OR_RETURN(auto c, Connection::Connect(conn_opts));
                       return ReadBinlogPosition(*c);
                     }));
  }

  if (ckpt.schemas) {
    // The tables the stream starts with: a table created or renamed later into the topic or
    // subject of one of them stops the run (Kafka, NATS; publish_util.h DestinationOwners).
    std::vector<std::pair<std::string, std::string>> known = LiveTables(*ckpt.schemas);
    std::erase_if(known, [&](const auto& t) { return !TableSelected(filter, t.first, t.second); });
    sink->KnowTables(known);
  }

  // The server's end behind the position the stream starts from, on the server that wrote
  // it: its history was reset after the checks above (or they could not tell). Never "caught
  // up": a run that streamed nothing and exited 0 here lost what came after the reset (a new
  // user's probe).
  if (options.until_caught_up && !ckpt.stream_start.empty() && ComparePositions(target, ckpt.stream_start) < 0) {
    HistoryCheck behind;
    behind.verdict = HistoryVerdict::kReset;
    behind.detail = fmt::format("the server's binlog ends at {}, before the checkpoint's position {}",
                                target.ToString(), ckpt.stream_start.ToString());
    return Status::DataLoss(HistoryResetMessage(behind));
  }

  StreamerOptions sopts;
  sopts.connection = conn_opts;
  sopts.replica_server_id = config.source.server_id;
  sopts.heartbeat_seconds = config.source.heartbeat_seconds;
  sopts.filter = filter;
  sopts.target = target;
  sopts.resume_by_gtid = resume.by_gtid;
  sopts.stop = options.stop;
  sopts.reconnect_give_up_seconds = config.source.reconnect_timeout_seconds;
  sopts.group_max_bytes = config.sink.group_max_bytes;
  sopts.group_max_ms = config.sink.group_max_ms;
  sopts.reread = [so, local_sink, &config](Checkpoint& c, Sink& s, const std::atomic<bool>* stop) {
    SnapshotRunOptions with_stop = so;
    with_stop.stop = stop;
    Status st = RunRereads(with_stop, c, s);
    // The marks are in the sink (the stream stored them before asking): the claim can go.
    if (local_sink && st.ok()) ClearResnapshotClaim(config.sink);
    return st;
  };
  if (local_sink)
    sopts.poll_rereads = [&config, selected_names] {
      std::vector<std::string> asked = selected_names(ClaimResnapshotRequests(config.sink));
      if (asked.empty()) ClearResnapshotClaim(config.sink);
      return asked;
    };
  sopts.max_buffered_bytes = config.sink.max_buffered_bytes;
  // SQLite's page cache counts against the cap (docs/config.md): the change data gets the rest.
  if (config.sink.type == SinkType::kSqlite) sopts.max_buffered_bytes = SqliteChangeDataBytes(sopts.max_buffered_bytes);
  // Progress: every 10 s while streaming (on the sink writer thread), the position, the
  // rates since the last line, and the lag (source commit time of the last applied
  // transaction to now, i.e. to its sink commit).
  struct Progress {
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    uint64_t txns = 0, rows = 0, groups = 0;
  };
  auto progress = std::make_shared<Progress>();
  Streamer* streamer_ptr = nullptr;
  sopts.on_applied = [progress, &streamer_ptr](const Checkpoint& cp, size_t) {
    auto now = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(now - progress->last).count();
    if (secs < 10 || streamer_ptr == nullptr) return;
    uint64_t txns = streamer_ptr->applied_transactions(), rows = streamer_ptr->applied_rows(),
             groups = streamer_ptr->applied_groups();
    LogStatus("progress: at {}: {:.0f} transactions/s, {:.0f} row changes/s, {:.1f} transactions per commit, lag {:.0f} s",
            cp.stream_start.ToString(), (txns - progress->txns) / secs, (rows - progress->rows) / secs,
            groups > progress->groups ? double(txns - progress->txns) / double(groups - progress->groups) : 0.0,
            LagSeconds().value_or(0));
    progress->last = now;
    progress->txns = txns;
    progress->rows = rows;
    progress->groups = groups;
  };
  LogInfo("streaming from {}{}",
          !resume.by_gtid || ckpt.gtid.empty() ? ckpt.stream_start.ToString()
          : ckpt.stream_start.empty()          ? "GTID " + ckpt.gtid
                                               : fmt::format("{} (GTID {})", ckpt.stream_start.ToString(), ckpt.gtid),
          options.until_caught_up ? fmt::format(" until {}", target.ToString()) : "");
  Streamer streamer(sopts);
  streamer_ptr = &streamer;
  const auto stream_started = std::chrono::steady_clock::now();
  Status st = streamer.Run(ckpt, *sink);
  const double stream_secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stream_started).count();
  Status flushed = FlushSink(*sink, options);
  RETURN_IF_ERROR(st);
  RETURN_IF_ERROR(flushed);
  // The lag only when the run caught up (--until-caught-up): after a stop by a signal what was
  // read and not yet applied is dropped (read again by the next run), so the lag always read
  // 0 there (a new user's probe took it for "caught up" with transactions still waiting). The
  // position is the one the sink holds.
  LogInfo("stopped at {} (the position the sink holds; the next run goes on from there): streamed {} transactions, "
          "{} row changes in {:.2f} s ({:.0f} row changes/s, {} sink commits{})",
          streamer.checkpoint().stream_start.ToString(), streamer.applied_transactions(), streamer.applied_rows(),
          stream_secs, stream_secs > 0 ? streamer.applied_rows() / stream_secs : 0.0, streamer.applied_groups(),
          streamer.caught_up() ? fmt::format(", lag {:.0f} s", LagSeconds().value_or(0)) : std::string());
  // Without a target the stream ends only at *stop; with one, caught_up() says whether it got
  // there before the stop (a stop during the last commit is not an interruption).
  return streamer.caught_up() ? RunEnd::kDone : RunEnd::kStopped;
}

}  // namespace sluice::cli
