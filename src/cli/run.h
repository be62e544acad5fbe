// RunPipeline: `sluice run`. Probes the server, opens the sink, loads its checkpoint, takes
// (or resumes) the initial snapshot, then streams the binlog from the snapshot point.
// See docs/design.md for why the hand-off has no gap and no duplicate, and how a run
// killed at any moment resumes.
// Errors: the first Status that stops the run (config problems are caught earlier, in
// config.cc). Stops cleanly (OK, RunEnd::kStopped) when *stop becomes true.
#pragma once

#include <atomic>
#include <vector>

#include "cli/config.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "sink/sink.h"
#include "util/status.h"

namespace sluice::cli {

struct RunOptions {
  bool until_caught_up = false;
  const std::atomic<bool>* stop = nullptr;
};

// How a run that returned OK ended.
enum class RunEnd {
  // It did what it was asked: --until-caught-up, everything up to the binlog's end (read
  // after any snapshot) is in the sink; a run of only incremental/full/snapshot_only tables
  // read them all.
  kDone,
  // *stop (SIGINT/SIGTERM) ended it first: a streaming run's normal end, an --until-caught-up
  // run's interruption (`sluice run` exits 4 then). What was committed is kept.
  kStopped,
};

Result<RunEnd> RunPipeline(const Config& config, const RunOptions& options);

// Opens the configured sink.
Result<std::unique_ptr<Sink>> OpenSink(const SinkConfig& config);
// Connection options for the configured source.
ConnectOptions SourceConnectOptions(const SourceConfig& source);
// kInvalidArgument (a configuration error) when two of `tables` would share one table in the
// sink: case-insensitively equal names in SQLite, or two source databases mapped onto one
// PostgreSQL schema (sink.postgres.schemas) / MySQL database (sink.mysql.databases) that both
// hold a table of one name; for Kafka and NATS, two tables whose topics/subjects are one
// (sink/kafka_sink.h KafkaTopicFor, sink/nats_sink.h NatsSubjectFor) or a table topic that is
// one of sluice's own Kafka topics; for a MySQL destination whose
// `mysql_lower_case_table_names` (its @@lower_case_table_names) is 1 or 2, names that differ
// only in case. The message names both source tables, the shared name and the key.
Status CheckNameCollisions(const std::vector<TableName>& tables, const SinkConfig& sink,
                           int mysql_lower_case_table_names = 0);
// kInvalidArgument (a configuration error) when the sink would cut a name one of `tables`
// becomes there, so that two names could become one (PostgreSQL keeps 63 bytes of a name:
// sink/postgres_sink.h CheckPostgresNames): its schema, its table name, or a column's (read
// from information_schema.COLUMNS on `source`). Other sinks keep every name: OK. The message
// names the table, the name, its length and the limit; kUnavailable etc. when the query fails.
Status CheckSinkNameLengths(Connection& source, const std::vector<TableName>& tables, const SinkConfig& sink);
// A database a MySQL sink writes into: the copy of the source databases `sources` (the
// destination database of each source.tables pattern naming its database literally, through
// sink.mysql.databases, else the same name) and/or sink.mysql.database (`bookkeeping`).
struct MysqlSinkDatabase {
  std::string name;
  std::vector<std::string> sources;
  bool bookkeeping = false;
};
// Those of `config`, sorted by name.
std::vector<MysqlSinkDatabase> MysqlSinkDatabases(const Config& config);
// For a MySQL destination that is the source server itself (SameServer, mysql/server_probe.h;
// `destination` and `source` describe both addresses, `evidence` how it was found):
// kInvalidArgument (a configuration
// error, exit code 2) when a table sluice writes there could be a captured source table, i.e.
// when a source.tables pattern's database part matches one of MysqlSinkDatabases (ASCII case
// ignored) or has a wildcard (it may select a database created later, which keeps its name
// unless mapped, so it would be copied onto itself). sluice would write the source's own
// tables and read its writes back from the binlog, again and again. The message names the
// server, the destination database and the pattern, and the fix. OK otherwise: copying
// database a into database b of the same server is fine when no pattern captures b.
Status CheckSelfDestination(const Config& config, std::string_view destination, std::string_view source,
                            std::string_view evidence);
// SameServer on `source` and `destination` (connected to config.sink.mysql), then
// CheckSelfDestination when they are one server (logging the databases written there when
// that is allowed). For `run` before it opens the sink, and `resnapshot` before it writes
// the destination's checkpoint.
Status RefuseSelfDestination(const Config& config, Connection& source, const ConnectOptions& source_options,
                             Connection& destination);

}  // namespace sluice::cli
