// Config: the TOML configuration of `sluice run`, validated.
//
// File format (docs/config.md has the full reference):
//   [source]   host, port, user, password_env, server_id, tables, exclude,
//              heartbeat_seconds, connect_timeout_seconds,
//              tls ("disabled" | "preferred" (default) | "required" | "verify_ca" |
//              "verify_identity"), ca, cert, key (PEM files), allow_cleartext_auth
//              reconnect_timeout_seconds (0 = keep reconnecting; default 0)
//   [snapshot] mode = "initial" | "never", workers, chunk_rows, fetch_rows,
//              max_ranges_per_table, exact_count_max_rows, parallel, consistency = "exact",
//              watermark_table, watermark_server_id
//   [sink]     type = "sqlite" | "jsonl" | "kafka" | "nats" | "mysql" | "postgres", path, checkpoint (jsonl to
//              stdout only), file_mode (octal string, default "0600": the most any created
//              file gets; group/other write refused); [sink.kafka] / [sink.nats] (cli/publish_config.h),
//              [sink.mysql] (cli/mysql_sink_config.h), [sink.postgres] (cli/postgres_config.h)
//              busy_timeout_ms (sqlite: wait this long for another connection's lock
//              before retrying the transaction; default 10000), group_max_bytes (default
//              33554432), group_max_ms (default 200): group commit budgets;
//              max_buffered_bytes (default 268435456; 0: none): memory cap of change data
//   [metrics]  listen = "host:port" (Prometheus endpoint; absent: none)
//   [log]      format = "text" | "json", timestamps = true | false, progress = "auto" | "display" | "lines"
//   [table."db.table"]  per-table mode, write policy, cursor, lookback, max_rows
//              (cli/table_config.h, docs/incremental.md)
// Unknown sections or keys, wrong types, out-of-range values, a NUL character in any string
// and an empty *_env key are kInvalidArgument naming the key ("source.port: expected an
// integer in 1..65535"). Passwords and other secrets are read from the environment variables
// named by the *_env keys, never from the file (a conninfo, NATS url or Kafka property holding
// one is refused), and are never printed: Config has no ToString that includes them.
// Thread safety: plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mysql/connection.h"
#include "sink/kafka_sink.h"
#include "sink/nats_sink.h"
#include "sink/mysql_sink.h"
#include "sink/postgres_sink.h"
#include "snapshot/incremental.h"
#include "util/status.h"

namespace sluice::cli {

struct SourceConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 3306;
  std::string user = "root";
  std::string password_env;  // name of the environment variable holding the password
  std::string password;      // filled from password_env at load time; never logged
  uint32_t server_id = 0;
  std::vector<std::string> tables;   // "db.table" globs
  std::vector<std::string> exclude;  // "db.table" globs
  uint32_t heartbeat_seconds = 1;
  uint32_t connect_timeout_seconds = 10;
  TlsMode tls = TlsMode::kPreferred;
  std::string ca, cert, key;  // PEM files; checked readable at load time
  bool allow_cleartext_auth = false;
  // Give up after this long without a working replication connection; 0 = never.
  uint32_t reconnect_timeout_seconds = 0;
};

enum class SnapshotMode { kInitial, kNever };
enum class SinkType { kSqlite, kJsonl, kKafka, kNats, kMysql, kPostgres };

struct SnapshotConfig {
  SnapshotMode mode = SnapshotMode::kInitial;
  uint32_t workers = 4;                 // parallel read connections
  uint32_t chunk_rows = 100000;         // about this many rows per planned key range
  uint32_t fetch_rows = 5000;           // rows per fetch and per sink transaction
  uint32_t max_ranges_per_table = 64;
  uint64_t exact_count_max_rows = 1000000;  // COUNT(*) below this optimizer estimate
  bool parallel = true;                 // false: every table in one pass by one worker
  // Assumed copy rate, only to estimate how long a snapshot takes (binlog retention check).
  uint32_t expected_rows_per_second = 20000;
  // db.table globs of tables without a consistent read (MyISAM, Aria, MEMORY...) that may be
  // copied anyway (coordinator.h CheckSnapshotTable); empty: none.
  std::vector<std::string> allow_inconsistent_read;
  // consistency = "watermark" (snapshot/watermark.h); false: "exact".
  bool watermark = false;
  std::string watermark_table = "sluice.watermarks";  // the signal table, "db.table"
  uint32_t watermark_server_id = 0;  // replica id of the window reads; 0: source.server_id + 1
};

struct SinkConfig {
  SinkType type = SinkType::kSqlite;
  std::string path = "replica.db";
  std::string checkpoint;  // jsonl: checkpoint file (default "<path>.checkpoint"; required for "-")
  uint32_t file_mode = 0600;  // permission bits of every file sluice creates (umask)
  KafkaSinkOptions kafka;  // type = "kafka": the [sink.kafka] table (cli/publish_config.h)
  NatsSinkOptions nats;    // type = "nats": the [sink.nats] table
  MysqlSinkOptions mysql;  // type = "mysql": the [sink.mysql] table (cli/mysql_sink_config.h)
  PostgresSinkOptions postgres;  // type = "postgres": the [sink.postgres] table
  uint32_t busy_timeout_ms = 10000;  // sqlite: lock wait per attempt
  // Group commit budgets: one sink transaction takes the source transactions that are
  // ready, up to this many bytes of changes or this many ms.
  size_t group_max_bytes = 32u << 20;
  uint32_t group_max_ms = 200;
  // sqlite: a table dropped in the source (or renamed out of source.tables) is dropped in the
  // replica too ("drop"), or kept with its rows ("keep", the default).
  bool drop_tables = false;
  size_t max_buffered_bytes = 256u << 20;  // memory cap of buffered change data; 0: none
};

// [metrics]: an optional Prometheus endpoint. Empty listen: none.
struct MetricsConfig {
  std::string listen;  // "host:port" as written
  std::string host;    // parsed from listen ("[::1]" loses its brackets)
  uint16_t port = 0;   // 0 with a listen port of 0: any free port (logged)
};

// [log]: format = "text" | "json" (one JSON object per line); timestamps = true (text lines
// begin with the UTC time) | false; progress = "auto" (a live display when stderr is a
// terminal, status lines otherwise) | "display" | "lines".
struct LogConfig {
  enum class Progress { kAuto, kDisplay, kLines };
  bool json = false;
  bool timestamps = true;
  Progress progress = Progress::kAuto;
};

// [table."db.table"]: how the tables a glob matches are read (cli/table_config.h).
struct TableSection {
  std::string pattern;  // db.table glob
  std::string key;      // table."pattern", for messages
  TableMode mode = TableMode::kCdc;
  WritePolicy write = WritePolicy::kUpsert;
  std::string cursor;
  std::string cursor_time_zone;  // empty: the server's time zone
  uint32_t lookback_seconds = 0;
  uint64_t max_rows = 0;
};

struct Config {
  SourceConfig source;
  SnapshotConfig snapshot;
  SinkConfig sink;
  MetricsConfig metrics;
  LogConfig log;
  std::vector<TableSection> tables;
};

// Parses and validates TOML text. `origin` names the file in error messages.
Result<Config> ParseConfig(std::string_view toml_text, std::string_view origin);
// Reads and parses a config file.
Result<Config> LoadConfigFile(const std::string& path);

}  // namespace sluice::cli
