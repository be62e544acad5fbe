// Preflight checks: `sluice check --config FILE`, and the same checks at the start of
// `sluice run`.
//
// Every requirement is one line (CheckLine): its outcome, what was seen, and the fix.
//   PASS  fine.
//   WARN  sluice can run, but something costs exactness, safety or speed (row image not FULL,
//         TLS off under "preferred", a snapshot expected to outlast binlog retention, ...).
//   FAIL  wrong. A line marked `fatal` means a run could not finish (no binlog, binlog_format
//         not ROW, a missing privilege, the resume position purged, an unwritable sink): `run`
//         refuses to start. Non-fatal FAIL lines are logged as warnings by `run`.
// `check` exits 0 when every line passes, 1 otherwise (2 for a bad config, as every command).
//
// Facts come from the server without changing anything: @@version, SHOW GLOBAL VARIABLES,
// SHOW GRANTS and probe queries (mysql/server_probe.h), information_schema.TABLES/COLUMNS
// (engines, row estimates, declared column sizes), SHOW SLAVE HOSTS (replica ids in use),
// SHOW BINARY LOGS (retention); from the sink: its directory and lock file, and its stored
// checkpoint read without opening it for writing. A MySQL sink on the source server itself
// whose databases are captured is not opened at all (that would create its bookkeeping
// tables there).
// EvaluateServer / EvaluateRetention are pure (unit-tested on hand-made facts).
// Thread safety: free functions.
#pragma once

#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "cli/config.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "mysql/server_probe.h"
#include "stream/resume.h"
#include "util/status.h"

namespace sluice::cli {

enum class CheckOutcome { kPass, kWarn, kFail };

struct CheckLine {
  std::string name;  // "binlog_format", "REPLICATION SLAVE privilege", ...
  CheckOutcome outcome = CheckOutcome::kPass;
  bool fatal = false;  // with kFail: `run` refuses to start
  std::string detail;
  std::string fix;  // empty when passed
  StatusCode code = StatusCode::kFailedPrecondition;  // the error `run` returns (kDataLoss: purged)
};

struct TableFacts {
  TableName name;
  std::string engine;       // information_schema.TABLES.ENGINE
  uint64_t rows = 0;        // exact when below snapshot.exact_count_max_rows (and counted), else the estimate
  uint64_t largest_row = 0; // bytes: declared sizes, LOB columns measured (see check.cc)
  bool lob_unmeasured = false;  // LOB columns of a table too large to measure
  // MariaDB "long unique" indexes (UNIQUE on a BLOB/TEXT column, or USING HASH): the server
  // logs a hidden hash column per index in every row, which the stream does not map.
  std::vector<std::string> long_unique;
};

struct SourceFacts {
  std::string endpoint;  // host:port
  ServerInfo info;
  uint64_t max_allowed_packet = 0;
  double expire_seconds = 0;  // binlog retention; 0: never expire
  std::vector<ServerCheck> privileges;
  std::vector<TableFacts> tables;
  bool replica_hosts_known = false;
  std::vector<std::pair<uint32_t, std::string>> replica_hosts;  // server_id, host
  std::string replica_hosts_error;
  // Hosts listed with source.server_id that name a sluice process on this machine which is
  // still running (not this one): another run holds the id (SluicePidOf, mysql/replication.h).
  std::vector<std::string> replica_hosts_running;
  // source.exclude patterns that match no table the user can see (a typo leaves the table it
  // meant captured).
  std::vector<std::string> unmatched_excludes;
  // Whether replica_hosts was asked again until source.server_id left it (settle_replica_ids).
  bool replica_ids_settled = false;
  std::vector<std::pair<std::string, uint64_t>> binlogs;  // SHOW BINARY LOGS
  bool binlogs_known = false;
  // What the server holds at the checkpoint's position (AddResumeHistory): set when the
  // checkpoint belongs to this server and has a position; the resume position line checks it
  // for a reset history (stream/resume.h CheckHistoryHolds).
  std::optional<HistoryFacts> resume_history;
  std::string tls_description;  // empty: no TLS
  // The message of each source.tables pattern that selects no table (ListTables' words): the
  // first is the error a first run stops with.
  std::vector<std::string> unmatched_patterns;
  // Foreign keys whose rows change by cascade (ON DELETE/UPDATE CASCADE, SET NULL, SET
  // DEFAULT), for each selected child table: "db.child (constraint: ON DELETE CASCADE from
  // db.parent)". InnoDB carries them out and the binlog does not hold them.
  std::vector<std::string> fk_cascades;
  // Prepared XA transactions (XA RECOVER: their data column); empty when none or not readable.
  std::vector<std::string> prepared_xa;
};

// Reads the facts over an open connection. Network errors are returned; refusals become facts.
// exact_counts: COUNT(*) the tables whose estimate is below snapshot.exact_count_max_rows
// (`sluice check`); without it TableFacts.rows is the optimizer's estimate (`sluice run`, which
// starts this way on every restart: the counts read every such table in full, 0.1 s per
// 100,000 rows, for a snapshot-time estimate that only warns, and the snapshot's planner counts
// what it copies).
// settle_replica_ids: when SHOW SLAVE HOSTS lists source.server_id, ask again for up to 3 s (a
// run stopped a moment ago stays listed for 1-2 s; `sluice check`). `sluice run` does not wait:
// it only warns, and a restart must not take 3 s longer (or reach the sink lock later).
Result<SourceFacts> GatherSourceFacts(Connection& conn, const Config& config, bool exact_counts = true,
                                      bool settle_replica_ids = true);

// Fills facts->resume_history for `checkpoint` when it has a position and names this server
// (its server_id, or none: an older checkpoint). Network errors are returned; a refused
// query leaves the fact unknown.
Status AddResumeHistory(Connection& conn, const std::optional<Checkpoint>& checkpoint, SourceFacts* facts);

// Whether a run of `config` reads the binlog: some selected table (of `facts`) is in mode cdc,
// or the modes are unknown (no table found, sections that clash).
bool NeedsBinlog(const SourceFacts& facts, const Config& config);

// The server lines: flavor/version, log_bin, binlog_format, binlog_row_image,
// binlog_row_metadata, GTID, privileges (one line each), table engines, server_id, TCP, TLS,
// max_allowed_packet.
std::vector<CheckLine> EvaluateServer(const SourceFacts& facts, const Config& config);

// The retention lines: the checkpoint's resume position against the binlogs the server has
// and its age against binlog_expire_logs_seconds; and the expected snapshot time against the
// retention. `checkpoint_age_seconds`: time since the sink last committed (nullopt: unknown).
std::vector<CheckLine> EvaluateRetention(const SourceFacts& facts, const Config& config,
                                         const std::optional<Checkpoint>& checkpoint,
                                         std::optional<double> checkpoint_age_seconds);

// One line per table of mode incremental, full or snapshot_only (cli/table_config.h): FAIL
// without a primary key or a usable cursor (the message names the candidates), WARN when no
// index begins with the cursor and the primary key (fix: the CREATE INDEX; detail: the EXPLAIN
// of the paging query), else PASS.
std::vector<CheckLine> EvaluateIncremental(Connection& conn, const SourceFacts& facts, const Config& config);

// The sink line (reachable and writable) plus, for a sink with a stored checkpoint, the
// checkpoint and its age. A file sink is only read: never created, its lock never taken. A
// MySQL or PostgreSQL sink is opened as the run opens it (the connection, its bookkeeping
// tables, its one-writer lock, released at once), so an unreachable server or a running run
// fails the line; its checkpoint is read from the destination.
struct SinkFacts {
  CheckLine line;
  std::optional<Checkpoint> checkpoint;
  std::optional<double> checkpoint_age_seconds;
  uint64_t max_allowed_packet = 0;  // a MySQL/MariaDB destination's, bytes (0: not one, or unknown)
  int lower_case_table_names = 0;   // a MySQL/MariaDB destination's (0: not one, unknown, or names keep their case)
};
SinkFacts CheckSink(const Config& config);
// "sink max_allowed_packet", for a MySQL/MariaDB destination: FAIL when a statement holding
// the largest row (TableFacts::largest_row, plus room for the statement) is over the
// destination's max_allowed_packet: the run would stop on that row with [1153].
std::optional<CheckLine> EvaluateSinkPacket(const SourceFacts& f, const SinkFacts& sink);
// An SQLite file without a checkpoint that already holds captured tables: FAIL when one's
// columns differ from the source's (the run's PrepareTable would refuse it, same text), PASS
// when they all match; nothing otherwise.
std::optional<CheckLine> EvaluateSqliteTables(Connection& conn, const SourceFacts& f, const Config& config,
                                              const SinkFacts& sink);

// "sink table names": a FAIL (the run's own error, cli/run.h CheckNameCollisions) when two
// selected tables would share one sink table (`sink`: a MySQL destination's
// lower_case_table_names); nothing when they do not.
std::optional<CheckLine> EvaluateSinkNames(const SourceFacts& facts, const Config& config, const SinkFacts& sink);
// "sink name lengths": a FAIL (the run's own error, cli/run.h CheckSinkNameLengths) when the
// sink would cut a name a selected table becomes there (PostgreSQL: over 63 bytes), a WARN
// when the column names cannot be read (`source`: the source connection); nothing otherwise.
std::optional<CheckLine> EvaluateSinkNameLengths(Connection& source, const SourceFacts& facts, const Config& config);
// "sink server", for a MySQL destination that is the source server itself (SameServer,
// mysql/server_probe.h; `source` connected to the source): a FAIL (fatal; the run's own error,
// cli/run.h CheckSelfDestination) when a database sluice would write there is captured, else a
// PASS naming those databases. Nothing for another server, or when the destination cannot be
// reached (the sink line says so); a WARN when the question cannot be asked.
std::optional<CheckLine> EvaluateSinkServer(Connection& source, const Config& config);
// "source.tables": for each pattern that selects no table, a FAIL (fatal) before the first run,
// which refuses it in the same words, or a WARN on an existing pipeline (`checkpoint`), which
// goes on; nothing when every pattern selects a table.
std::vector<CheckLine> EvaluatePatterns(const SourceFacts& facts, const std::optional<Checkpoint>& checkpoint);
// The fix line for a source connection that failed with `message`: for a TLS refusal (the
// server offers no TLS, a certificate that fails verification) what fits it, else where to
// look for a connection refused (host, port, listening on TCP, user and password).
std::string ConnectFailureFix(const SourceConfig& source, std::string_view message);
// `sluice check`: all lines, printed to `out` as they are, one per requirement. Returns the
// exit code (0 all pass, 1 otherwise).
int RunCheckCommand(const Config& config, std::FILE* out);

// For `sluice run`: OK, or the first fatal line's code with every fatal line in the message.
// Non-fatal failures and warnings are logged.
Status RefuseOnFatal(const std::vector<CheckLine>& lines);

const char* OutcomeName(CheckOutcome o);

}  // namespace sluice::cli
