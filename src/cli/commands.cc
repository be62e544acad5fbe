#include "cli/commands.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "cli/check.h"
#include "cli/compare.h"
#include "cli/config.h"
#include "cli/decode.h"
#include "cli/process_guard.h"
#include "cli/resnapshot.h"
#include "cli/run.h"
#include "cli/verify.h"
#include "sink/tail.h"
#include "util/log.h"
#include "util/utf8.h"

namespace sluice::cli {
namespace {

// A name or message on a report line of compare/verify: table names come from the source,
// where anyone with CREATE may put a newline or an ESC sequence in one.
std::string Shown(const std::string& s) { return EscapeControls(s); }

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // SIGHUP (the terminal or ssh session closing) stops a run cleanly too, unless it is
  // ignored (`nohup`): then it stays ignored.
  struct sigaction hup {};
  if (sigaction(SIGHUP, nullptr, &hup) == 0 && hup.sa_handler != SIG_IGN) sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// Exit codes (README.md, "Exit codes"): 0 success; 1 an error at run time (server, network,
// sink, privileges); 2 a problem in the config or arguments; 3 the destination cannot be
// continued (the resume position was purged from the server, or the output was truncated):
// a new snapshot into a new destination is needed; 4 `run --until-caught-up` was stopped by
// SIGINT/SIGTERM before it caught up (kInterruptedExit).
constexpr int kInterruptedExit = 4;

int ExitCode(const Status& st) {
  if (st.ok()) return 0;
  switch (st.code()) {
    case StatusCode::kInvalidArgument: return 2;
    case StatusCode::kDataLoss: return 3;
    default: return 1;
  }
}

int Fail(const Status& st) {
  LogError("{}", st.ToString());
  return ExitCode(st);
}

int RunCommand(int argc, char** argv) {
  CLI::App app{"sluice: change data capture from MySQL and MariaDB"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sluice 0.1.0");

  std::string config_path;
  bool until_caught_up = false;
  bool quiet = false;
  bool allow_core_dumps = false;
  auto* run = app.add_subcommand("run", "Snapshot the selected tables, then stream the binlog into the sink");
  run->add_option("--config", config_path, "TOML config file")->required();
  run->add_flag("--until-caught-up", until_caught_up,
                "Stop once everything up to the server's binlog end when streaming starts (after any snapshot) is in the "
                "sink (exit code 4 when SIGINT/SIGTERM stops it before)");
  run->add_flag("-q,--quiet", quiet, "Log warnings and errors only");
  run->add_flag("--allow-core-dumps", allow_core_dumps,
                "Keep core dumps enabled (they can contain the source password)");

  auto* check = app.add_subcommand("check", "Check the server, the user and the sink against every requirement, "
                                               "one PASS/WARN/FAIL line each (exit 0: all pass)");
  check->add_option("--config", config_path, "TOML config file")->required();
  check->add_flag("--allow-core-dumps", allow_core_dumps,
                  "Keep core dumps enabled (they can contain the source password)");

  auto* compare = app.add_subcommand("compare", "Compare the replica (SQLite, PostgreSQL, MySQL/MariaDB) with the source, table by table");
  compare->add_option("--config", config_path, "TOML config file")->required();
  compare->add_flag("--allow-core-dumps", allow_core_dumps,
                    "Keep core dumps enabled (they can contain the source password)");

  std::vector<std::string> verify_tables;
  VerifyOptions verify_opts;
  auto* verify = app.add_subcommand(
      "verify", "Check that the SQLite replica equals the source (range checksums, differing rows by key); "
                "safe while a run streams into it");
  verify->add_option("--config", config_path, "TOML config file")->required();
  verify->add_option("--tables", verify_tables, "db.table globs to verify (default: source.tables)");
  verify->add_option("--chunk-rows", verify_opts.chunk_rows, "Keys per checksummed range")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
  verify->add_option("--rounds", verify_opts.rounds, "Re-reads of a differing row before it is reported")
      ->check(CLI::Range(1, 100));
  verify->add_option("--settle-seconds", verify_opts.settle_seconds,
                     "Longest wait per re-read for a streaming replica to catch up with the source")
      ->check(CLI::Range(0.0, 3600.0));
  verify->add_flag("--allow-core-dumps", allow_core_dumps,
                   "Keep core dumps enabled (they can contain the source password)");

  std::vector<std::string> resnapshot_tables;
  auto* resnapshot = app.add_subcommand(
      "resnapshot", "Re-read tables (db.table) of an existing pipeline from the source: a running run does it "
                    "within seconds, otherwise the next run");
  resnapshot->add_option("--config", config_path, "TOML config file")->required();
  resnapshot->add_option("tables", resnapshot_tables, "Tables to re-read, as db.table")->required();
  resnapshot->add_flag("--allow-core-dumps", allow_core_dumps,
                       "Keep core dumps enabled (they can contain the source and destination passwords)");
  bool follow = false;
  auto* tail = app.add_subcommand("tail", "Print what a kafka or nats sink published, as JSON lines");
  tail->add_option("--config", config_path, "TOML config file")->required();
  tail->add_flag("-f,--follow", follow, "Keep waiting for new records (until SIGINT/SIGTERM)");
  tail->add_flag("--allow-core-dumps", allow_core_dumps,
                 "Keep core dumps enabled (they can contain the passwords of the config)");

  DecodeOptions decode_opts;
  auto* decode = app.add_subcommand("decode", "Print the events of binlog files as JSON lines");
  decode->add_option("files", decode_opts.files, "Binlog files")->required()->check(CLI::ExistingFile);
  decode->add_flag("--rows", decode_opts.rows, "Print row changes (one JSON object per row) instead of events");
  decode->add_option("--start-position", decode_opts.start_position, "Skip events before this offset")
      ->check(CLI::NonNegativeNumber);
  decode->add_option("--stop-position", decode_opts.stop_position, "Stop at the first event at or after this offset")
      ->check(CLI::NonNegativeNumber);
  decode->add_flag("--summary", decode_opts.summary, "Print counts per event type and per table");
  decode->add_flag("--no-output", decode_opts.no_output,
                   "Decode every event and row value but print nothing (benchmarking)");
  decode->add_option("--max-event-size", decode_opts.max_event_size,
                     "Largest event inside a TRANSACTION_PAYLOAD to decode, in bytes (default and maximum 1 GiB)")
      ->check(CLI::Range(uint64_t{19}, uint64_t{1} << 30));

  // A first word that names no command: CLI11 would say only "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "sluice: unknown command '%s'; the commands are: %s (sluice --help describes them)\n",
                   argv[1], names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (quiet) SetLogLevel(LogLevel::kWarning);
  // Every command that loads a config has the passwords it names (source, destination) in
  // memory from here on: no core file may carry them. Told by the --config option, so that a
  // new command cannot be forgotten here.
  bool loads_config = false;
  for (const CLI::App* sub : app.get_subcommands())
    loads_config = loads_config || sub->get_option_no_throw("--config") != nullptr;
  if (loads_config && !allow_core_dumps) {
    Status st = DisableCoreDumps();
    if (!st.ok()) return Fail(st);
  }

  if (*run) {
    auto config = LoadConfigFile(config_path);
    if (!config.ok()) return Fail(config.status());
    RestrictFileMode(static_cast<mode_t>(config->sink.file_mode));
    SetLogJson(config->log.json);
    SetLogTimestamps(config->log.timestamps);
    InstallStopHandlers();
    RunOptions opts;
    opts.until_caught_up = until_caught_up;
    opts.stop = &g_stop;
    auto end = RunPipeline(*config, opts);
    if (!end.ok()) return Fail(end.status());
    // A plain run ends only by a signal: that is its normal stop. A script running
    // --until-caught-up has to tell "caught up" from "interrupted".
    if (until_caught_up && *end == RunEnd::kStopped) {
      LogWarning("interrupted by a signal before catching up (exit code {}): what was committed is kept; run "
                 "again to continue",
                 kInterruptedExit);
      return kInterruptedExit;
    }
    return 0;
  }
  if (*check) {
    auto config = LoadConfigFile(config_path);
    if (!config.ok()) return Fail(config.status());
    return RunCheckCommand(*config, stdout);
  }
  if (*compare) {
    auto config = LoadConfigFile(config_path);
    if (!config.ok()) return Fail(config.status());
    if (config->sink.type != SinkType::kSqlite && config->sink.type != SinkType::kMysql &&
        config->sink.type != SinkType::kPostgres)
      return Fail(Status::InvalidArgument("compare works with sink.type = \"sqlite\", \"mysql\" or \"postgres\" only"));
    const TableFilter filter{config->source.tables, config->source.exclude};
    std::vector<std::string> unmatched;
    auto result = config->sink.type == SinkType::kMysql
                      ? CompareTablesMysql(SourceConnectOptions(config->source), filter, config->sink.mysql, &unmatched)
                  : config->sink.type == SinkType::kPostgres
                      ? CompareTablesPostgres(SourceConnectOptions(config->source), filter, config->sink.postgres,
                                              &unmatched)
                      : CompareTables(SourceConnectOptions(config->source), filter, config->sink.path, &unmatched);
    if (!result.ok()) return Fail(result.status());
    // A pattern that selects nothing (its database emptied, or not filled yet) is said, not
    // held against the replica: the tables that exist are compared.
    for (const std::string& m : unmatched) std::printf("  WARNING: %s: nothing to compare for it\n", Shown(m).c_str());
    size_t equal = 0;
    for (const auto& t : *result) {
      if (t.equal()) {
        ++equal;
        std::printf("  %-40s %8llu rows  equal\n", Shown(t.table).c_str(),
                    static_cast<unsigned long long>(t.source_rows));
      } else {
        std::printf("  %-40s DIFFERENT: source %llu rows, replica %llu; %llu missing, %llu extra, "
                    "%llu differing\n",
                    Shown(t.table).c_str(), static_cast<unsigned long long>(t.source_rows),
                    static_cast<unsigned long long>(t.replica_rows),
                    static_cast<unsigned long long>(t.missing), static_cast<unsigned long long>(t.extra),
                    static_cast<unsigned long long>(t.differing));
        for (const auto& ex : t.examples) std::printf("      %s\n", Shown(ex).c_str());
      }
    }
    bool all = equal == result->size();
    std::printf("%s: %zu of %zu tables in the replica match the source\n", all ? "OK" : "MISMATCH",
                equal, result->size());
    return all ? 0 : 1;
  }
  if (*verify) {
    auto config = LoadConfigFile(config_path);
    if (!config.ok()) return Fail(config.status());
    if (config->sink.type != SinkType::kSqlite)
      return Fail(Status::InvalidArgument(
          "verify checks SQLite destinations only (sink.type = \"sqlite\"): JSON lines, Kafka and NATS carry "
          "changes, not tables, so there is nothing to compare row by row, and PostgreSQL and MySQL/MariaDB "
          "destinations are checked with `sluice compare`"));
    verify_opts.source = SourceConnectOptions(config->source);
    verify_opts.filter = TableFilter{verify_tables.empty() ? config->source.tables : verify_tables,
                                     config->source.exclude};
    verify_opts.sqlite_path = config->sink.path;
    auto result = VerifyTables(verify_opts);
    if (!result.ok()) return Fail(result.status());
    size_t equal = 0, copying = 0, not_streamed = 0;
    for (const auto& t : *result) {
      if (!t.not_streamed.empty()) {
        ++not_streamed;
        std::printf("  %-40s %s\n", Shown(t.table).c_str(), Shown(t.not_streamed).c_str());
        continue;
      }
      if (!t.copying.empty()) {
        ++copying;
        std::printf("  %-40s %s: not verified; run verify again once it is copied\n", Shown(t.table).c_str(),
                    Shown(t.copying).c_str());
        continue;
      }
      if (t.equal()) {
        ++equal;
        std::printf("  %-40s %10llu rows  equal (%llu ranges%s)\n", Shown(t.table).c_str(),
                    static_cast<unsigned long long>(t.source_rows), static_cast<unsigned long long>(t.ranges),
                    t.candidates == 0 ? ""
                                      : fmt::format("; {} rows differed in passing and matched when re-read",
                                                    t.candidates).c_str());
        continue;
      }
      if (!t.problem.empty()) {
        std::printf("  %-40s DIFFERENT: %s\n", Shown(t.table).c_str(), Shown(t.problem).c_str());
        continue;
      }
      const std::string unchecked =
          t.unchecked == 0 ? "" : fmt::format(", and {} more differed in the first pass (past the limit of rows re-read)",
                                              t.unchecked);
      std::printf("  %-40s DIFFERENT: source %llu rows, replica %llu; %llu of %llu ranges differed; %llu rows "
                  "differ persistently%s\n",
                  Shown(t.table).c_str(), static_cast<unsigned long long>(t.source_rows),
                  static_cast<unsigned long long>(t.replica_rows), static_cast<unsigned long long>(t.differing_ranges),
                  static_cast<unsigned long long>(t.ranges),
                  static_cast<unsigned long long>(t.differing - t.unchecked), unchecked.c_str());
      for (const auto& r : t.rows) std::printf("      %s\n", Shown(r).c_str());
    }
    // A table being copied, or read without the binlog, is neither a match nor a difference:
    // the verdict is about the others. With no table verified at all there is no verdict
    // (exit code 3), never an "OK" about nothing.
    const bool all = equal + copying + not_streamed == result->size();
    std::string skipped;
    if (copying > 0) skipped += fmt::format("; {} being copied, not verified", copying);
    if (not_streamed > 0) skipped += fmt::format("; {} read without the binlog, not verified", not_streamed);
    if (all && equal == 0 && !result->empty()) {
      std::printf("NOT VERIFIED: none of the %zu tables could be verified%s\n", result->size(), skipped.c_str());
      return 3;
    }
    std::printf("%s: %zu of %zu tables in the replica match the source%s\n", all ? "OK" : "MISMATCH", equal,
                result->size(), skipped.c_str());
    return all ? 0 : 1;
  }
  if (*resnapshot) {
    auto config = LoadConfigFile(config_path);
    if (!config.ok()) return Fail(config.status());
    std::string outcome;
    Status st = RequestResnapshot(*config, resnapshot_tables, &outcome);
    if (!st.ok()) return Fail(st);
    std::printf("%s\n", Shown(outcome).c_str());
    return 0;
  }
  if (*tail) {
    auto config = LoadConfigFile(config_path);
    if (!config.ok()) return Fail(config.status());
    InstallStopHandlers();
    Status st;
    if (config->sink.type == SinkType::kKafka) {
      st = TailKafka(config->sink.kafka, follow, &g_stop, stdout);
    } else if (config->sink.type == SinkType::kNats) {
      st = TailNats(config->sink.nats, follow, &g_stop, stdout);
    } else {
      st = Status::InvalidArgument("tail works with sink.type = \"kafka\" or \"nats\"");
    }
    return st.ok() ? 0 : Fail(st);
  }
  if (*decode) {
    if (decode_opts.stop_position != 0 && decode_opts.start_position > decode_opts.stop_position) {
      return Fail(Status::InvalidArgument(fmt::format("--start-position {} is after --stop-position {}",
                                                      decode_opts.start_position, decode_opts.stop_position)));
    }
    Status st = RunDecode(decode_opts, std::cout);
    return st.ok() ? 0 : Fail(st);
  }
  return 2;
}

}  // namespace

// No exception leaves a command: the library reports errors as Status, and anything thrown
// (a third-party library, an allocation failure) ends the command here with exit code 1
// and a message, never with std::terminate.
int Main(int argc, char** argv) {
  try {
    return RunCommand(argc, argv);
  } catch (const std::bad_alloc&) {
    LogError("out of memory");
  } catch (const std::exception& e) {
    LogError("internal error: {} (please report this with the command line that caused it)", e.what());
  } catch (...) {
    LogError("internal error: unknown exception (please report this with the command line that caused it)");
  }
  return 1;
}

}  // namespace sluice::cli
