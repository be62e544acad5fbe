// ReplicationSession: a binlog dump connection through MariaDB Connector/C 3.3, acting as
// a replica, that hands out each event's raw bytes for sluice's own decoder (binlog/).
//
// Start() connects and prepares the session the way a real replica does:
//   SET @master_binlog_checksum = @@global.binlog_checksum   (also @source_binlog_checksum)
//       the server refuses to send CRC32 binlogs to a replica that did not say it can
//       handle checksums; events keep their 4-byte CRC32 trailer.
//   SET @mariadb_slave_capability = 4                          (MariaDB: MARIA_SLAVE_CAPABILITY_GTID)
//       without it MariaDB rewrites GTID events into BEGIN query events and sends dummy
//       events in place of ones an old replica would not know.
//   SET @master_heartbeat_period = <ns>                        (also @source_heartbeat_period)
//       the server sends HEARTBEAT_LOG_EVENT (27; MySQL 8.0.26+: HEARTBEAT_V2, 41) after
//       that much idle time, so a quiet server is told apart from a dead one.
// and then, by start point:
//   file/pos          COM_BINLOG_DUMP via mariadb_rpl_open (registers with
//                     COM_REGISTER_SLAVE first because MARIADB_RPL_HOST is set; verified:
//                     without a host, mariadb_rpl_open does not register).
//   MariaDB GTID      SET @slave_connect_state='<domain-server-seq,...>',
//                     SET @slave_gtid_strict_mode=1 (the server refuses a position whose
//                     GTIDs are not in its binlog state or binlogs instead of starting
//                     somewhere after it), @slave_gtid_ignore_duplicates=0, then
//                     COM_BINLOG_DUMP with an empty file name (the server starts after that
//                     GTID position).
//   MySQL GTID set    COM_REGISTER_SLAVE + COM_BINLOG_DUMP_GTID (0x1e), which Connector/C does
//                     not send itself; sent through the connector's public method table
//                     (MYSQL::methods->db_command). Body (sql/rpl_source.cc / log_event docs):
//                       flags u16 (BINLOG_THROUGH_GTID 0x04 | NON_BLOCK 0x01) | server_id u32 |
//                       name_len u32 | name (empty) | pos u64 (4) | data_len u32 |
//                       data = Gtid_set::encode: n_sids u64, per sid: uuid[16] n_intervals u64
//                       then (start u64, end_exclusive u64)*.
//                     Tagged GTIDs (MySQL 8.3+ "uuid:tag:n") are kNotSupported.
//                     NOT TESTED against a live MySQL (no MySQL server here).
//
// Fetch() reads one packet with mysql_net_read_packet (public API) and returns the event
// bytes that follow the packet's leading OK byte (0x00): the 19-byte v4 header, body and
// checksum exactly as in the binlog file. We deliberately do not use mariadb_rpl_fetch: it
// parses every event itself and rejects ones it does not know (e.g. MySQL's
// TRANSACTION_PAYLOAD 40, HEARTBEAT_V2 41, GTID_TAGGED 42), while we only need the framing.
// (Checked empirically with 3.3.20: mariadb_rpl_fetch's raw_data is the same packet, OK
// byte included, raw_data_ofs == 1.) Nothing is verified, uncompressed or extracted by the
// connector (MARIADB_RPL_VERIFY_CHECKSUM/UNCOMPRESS/EXTRACT_VALUES are set to 0).
//
// Errors:
//   kUnavailable   socket errors, read timeout, the connection was killed, server shutdown;
//                  EOF from the server when non_blocking is off. Reconnect from the last
//                  committed checkpoint.
//   kDataLoss      ER_MASTER_FATAL_ERROR_READING_BINLOG (1236): the file does not exist or was
//                  purged, the GTID position is not in the server's binlogs; carries the
//                  server's message, the position asked for, the oldest binlog the server
//                  still has (SHOW BINARY LOGS on a second connection) and the remedy.
//   kFailedPrecondition  1236 about checksums; other server errors (e.g. duplicate server_id).
//   kInvalidArgument     bad options (server_id 0 or equal to the server's, no start point,
//                        malformed GTID set).
//   kCorruption    a packet that is not a whole event (event_size field != packet length - 1).
//
// Ownership and lifetime: the session owns its connection. The span returned by Fetch() is a
// view into the connector's network buffer, valid until the next Fetch() or destruction.
// Thread safety: one thread at a time. connection_id() may be read from any thread (it is
// fixed after Start), e.g. to KILL the session from another connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/position.h"
#include "mysql/connection.h"
#include "util/status.h"

struct st_mariadb_rpl;

namespace sluice {

// The host sluice registers its replica connections under: "sluice@" and this machine's
// host name (at most 60 bytes, MariaDB's report_host width; "sluice" when the name is
// unknown), so that SHOW SLAVE HOSTS tells a run's own earlier connection from another
// machine's.
std::string ReplicaHostName();

// What a run registers (COM_REGISTER_SLAVE's host, SHOW SLAVE HOSTS' Host column):
// ReplicaHostName(), shortened if needed, then " pid " and this process's id, within the
// 60 bytes. A later run on this machine tells from it whether the process that holds a
// server_id is still running (SluicePidOf).
std::string RegisteredReplicaHost();

// The process id in a Host column written by RegisteredReplicaHost on this machine;
// nullopt for any other text (another machine, an older sluice, another replica).
std::optional<int64_t> SluicePidOf(std::string_view listed_host);

struct ReplicationOptions {
  // This replica's id: nonzero and different from the server's @@server_id (and from any
  // other replica of that server, which would otherwise be disconnected).
  uint32_t server_id = 0;
  // Where to start when `gtid` is empty: the first byte of the next event to read.
  BinlogPosition start;
  // GTID start point, in the server's own form: MariaDB "0-1-42,1-2-7" (the last applied GTID
  // per domain), MySQL "uuid:1-42,uuid2:1-7" (the executed set). Empty: use `start`.
  std::string gtid;
  // Heartbeat period in seconds; 0 disables heartbeats. The read timeout of the connection
  // is raised to at least 2 * period + 5 s.
  double heartbeat_period_s = 5;
  // Ask MariaDB for ANNOTATE_ROWS events (160), the statement text before row events.
  bool send_annotate_rows = false;
  // BINLOG_DUMP_NON_BLOCK: the server ends the stream (EOF) when it has sent everything
  // instead of waiting for new events. Fetch() then returns an empty span.
  bool non_blocking = false;
  // Shown in SHOW SLAVE HOSTS / SHOW REPLICAS ("sluice@<this machine> pid <id>").
  std::string replica_host = RegisteredReplicaHost();
};

class ReplicationSession {
 public:
  // Connects with `conn_options`, prepares the session and sends the dump request. Errors
  // from the dump request itself (e.g. a purged file) surface on the first Fetch().
  static Result<std::unique_ptr<ReplicationSession>> Start(const ConnectOptions& conn_options,
                                                           const ReplicationOptions& options);
  ~ReplicationSession();
  ReplicationSession(const ReplicationSession&) = delete;
  ReplicationSession& operator=(const ReplicationSession&) = delete;

  // The next event's bytes (header + body + checksum). Empty span: the server ended the
  // stream (only with non_blocking). See the error list above.
  Result<std::span<const uint8_t>> Fetch();

  // Shuts the connection's socket down, so a Fetch() blocked in another thread returns
  // (with kUnavailable) at once. The only method that may be called from another thread.
  void Cancel();

  Flavor flavor() const { return flavor_; }
  uint32_t source_server_id() const { return source_server_id_; }
  // "CRC32" or "NONE": whether events carry a 4-byte checksum trailer.
  const std::string& binlog_checksum() const { return binlog_checksum_; }
  uint64_t connection_id() const { return connection_id_; }

 private:
  ReplicationSession() = default;
  Status SendMysqlGtidDump(const ReplicationOptions& options);
  Status RegisterReplica(const ReplicationOptions& options);
  Status FetchError();

  std::unique_ptr<Connection> conn_;
  st_mariadb_rpl* rpl_ = nullptr;
  Flavor flavor_ = Flavor::kUnknown;
  uint32_t source_server_id_ = 0;
  uint32_t server_id_ = 0;  // this replica's (ReplicationOptions::server_id)
  std::string binlog_checksum_;
  uint64_t connection_id_ = 0;
  bool non_blocking_ = false;
  bool ended_ = false;
  // The dump connection's read timeout (2 x heartbeat + 5 s; 0: none) and when the last
  // packet came, so that a timeout says it was one, not only "Lost connection".
  uint32_t read_timeout_s_ = 0;
  std::chrono::steady_clock::time_point last_packet_{};
  std::string requested_;  // the start point, for messages: "file:pos" or "GTID ..."
};

// Encodes a MySQL GTID set text ("uuid:1-5:7,uuid2:3") in Gtid_set::encode form (see above).
// kInvalidArgument on malformed text, kNotSupported for tagged GTIDs. Exposed for tests.
Result<std::string> EncodeMysqlGtidSet(std::string_view gtid_set);

}  // namespace sluice
