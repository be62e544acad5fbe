// Connection: one client session to a MySQL/MariaDB server through MariaDB
// Connector/C 3.3 (libmariadb), with every error mapped to a Status.
//
// Provides
//   ConnectOptions  where and how to connect (TCP by default, unix socket if given), with
//                   TLS (TlsMode, CA, client certificate) and the allowed authentication.
//   TlsMode         disabled | preferred | required | verify_ca | verify_identity, as in
//                   the MySQL client and Debezium (docs/config.md has the table).
//   QueryResult     a whole buffered result: column names plus rows of optional text cells
//                   (nullopt is SQL NULL). Text-protocol cells are the server's bytes as
//                   they are (binary columns stay raw, text columns in the session charset).
//   Connection      RAII owner of one MYSQL*. Query() buffers all rows (mysql_store_result);
//                   QueryStream() hands rows one at a time to a callback (mysql_use_result),
//                   so a big table is never held in memory.
//
// Errors (MapMysqlError):
//   connection-level client errors (CR_CONNECTION_ERROR, CR_CONN_HOST_ERROR, CR_IPSOCK_ERROR,
//   CR_UNKNOWN_HOST, CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_SERVER_LOST_EXTENDED, network
//   read/write errors) and server errors that mean "try again" (ER_CONNECTION_KILLED,
//   ER_SERVER_SHUTDOWN, ER_QUERY_INTERRUPTED, ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT)
//     -> kUnavailable (reconnect from the last checkpoint);
//   access/privilege errors (1044, 1045, 1142, 1143, 1227, 1370) -> kFailedPrecondition;
//   unknown database/table (1049, 1146) -> kNotFound;
//   TLS failures (CR_SSL_CONNECTION_ERROR: handshake, certificate chain, host name; a server
//   without TLS in a mode that requires it) and refused authentication plugins
//   (CR_AUTH_PLUGIN_CANNOT_LOAD / CR_PLUGIN_NOT_ALLOWED) -> kFailedPrecondition, the message
//   naming the mode, the CA file and the fix;
//   everything else -> kInvalidArgument.
//   Messages read "<what> on user@host:port: [errno] <server message> (SQL: <first 200 chars>)".
//   The password never appears in any message: every occurrence of it is replaced by "***".
//
// Ownership and lifetime: a Connection owns its MYSQL* and closes it in the destructor.
// Cells passed to a QueryStream callback are views into the connector's row buffer and are
// valid only during that callback call.
// Thread safety: a Connection must be used by one thread at a time (Connector/C rule);
// different Connections may be used from different threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

struct st_mysql;  // MYSQL from <mysql.h>; kept out of this header.

namespace sluice {

// How a connection uses TLS. Connector/C options per mode:
//   kDisabled        no TLS option set: plain text even if the server offers TLS.
//   kPreferred       TLS when the server offers it (certificate not checked), else plain text.
//   kRequired        TLS or no connection; the certificate is not checked.
//   kVerifyCa        TLS, and the server certificate must chain to `tls_ca` (host not checked).
//   kVerifyIdentity  kVerifyCa plus the host name (or IP) must match the certificate; without
//                    `tls_ca` the system's CA store is used.
// In every mode that needs TLS (TlsRequired), a server whose handshake does not offer TLS
// is refused before anything of the login (user name, scramble response, password) is sent:
// Connector/C alone would send it in plain text for kRequired and kVerifyCa, so Connect
// watches the server's greeting (see TlsGuard in connection.cc). kPreferred falls back to
// plain text, where clear-text authentication plugins stay refused (allow_cleartext_auth).
enum class TlsMode { kDisabled, kPreferred, kRequired, kVerifyCa, kVerifyIdentity };

// "disabled", "preferred", ... (the config spelling).
std::string_view TlsModeName(TlsMode mode);
// Parses the config spelling; nullopt when `name` is not one of the five.
std::optional<TlsMode> ParseTlsMode(std::string_view name);
// True for the modes that check the server certificate (kVerifyCa, kVerifyIdentity).
inline bool TlsVerifiesServer(TlsMode mode) {
  return mode == TlsMode::kVerifyCa || mode == TlsMode::kVerifyIdentity;
}
// True for the modes that refuse a connection without TLS (kRequired and the two above).
inline bool TlsRequired(TlsMode mode) {
  return mode == TlsMode::kRequired || TlsVerifiesServer(mode);
}

struct ConnectOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 3306;
  std::string user;
  std::string password;  // never logged, never put in a Status message
  // The environment variable the password was read from and the config key that names it
  // ("SLUICE_PASSWORD", "source.password_env"), for messages; empty when it came from
  // elsewhere. A login refused while that variable was set but empty says so.
  std::string password_env;
  std::string password_env_key;
  std::optional<std::string> database;
  uint32_t connect_timeout_s = 10;
  // Socket read/write timeouts; 0 = none. A replication session needs a read timeout larger
  // than its heartbeat period (ReplicationSession raises it when needed).
  uint32_t read_timeout_s = 60;
  uint32_t write_timeout_s = 60;
  std::string charset = "utf8mb4";
  std::optional<std::string> unix_socket;  // when set, connect through it instead of TCP

  TlsMode tls = TlsMode::kPreferred;
  std::string tls_ca;    // PEM file of the CA(s) that sign the server certificate
  std::string tls_cert;  // PEM client certificate (with tls_key), for servers that ask for one
  std::string tls_key;   // PEM private key of tls_cert
  // Authentication plugins that send the password itself (mysql_clear_password, dialog)
  // are refused (MARIADB_OPT_RESTRICTED_AUTH) unless the server certificate is verified
  // (TlsVerifiesServer, and then the connection has TLS or is refused) or this is set.
  bool allow_cleartext_auth = false;
  // The config table these options come from ("source", "sink.mysql"): messages name its
  // keys (<config_section>.tls, .ca, .allow_cleartext_auth) in the fix they suggest.
  std::string config_section = "source";
  // CLIENT_FOUND_ROWS: an UPDATE reports the rows it matched, not only those it changed
  // (a sink tells "no such row" from "row already had these values").
  bool found_rows = false;

  // "user@host:port" or "user@unix:/path" — for messages; no password.
  std::string Describe() const;
};

// A cell of a text-protocol row; nullopt is SQL NULL.
using TextCell = std::optional<std::string>;
using TextRow = std::vector<TextCell>;

struct QueryResult {
  std::vector<std::string> columns;  // names as the server labels them
  std::vector<TextRow> rows;
  uint64_t affected_rows = 0;  // for statements without a result set

  // Index of column `name` (exact match), or -1.
  int ColumnIndex(std::string_view name) const;
};

// One streamed row: views valid only during the callback.
using TextCellView = std::optional<std::string_view>;

class Connection {
 public:
  // Connects (TCP unless options.unix_socket is set) and sets the connection charset.
  // kUnavailable when the server cannot be reached, kFailedPrecondition on access denied.
  static Result<std::unique_ptr<Connection>> Connect(const ConnectOptions& options);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement and buffers its whole result (empty columns/rows when the statement
  // returns none). Extra result sets (multi-statements, procedures) are read and dropped.
  Result<QueryResult> Query(std::string_view sql);

  // Runs a statement and discards any result.
  Status Execute(std::string_view sql);

  // Runs a statement and streams its rows (mysql_use_result): `on_row` gets each row's
  // cells; if it returns a non-OK Status, reading stops, the rest of the result is drained
  // and that Status is returned. `columns`, if not null, receives the column names before
  // the first row.
  using RowCallback = std::function<Status(const std::vector<TextCellView>& row)>;
  Status QueryStream(std::string_view sql, const RowCallback& on_row,
                     std::vector<std::string>* columns = nullptr);

  // Escapes `s` for use inside single quotes (mysql_real_escape_string, honours the
  // connection charset and NO_BACKSLASH_ESCAPES).
  std::string Escape(std::string_view s);
  // Escape(s) wrapped in single quotes: 'it''s' / 'it\'s'.
  std::string Quote(std::string_view s);

  // Server-side connection id (for KILL), mysql_thread_id.
  uint64_t connection_id() const;
  // mysql_get_server_info: e.g. "10.11.19-MariaDB-0+deb12u1" or "8.0.36".
  std::string server_version() const;
  // The negotiated TLS protocol ("TLSv1.3") and cipher ("TLS_AES_256_GCM_SHA384"); both
  // empty when the connection is not encrypted.
  std::string tls_version() const;
  std::string tls_cipher() const;
  // "TLSv1.3, cipher TLS_AES_256_GCM_SHA384" or "no TLS" (for log lines).
  std::string DescribeTls() const;
  const ConnectOptions& options() const { return options_; }

  // The raw handle, for the replication session in this folder. Still owned here.
  st_mysql* handle() { return mysql_; }

  // The current connector error as a Status (see the mapping above); `what` names the
  // operation, `sql` (may be empty) is shown truncated to 200 characters.
  Status LastError(std::string_view what, std::string_view sql = {}) const;

 private:
  Connection(st_mysql* mysql, ConnectOptions options)
      : mysql_(mysql), options_(std::move(options)) {}
  Status DrainResults();

  st_mysql* mysql_;
  ConnectOptions options_;
};

// Maps a client or server error number to the status code described above.
StatusCode MapMysqlErrorCode(unsigned int errnum);

// Whether a CR_SSL_CONNECTION_ERROR (2026) is the network failing under TLS rather than TLS
// refusing: on a session whose handshake is done (`established`) every 2026 is (the socket
// closed, reset or timed out: "unexpected eof while reading", "Connection timed out"); during a
// connect only those words are, the rest (certificates, protocol versions, a server without
// TLS) need a person. A new user's probe: a cut network stopped a TLS run, exit 1 (2 during a
// snapshot), where the same cut without TLS reconnects.
bool TlsErrorIsNetworkFailure(unsigned int errnum, std::string_view message, bool established);

// Replaces every occurrence of `secret` in `text` by "***" (no-op when secret is empty).
std::string RedactSecret(std::string text, std::string_view secret);

}  // namespace sluice
