#include "cli/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "cli/mysql_sink_config.h"
#include "cli/postgres_config.h"
#include "cli/publish_config.h"
#include "cli/table_config.h"

namespace sluice::cli {
namespace {

Status KeyError(std::string_view origin, std::string_view key, std::string_view msg) {
  return Status::InvalidArgument(fmt::format("{}: {}: {}", origin, key, msg));
}

Status CheckKeys(const toml::table& t, std::string_view section, const std::set<std::string>& allowed,
                 std::string_view origin) {
  for (const auto& [k, v] : t) {
    (void)v;
    if (!allowed.count(std::string(k.str()))) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return KeyError(origin, fmt::format("{}{}{}", section, section.empty() ? "" : ".", k.str()),
                      fmt::format("unknown key (known: {})", list));
    }
  }
  return Status::Ok();
}

Status GetString(const toml::table& t, std::string_view section, const char* key, std::string* out,
                 std::string_view origin) {
  const toml::node* n = t.get(key);
  if (!n) return Status::Ok();
  if (!n->is_string()) return KeyError(origin, fmt::format("{}.{}", section, key), "expected a string");
  *out = n->as_string()->get();
  return Status::Ok();
}

template <typename T>
Status GetInt(const toml::table& t, std::string_view section, const char* key, T* out, int64_t lo,
              int64_t hi, std::string_view origin) {
  const toml::node* n = t.get(key);
  if (!n) return Status::Ok();
  if (!n->is_integer() || n->as_integer()->get() < lo || n->as_integer()->get() > hi) {
    return KeyError(origin, fmt::format("{}.{}", section, key),
                    fmt::format("expected an integer in {}..{}", lo, hi));
  }
  *out = static_cast<T>(n->as_integer()->get());
  return Status::Ok();
}

Status GetBool(const toml::table& t, std::string_view section, const char* key, bool* out,
               std::string_view origin) {
  const toml::node* n = t.get(key);
  if (!n) return Status::Ok();
  if (!n->is_boolean()) return KeyError(origin, fmt::format("{}.{}", section, key), "expected true or false");
  *out = n->as_boolean()->get();
  return Status::Ok();
}

// A PEM file named in the config must be readable now, not fail later inside the TLS library.
Status CheckReadableFile(const std::string& path, std::string_view key, std::string_view origin) {
  if (path.empty()) return Status::Ok();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return KeyError(origin, key, fmt::format("{} is a directory, not a PEM file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return KeyError(origin, key, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  return Status::Ok();
}

Status ParseTlsSettings(const toml::table& src, SourceConfig* s, std::string_view origin) {
  std::string mode(TlsModeName(s->tls));
  RETURN_IF_ERROR(GetString(src, "source", "tls", &mode, origin));
  std::optional<TlsMode> parsed = ParseTlsMode(mode);
  if (!parsed)
    return KeyError(origin, "source.tls",
                    fmt::format("'{}' is not one of: disabled, preferred, required, verify_ca, "
                                "verify_identity",
                                mode));
  s->tls = *parsed;
  RETURN_IF_ERROR(GetString(src, "source", "ca", &s->ca, origin));
  RETURN_IF_ERROR(GetString(src, "source", "cert", &s->cert, origin));
  RETURN_IF_ERROR(GetString(src, "source", "key", &s->key, origin));
  RETURN_IF_ERROR(GetBool(src, "source", "allow_cleartext_auth", &s->allow_cleartext_auth, origin));
  if (s->tls == TlsMode::kDisabled && (!s->ca.empty() || !s->cert.empty() || !s->key.empty()))
    return KeyError(origin, "source.tls",
                    "\"disabled\" but ca/cert/key are set; remove them or choose a TLS mode");
  if (s->tls == TlsMode::kVerifyCa && s->ca.empty())
    return KeyError(origin, "source.ca",
                    "required with tls = \"verify_ca\": the PEM file of the CA that signed the "
                    "server certificate");
  if (s->cert.empty() != s->key.empty())
    return KeyError(origin, s->cert.empty() ? "source.cert" : "source.key",
                    "cert and key go together (a client certificate and its private key)");
  RETURN_IF_ERROR(CheckReadableFile(s->ca, "source.ca", origin));
  RETURN_IF_ERROR(CheckReadableFile(s->cert, "source.cert", origin));
  RETURN_IF_ERROR(CheckReadableFile(s->key, "source.key", origin));
  return Status::Ok();
}

Status GetStringList(const toml::table& t, std::string_view section, const char* key,
                     std::vector<std::string>* out, std::string_view origin) {
  const toml::node* n = t.get(key);
  if (!n) return Status::Ok();
  const toml::array* a = n->as_array();
  if (!a) return KeyError(origin, fmt::format("{}.{}", section, key), "expected an array of strings");
  out->clear();
  for (const auto& e : *a) {
    if (!e.is_string())
      return KeyError(origin, fmt::format("{}.{}", section, key), "expected an array of strings");
    out->push_back(e.as_string()->get());
  }
  return Status::Ok();
}

Status ValidatePattern(const std::string& p, std::string_view key, std::string_view origin) {
  auto dot = p.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == p.size() ||
      p.find('.', dot + 1) != std::string::npos) {
    return KeyError(origin, key,
                    fmt::format("'{}' is not a db.table pattern (e.g. \"sakila.*\")", p));
  }
  return Status::Ok();
}

// Checks every string of the file before any is read: a NUL in one (TOML's \u0000) would be
// cut short by the C libraries it is handed to (host = "127.0.0.1\u0000evil" connected to
// 127.0.0.1), and an empty *_env name would be taken as "no password" without a word.
Status CheckStrings(const toml::node& node, const std::string& key, std::string_view origin) {
  if (const toml::table* t = node.as_table()) {
    for (const auto& [k, v] : *t) {
      const std::string sub = key.empty() ? std::string(k.str()) : fmt::format("{}.{}", key, k.str());
      if (k.str().find('\0') != std::string_view::npos)
        return KeyError(origin, key.empty() ? "(top level)" : key, "a key holds a NUL character");
      RETURN_IF_ERROR(CheckStrings(v, sub, origin));
      if (k.str().ends_with("_env") && v.is_string() && v.as_string()->get().empty())
        return KeyError(origin, sub,
                        "must not be empty: name the environment variable that holds the secret, or leave the "
                        "key out");
    }
  } else if (const toml::array* a = node.as_array()) {
    for (const auto& e : *a) RETURN_IF_ERROR(CheckStrings(e, key, origin));
  } else if (const auto* str = node.as_string()) {
    if (str->get().find('\0') != std::string::npos)
      return KeyError(origin, key, "holds a NUL character (\\u0000), which no host, name or path can hold");
  }
  return Status::Ok();
}

}  // namespace

Result<Config> ParseConfig(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, std::string(origin));
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  RETURN_IF_ERROR(CheckKeys(root, "", {"source", "snapshot", "sink", "metrics", "log", "table"}, origin));
  RETURN_IF_ERROR(CheckStrings(root, "", origin));
  Config c;

  const toml::table* src = root.get_as<toml::table>("source");
  if (!src) return KeyError(origin, "source", "missing section [source]");
  RETURN_IF_ERROR(CheckKeys(*src, "source",
                            {"host", "port", "user", "password_env", "server_id", "tables", "exclude",
                             "heartbeat_seconds", "connect_timeout_seconds", "reconnect_timeout_seconds",
                             "tls", "ca", "cert", "key", "allow_cleartext_auth"},
                            origin));
  RETURN_IF_ERROR(GetString(*src, "source", "host", &c.source.host, origin));
  RETURN_IF_ERROR(GetInt(*src, "source", "port", &c.source.port, 1, 65535, origin));
  RETURN_IF_ERROR(GetString(*src, "source", "user", &c.source.user, origin));
  RETURN_IF_ERROR(GetString(*src, "source", "password_env", &c.source.password_env, origin));
  RETURN_IF_ERROR(GetInt(*src, "source", "server_id", &c.source.server_id, 1, 4294967295LL, origin));
  RETURN_IF_ERROR(GetStringList(*src, "source", "tables", &c.source.tables, origin));
  RETURN_IF_ERROR(GetStringList(*src, "source", "exclude", &c.source.exclude, origin));
  RETURN_IF_ERROR(GetInt(*src, "source", "heartbeat_seconds", &c.source.heartbeat_seconds, 1, 3600, origin));
  RETURN_IF_ERROR(GetInt(*src, "source", "connect_timeout_seconds", &c.source.connect_timeout_seconds, 1,
                         3600, origin));
  RETURN_IF_ERROR(GetInt(*src, "source", "reconnect_timeout_seconds",
                         &c.source.reconnect_timeout_seconds, 0, 31536000, origin));
  RETURN_IF_ERROR(ParseTlsSettings(*src, &c.source, origin));
  if (c.source.tables.empty())
    return KeyError(origin, "source.tables", "missing or empty; list db.table globs such as \"sakila.*\"");
  for (const auto& p : c.source.tables) RETURN_IF_ERROR(ValidatePattern(p, "source.tables", origin));
  for (const auto& p : c.source.exclude) RETURN_IF_ERROR(ValidatePattern(p, "source.exclude", origin));
  if (c.source.host.empty() || c.source.host.front() == '/' || c.source.host.ends_with(".sock")) {
    return KeyError(origin, "source.host",
                    fmt::format("'{}' is a unix socket path; binlog streaming needs TCP (host and port)",
                                c.source.host));
  }
  if (!c.source.password_env.empty()) {
    const char* pw = std::getenv(c.source.password_env.c_str());
    if (!pw) {
      return KeyError(origin, "source.password_env",
                      fmt::format("environment variable {} is not set", c.source.password_env));
    }
    c.source.password = pw;
  }

  if (const toml::node* n = root.get("snapshot")) {
    const toml::table* snap = n->as_table();
    if (!snap) return KeyError(origin, "snapshot", "expected a section");
    RETURN_IF_ERROR(CheckKeys(*snap, "snapshot",
                              {"mode", "workers", "chunk_rows", "fetch_rows", "max_ranges_per_table",
                               "exact_count_max_rows", "parallel", "consistency",
                               "expected_rows_per_second", "allow_inconsistent_read", "watermark_table",
                               "watermark_server_id"},
                              origin));
    std::string mode = "initial";
    RETURN_IF_ERROR(GetString(*snap, "snapshot", "mode", &mode, origin));
    if (mode == "initial") c.snapshot.mode = SnapshotMode::kInitial;
    else if (mode == "never") c.snapshot.mode = SnapshotMode::kNever;
    else return KeyError(origin, "snapshot.mode", fmt::format("'{}' is not one of: initial, never", mode));
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "chunk_rows", &c.snapshot.chunk_rows, 1, 1000000000, origin));
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "workers", &c.snapshot.workers, 1, 64, origin));
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "fetch_rows", &c.snapshot.fetch_rows, 1, 10000000, origin));
    // Every checkpoint of the snapshot holds each range's progress, so its cost grows with the
    // ranges: 4,000 ranges of one 40,000-row table took 6 s more than 64 did (BENCHMARKS.md).
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "max_ranges_per_table", &c.snapshot.max_ranges_per_table,
                           1, 4096, origin));
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "exact_count_max_rows", &c.snapshot.exact_count_max_rows,
                           0, int64_t{1} << 62, origin));
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "expected_rows_per_second",
                           &c.snapshot.expected_rows_per_second, 1, 1000000000, origin));
    if (const toml::node* p = snap->get("parallel")) {
      if (!p->is_boolean()) return KeyError(origin, "snapshot.parallel", "expected true or false");
      c.snapshot.parallel = p->as_boolean()->get();
    }
    RETURN_IF_ERROR(GetStringList(*snap, "snapshot", "allow_inconsistent_read", &c.snapshot.allow_inconsistent_read,
                                  origin));
    for (const auto& p : c.snapshot.allow_inconsistent_read)
      RETURN_IF_ERROR(ValidatePattern(p, "snapshot.allow_inconsistent_read", origin));
    std::string consistency = "exact";
    RETURN_IF_ERROR(GetString(*snap, "snapshot", "consistency", &consistency, origin));
    c.snapshot.watermark = consistency == "watermark";
    if (consistency != "exact" && consistency != "watermark")
      return KeyError(origin, "snapshot.consistency",
                      fmt::format("'{}' is not one of: exact, watermark", consistency));
    RETURN_IF_ERROR(GetString(*snap, "snapshot", "watermark_table", &c.snapshot.watermark_table, origin));
    const std::string& wt = c.snapshot.watermark_table;
    if (wt.find_first_of("*?") != std::string::npos)
      return KeyError(origin, "snapshot.watermark_table", fmt::format("'{}' is a pattern; name one db.table", wt));
    RETURN_IF_ERROR(ValidatePattern(wt, "snapshot.watermark_table", origin));
    RETURN_IF_ERROR(GetInt(*snap, "snapshot", "watermark_server_id", &c.snapshot.watermark_server_id, 1,
                           4294967295LL, origin));
    if (c.snapshot.watermark) {
      if (c.snapshot.watermark_server_id == 0) c.snapshot.watermark_server_id = c.source.server_id + 1;
      if (c.snapshot.watermark_server_id == c.source.server_id)
        return KeyError(origin, "snapshot.watermark_server_id",
                        "must differ from source.server_id (two replicas with one id disconnect each other)");
      // The signal table's own rows never reach the sink, whatever source.tables selects.
      c.source.exclude.push_back(wt);
    }
  }

  if (const toml::node* n = root.get("sink")) {
    const toml::table* sink = n->as_table();
    if (!sink) return KeyError(origin, "sink", "expected a section");
    RETURN_IF_ERROR(CheckKeys(*sink, "sink", {"type", "path", "checkpoint", "file_mode", "kafka", "nats", "mysql", "postgres", "busy_timeout_ms", "group_max_bytes", "group_max_ms", "drop_tables", "max_buffered_bytes"}, origin));
    std::string type = "sqlite";
    RETURN_IF_ERROR(GetString(*sink, "sink", "type", &type, origin));
    if (type == "sqlite") c.sink.type = SinkType::kSqlite;
    else if (type == "jsonl") c.sink.type = SinkType::kJsonl;
    else if (type == "kafka") c.sink.type = SinkType::kKafka;
    else if (type == "nats") c.sink.type = SinkType::kNats;
    else if (type == "mysql") c.sink.type = SinkType::kMysql;
    else if (type == "postgres") c.sink.type = SinkType::kPostgres;
    else return KeyError(origin, "sink.type", fmt::format("'{}' is not one of: sqlite, jsonl, kafka, nats, mysql, postgres", type));
    for (const char* section : {"kafka", "nats", "mysql", "postgres"}) {
      const toml::node* sub = sink->get(section);
      const bool wanted = type == section;
      if (sub == nullptr && wanted) return KeyError(origin, fmt::format("sink.{}", section), "required for this sink type");
      if (sub == nullptr) continue;
      if (!wanted) return KeyError(origin, fmt::format("sink.{}", section), fmt::format("set, but sink.type is \"{}\"", type));
      if (!sub->is_table()) return KeyError(origin, fmt::format("sink.{}", section), "expected a table");
      if (c.sink.type == SinkType::kPostgres) {
        RETURN_IF_ERROR(ParsePostgresConfig(*sub->as_table(), origin, &c.sink.postgres));
        continue;
      }
      if (c.sink.type == SinkType::kMysql) {
        RETURN_IF_ERROR(ParseMysqlSinkConfig(*sub->as_table(), origin, &c.sink.mysql));
        continue;
      }
      RETURN_IF_ERROR(c.sink.type == SinkType::kKafka ? ParseKafkaConfig(*sub->as_table(), origin, &c.sink.kafka)
                                                      : ParseNatsConfig(*sub->as_table(), origin, &c.sink.nats));
    }
    RETURN_IF_ERROR(GetString(*sink, "sink", "path", &c.sink.path, origin));
    RETURN_IF_ERROR(GetString(*sink, "sink", "checkpoint", &c.sink.checkpoint, origin));
    std::string mode;
    RETURN_IF_ERROR(GetString(*sink, "sink", "file_mode", &mode, origin));
    if (!mode.empty()) {
      // Octal like chmod; the owner must keep read and write, nobody gets execute.
      uint32_t m = 0;
      bool ok = mode.size() <= 4;
      for (char ch : mode) {
        if (ch < '0' || ch > '7') ok = false;
        else m = m * 8 + static_cast<uint32_t>(ch - '0');
      }
      if (!ok || (m & ~0666u) != 0 || (m & 0600u) != 0600u)
        return KeyError(origin, "sink.file_mode",
                        fmt::format("'{}' is not an octal file mode with owner read/write and no "
                                    "execute bits (e.g. \"0600\", \"0640\")",
                                    mode));
      // The replica and the checkpoint hold the source's rows and the position a run resumes
      // from: nobody but the owner may change them (reading is the group's or others' choice).
      if ((m & 022u) != 0)
        return KeyError(origin, "sink.file_mode",
                        fmt::format("'{}' lets the group or others write the replica and the checkpoint (the "
                                    "source's rows and the position a run resumes from); give write to the "
                                    "owner only (e.g. \"0600\", \"0640\", \"0644\")",
                                    mode));
      c.sink.file_mode = m;
    }
    RETURN_IF_ERROR(GetInt(*sink, "sink", "busy_timeout_ms", &c.sink.busy_timeout_ms, 0, 3600000, origin));
    RETURN_IF_ERROR(GetInt(*sink, "sink", "group_max_bytes", &c.sink.group_max_bytes, 1, 1LL << 32, origin));
    RETURN_IF_ERROR(GetInt(*sink, "sink", "group_max_ms", &c.sink.group_max_ms, 0, 60000, origin));
    std::string drop = "keep";
    RETURN_IF_ERROR(GetString(*sink, "sink", "drop_tables", &drop, origin));
    if (drop != "keep" && drop != "drop")
      return KeyError(origin, "sink.drop_tables", fmt::format("'{}' is not one of: keep, drop", drop));
    c.sink.drop_tables = drop == "drop";
    RETURN_IF_ERROR(GetInt(*sink, "sink", "max_buffered_bytes", &c.sink.max_buffered_bytes, 0, 1LL << 40, origin));
  }
  if (const toml::node* n = root.get("metrics")) {
    const toml::table* m = n->as_table();
    if (!m) return KeyError(origin, "metrics", "expected a section");
    RETURN_IF_ERROR(CheckKeys(*m, "metrics", {"listen"}, origin));
    RETURN_IF_ERROR(GetString(*m, "metrics", "listen", &c.metrics.listen, origin));
    if (!c.metrics.listen.empty()) {
      auto colon = c.metrics.listen.rfind(':');
      uint32_t port = 0;
      bool ok = colon != std::string::npos && colon > 0 && colon + 1 < c.metrics.listen.size();
      for (size_t i = colon + 1; ok && i < c.metrics.listen.size(); ++i) {
        char ch = c.metrics.listen[i];
        if (ch < '0' || ch > '9' || port > 65535) ok = false;
        else port = port * 10 + static_cast<uint32_t>(ch - '0');
      }
      if (!ok || port > 65535)
        return KeyError(origin, "metrics.listen",
                        fmt::format("'{}' is not host:port (e.g. \"127.0.0.1:9400\")", c.metrics.listen));
      c.metrics.host = c.metrics.listen.substr(0, colon);
      if (c.metrics.host.size() > 2 && c.metrics.host.front() == '[' && c.metrics.host.back() == ']')
        c.metrics.host = c.metrics.host.substr(1, c.metrics.host.size() - 2);
      c.metrics.port = static_cast<uint16_t>(port);
    }
  }
  if (const toml::node* n = root.get("log")) {
    const toml::table* l = n->as_table();
    if (!l) return KeyError(origin, "log", "expected a section");
    RETURN_IF_ERROR(CheckKeys(*l, "log", {"format", "timestamps", "progress"}, origin));
    std::string format = "text";
    RETURN_IF_ERROR(GetString(*l, "log", "format", &format, origin));
    if (format == "text") c.log.json = false;
    else if (format == "json") c.log.json = true;
    else return KeyError(origin, "log.format", fmt::format("'{}' is not one of: text, json", format));
    RETURN_IF_ERROR(GetBool(*l, "log", "timestamps", &c.log.timestamps, origin));
    std::string progress = "auto";
    RETURN_IF_ERROR(GetString(*l, "log", "progress", &progress, origin));
    if (progress == "auto") c.log.progress = LogConfig::Progress::kAuto;
    else if (progress == "display") c.log.progress = LogConfig::Progress::kDisplay;
    else if (progress == "lines") c.log.progress = LogConfig::Progress::kLines;
    else return KeyError(origin, "log.progress", fmt::format("'{}' is not one of: auto, display, lines", progress));
  }
  if (const toml::node* n = root.get("table")) {
    if (!n->is_table()) return KeyError(origin, "table", "expected sections [table.\"db.table\"]");
    RETURN_IF_ERROR(ParseTableSections(*n->as_table(), origin, &c));
    // Before anything else about the tables (server_id below depends on their modes).
    RETURN_IF_ERROR(CheckSectionsDisjoint(c, origin));
  }
  // Only the binlog stream (mode cdc) needs a replica id. Whether any selected table is cdc
  // depends on the server's tables when a section names another mode: then `sluice check`
  // and `sluice run` refuse a missing id once they know (the "server_id" check line).
  if (!src->get("server_id") &&
      std::none_of(c.tables.begin(), c.tables.end(), [](const TableSection& t) { return t.mode != TableMode::kCdc; }))
    return KeyError(origin, "source.server_id",
                    "missing; pick a replica id unique among the server's replicas (e.g. 5401)");
  if (c.sink.path.empty()) return KeyError(origin, "sink.path", "must not be empty");
  if (c.sink.type == SinkType::kSqlite && c.sink.path == "-")
    return KeyError(origin, "sink.path", "\"-\" (stdout) is only for type = \"jsonl\"");
  if (c.sink.type == SinkType::kJsonl && c.sink.checkpoint.empty()) {
    if (c.sink.path == "-")
      return KeyError(origin, "sink.checkpoint",
                      "required when sink.path = \"-\": where to keep the stream position");
    c.sink.checkpoint = c.sink.path + ".checkpoint";
  }
  return c;
}

Result<Config> LoadConfigFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::InvalidArgument(fmt::format("config file {} is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(
        fmt::format("cannot read config file {}: {}", path, std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

}  // namespace sluice::cli
