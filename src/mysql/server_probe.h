// Server probe: what kind of server we talk to and whether it can feed sluice.
//
// ProbeServer reads, over an open Connection:
//   flavor/version  SELECT @@version (MariaDB if it contains "MariaDB")
//   settings        SHOW GLOBAL VARIABLES for server_id, log_bin, binlog_format,
//                   binlog_row_image, binlog_row_metadata, binlog_checksum, and the GTID
//                   settings (MariaDB: gtid_binlog_pos, gtid_strict_mode, gtid_domain_id;
//                   MySQL: gtid_mode, gtid_executed). A variable the server does not have
//                   stays empty (e.g. binlog_row_metadata before MySQL 8.0.1 / MariaDB 10.5).
//   position        the current binlog position (ReadBinlogPosition).
// CheckReplicationReady turns the settings into kFailedPrecondition errors a person can act
// on (log_bin off, binlog_format not ROW) and warnings (row image not FULL, row metadata not
// FULL, MySQL gtid_mode off).
// CheckPrivileges runs the access checks sluice needs before a snapshot, as a list of named
// checks (pass/fail, what was seen, the fix) that a `sluice check` command can print as they
// are; FailedChecks turns the failed ones into one kFailedPrecondition.
// SameServer tells whether two sessions are on one server, whatever address each used.
// Thread safety: free functions over a Connection the caller uses from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/position.h"
#include "mysql/connection.h"
#include "util/status.h"

namespace sluice {

struct ServerInfo {
  Flavor flavor = Flavor::kUnknown;
  std::string version;  // @@version, e.g. "10.11.19-MariaDB-0+deb12u1", "8.0.36"
  uint32_t version_major = 0, version_minor = 0, version_patch = 0;
  uint32_t server_id = 0;
  bool log_bin = false;
  std::string binlog_format;        // "ROW", "MIXED", "STATEMENT" (upper case as the server says)
  std::string binlog_row_image;     // "FULL", "MINIMAL", "NOBLOB", "FULL_NODUP"
  std::string binlog_row_metadata;  // "FULL", "MINIMAL", "NO_LOG"; empty if unsupported
  std::string binlog_checksum;      // "CRC32" or "NONE"
  // MariaDB GTID state.
  std::string gtid_binlog_pos;  // "0-1-42,1-1-7"
  bool gtid_strict_mode = false;
  uint32_t gtid_domain_id = 0;
  // MySQL GTID state.
  std::string gtid_mode;      // "ON", "OFF", "ON_PERMISSIVE", ...
  std::string gtid_executed;  // "uuid:1-42,..."
  BinlogPosition position;    // current end of the binlog; empty when log_bin is off
};

// Reads everything above. kUnavailable on network errors.
Result<ServerInfo> ProbeServer(Connection& conn);

// Parses "10.11.19-MariaDB-0+deb12u1" / "8.0.36-28" into flavor and numbers.
void ParseServerVersion(std::string_view version, ServerInfo* info);

// The current binlog file and position: `SHOW BINARY LOG STATUS` (MySQL 8.2+, MariaDB
// 10.5.2+) falling back to `SHOW MASTER STATUS`. kFailedPrecondition when binary logging
// is off (empty result).
Result<BinlogPosition> ReadBinlogPosition(Connection& conn);

// SHOW BINARY LOGS: (file name, size in bytes), oldest first.
Result<std::vector<std::pair<std::string, uint64_t>>> ListBinaryLogs(Connection& conn);

// kFailedPrecondition if log_bin is off or binlog_format is not ROW, naming the setting and
// how to fix it. Conditions sluice can live with are appended to `warnings` (if not null):
// binlog_row_image != FULL (updates then carry only some columns; missing ones are kAbsent),
// binlog_row_metadata != FULL, MySQL gtid_mode not ON.
Status CheckReplicationReady(const ServerInfo& info, std::vector<std::string>* warnings = nullptr);

// One named check of the source, e.g. "REPLICATION SLAVE privilege".
struct ServerCheck {
  std::string name;
  bool passed = false;
  std::string detail;  // what was seen ("granted", "SHOW GRANTS lists no REPLICATION SLAVE")
  std::string fix;     // what to do; empty when passed
};

// The privileges sluice needs, checked without changing anything:
//   "REPLICATION SLAVE privilege"   (the binlog dump) from SHOW GRANTS: global grant of
//       REPLICATION SLAVE or ALL PRIVILEGES. Not decidable when the user has roles or the
//       grants cannot be read: then passed, and the detail says so.
//   "REPLICATION CLIENT privilege"  (SHOW MASTER STATUS / SHOW BINARY LOGS; BINLOG MONITOR
//       on MariaDB 10.5+): SHOW BINARY LOGS must not be refused with an access error.
//   "LOCK TABLES privilege"         MySQL only (the snapshot's brief LOCK TABLES ... READ),
//       from SHOW GRANTS like REPLICATION SLAVE.
//   "SELECT on <pattern>"           one per include pattern: every visible table it matches
//       must answer `SELECT 1 ... LIMIT 0`; when it matches no visible table, a literal
//       database is probed with SHOW CREATE DATABASE and a literal table with SELECT, so a user
//       without SELECT hears about the privilege, not "matches no table".
// Network errors are returned (kUnavailable); access errors become failed checks.
Result<std::vector<ServerCheck>> CheckPrivileges(Connection& conn,
                                                 const std::vector<std::string>& include_patterns);

// OK when every check passed; else kFailedPrecondition "the source user lacks what sluice
// needs: <name>: <detail> (fix: <fix>); ...".
Status FailedChecks(const std::vector<ServerCheck>& checks);

// Whether `other` is a session on the server `conn` is connected to, whatever address each
// used (127.0.0.1 or another IP, a proxy, another port forwarded to it). @@server_id does not
// tell (servers often share 1) and MariaDB has no server_uuid. Instead `conn` takes a
// user-level lock of a random name (GET_LOCK("sluice-self-<128 random bits>", 0)) and `other`
// asks IS_USED_LOCK about that name: user locks are server-wide, not replicated, and need no
// privilege, so only the same server sees it held. The lock is released before returning.
// Neither session writes anything (no binlog event). A server that refuses GET_LOCK (Galera
// with wsrep on) is compared by (@@hostname, @@port, @@datadir, @@server_id) instead.
// `evidence` (when not null) gets how the answer was found, for messages: "a user lock
// taken on one is held on the other" or "both report the same @@hostname, @@port, @@datadir and
// @@server_id".
// Errors: the sessions' own (kUnavailable for a lost connection).
Result<bool> SameServer(Connection& conn, Connection& other, std::string* evidence = nullptr);

}  // namespace sluice
