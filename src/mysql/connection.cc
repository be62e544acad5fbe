#include "mysql/connection.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <mutex>

namespace sluice {

namespace {

constexpr size_t kSqlInMessage = 200;

// The authentication plugins that never put the password itself on the wire (scrambles,
// hashes, RSA or TLS-protected exchanges). mysql_clear_password and dialog are not here.
constexpr const char* kSafeAuthPlugins =
    "mysql_native_password,caching_sha2_password,sha256_password,client_ed25519,parsec,"
    "auth_gssapi_client";

// TLS enforcement before the login. Connector/C 3.3 refuses a server without TLS before
// sending anything only when the server certificate is to be verified
// (MYSQL_OPT_SSL_VERIFY_SERVER_CERT) or a fingerprint is set (send_client_reply_packet in
// plugins/auth/my_auth.c). MYSQL_OPT_SSL_ENFORCE alone makes it send the handshake response
// (user name, scramble response, and after an auth switch even a clear-text password) in
// plain text, which is what `required` and `verify_ca` need to avoid: we cannot set
// VERIFY_SERVER_CERT up front for them, as it also checks the host name and, without a CA,
// the chain. There is no hook between reading the greeting and sending the response, but
// every socket read goes through the pvio read callbacks, so TlsGuardOnRead looks at the
// greeting's capability flags as the bytes arrive and, when CLIENT_SSL is missing, sets
// VERIFY_SERVER_CERT on that MYSQL: the connector then fails with "SSL is required, but the
// server does not support it" before it writes a byte. When the server offers TLS nothing is
// changed, so the TLS handshake and certificate checks are those of the mode.
// The restricted authentication list is set again at that point too, so that no clear-text
// plugin could ever run on such a connection even if the connector went on.
struct TlsGuard {
  MYSQL* mysql = nullptr;
  std::string greeting;  // the first bytes read, until the capability flags are in
  bool decided = false;
  bool server_lacks_tls = false;
};

// A real greeting is under 200 bytes; one that has not shown its flags by this size is
// taken as "no TLS" rather than buffered further.
constexpr size_t kGreetingLimit = 64 * 1024;
// The guard of the connect in progress on this thread (mysql_real_connect is synchronous,
// so its reads run on the calling thread); null otherwise, which is the cheap check every
// other read of the process makes.
thread_local TlsGuard* tls_guard = nullptr;

// Capability bit of the greeting (Handshake v10): the server can do TLS.
constexpr uint16_t kClientSsl = 0x800;

// Decides once the lower capability flags of the greeting have arrived: protocol version
// (1), server version (NUL-terminated), connection id (4), scramble (8), filler (1),
// capabilities (2), after the 4-byte packet header. A greeting that ends before its flags,
// or an error packet, counts as "no TLS": the connector fails on it anyway.
void DecideFromGreeting(TlsGuard* g) {
  const std::string& b = g->greeting;
  if (b.size() < 5) return;
  if (static_cast<uint8_t>(b[4]) == 0xff) {
    g->decided = g->server_lacks_tls = true;
    return;
  }
  size_t len = static_cast<uint8_t>(b[0]) | (static_cast<uint8_t>(b[1]) << 8) |
               (static_cast<uint8_t>(b[2]) << 16);
  size_t end = 4 + len;
  size_t nul = b.find('\0', 5);
  if (nul == std::string::npos || nul >= end) {
    if (b.size() >= end || b.size() >= kGreetingLimit) g->decided = g->server_lacks_tls = true;
    return;
  }
  size_t caps_at = nul + 1 + 4 + 8 + 1;
  if (caps_at + 2 > end) {
    g->decided = g->server_lacks_tls = true;
    return;
  }
  if (b.size() < caps_at + 2) {
    if (b.size() >= kGreetingLimit) g->decided = g->server_lacks_tls = true;
    return;
  }
  uint16_t caps = static_cast<uint8_t>(b[caps_at]) | (static_cast<uint8_t>(b[caps_at + 1]) << 8);
  g->decided = true;
  g->server_lacks_tls = (caps & kClientSsl) == 0;
}

void TlsGuardOnRead(int mode, MYSQL* mysql, const unsigned char* buffer, size_t length) {
  TlsGuard* g = tls_guard;
  if (g == nullptr || g->mysql != mysql || g->decided || mode != 0) return;
  // length is the read's ssize_t result: negative on error.
  if (static_cast<ssize_t>(length) <= 0) return;
  g->greeting.append(reinterpret_cast<const char*>(buffer), length);
  DecideFromGreeting(g);
  if (g->server_lacks_tls) {
    my_bool on = 1;
    mysql_optionsv(mysql, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
    mysql_optionsv(mysql, MARIADB_OPT_RESTRICTED_AUTH, kSafeAuthPlugins);
  }
}

}  // namespace
}  // namespace sluice

// Exported by libmariadb (libmariadb_3) but declared only in its internal ma_pvio.h.
extern "C" int ma_pvio_register_callback(
    my_bool register_callback,
    void (*callback_function)(int mode, MYSQL* mysql, const unsigned char* buffer, size_t length));

namespace sluice {
namespace {

// mysql_init() initialises the library lazily, which is not thread-safe; do it once. The
// read callback list is global and not locked, so it is registered here too.
void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    mysql_library_init(0, nullptr, nullptr);
    ma_pvio_register_callback(1, TlsGuardOnRead);
  });
}

std::string TruncateSql(std::string_view sql) {
  if (sql.size() <= kSqlInMessage) return std::string(sql);
  return std::string(sql.substr(0, kSqlInMessage)) + "...";
}

// Sets the Connector/C TLS options for options.tls (see TlsMode in the header).
void SetTlsOptions(MYSQL* m, const ConnectOptions& o) {
  if (o.tls == TlsMode::kDisabled) return;
  auto set_file = [m](mysql_option opt, const std::string& path) {
    if (!path.empty()) mysql_options(m, opt, path.c_str());
  };
  set_file(MYSQL_OPT_SSL_CA, o.tls_ca);
  set_file(MYSQL_OPT_SSL_CERT, o.tls_cert);
  set_file(MYSQL_OPT_SSL_KEY, o.tls_key);
  // Asks for TLS whenever the server offers it; Connector/C checks the certificate chain
  // when a CA is given.
  my_bool on = 1;
  mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &on);
  my_bool verify_identity = o.tls == TlsMode::kVerifyIdentity ? 1 : 0;
  mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify_identity);
}

// The fix to suggest for a failed connection, given what went wrong; "" when none. Keys are
// named in o.config_section ("source.tls", "sink.mysql.tls").
std::string ConnectHint(const ConnectOptions& o, unsigned int err, std::string_view server_msg) {
  const std::string& sec = o.config_section;
  if (err == CR_SSL_CONNECTION_ERROR) {
    std::string mode(TlsModeName(o.tls));
    if (server_msg.find("does not support") != std::string_view::npos)
      return fmt::format("{0}.tls = {1} needs TLS, but the server does not offer it: configure "
                         "ssl_cert/ssl_key on the server, or lower {0}.tls",
                         sec, mode);
    if (server_msg.find("Validation of SSL server certificate") != std::string_view::npos ||
        server_msg.find("hostname") != std::string_view::npos)
      return fmt::format("{}.tls = {}: the server certificate is not issued for host '{}' "
                         "(connect with the name or address the certificate names, or use "
                         "tls = \"verify_ca\")",
                         sec, mode, o.host);
    if (TlsVerifiesServer(o.tls))
      return fmt::format("{0}.tls = {1}: the server certificate could not be verified against "
                         "{2} (check {0}.ca)",
                         sec, mode, o.tls_ca.empty() ? std::string("the system CA store") : o.tls_ca);
    return fmt::format("TLS handshake failed ({}.tls = {})", sec, mode);
  }
  if (err == CR_PLUGIN_NOT_ALLOWED || err == CR_AUTH_PLUGIN_CANNOT_LOAD) {
    if (server_msg.find("clear_password") != std::string_view::npos ||
        server_msg.find("dialog") != std::string_view::npos || err == CR_PLUGIN_NOT_ALLOWED)
      return fmt::format("the server asked for an authentication method that sends the password "
                         "in clear text; sluice refuses it unless {0}.tls is verify_ca or "
                         "verify_identity, or {0}.allow_cleartext_auth = true",
                         sec);
  }
  std::string hint;
  // The server says only "(using password: NO)"; the variable is what the person can fix.
  // 1698 is MySQL's ER_ACCESS_DENIED_NO_PASSWORD_ERROR.
  if ((err == ER_ACCESS_DENIED_ERROR || err == 1698) && o.password.empty() && !o.password_env.empty())
    hint = fmt::format("the environment variable {} ({}) is set but empty, so no password was sent",
                       o.password_env, o.password_env_key);
  if (err == ER_ACCESS_DENIED_ERROR && o.tls == TlsMode::kDisabled)
    hint += std::string(hint.empty() ? "" : "; ") +
            fmt::format("{}.tls = \"disabled\": a server with require_secure_transport=ON refuses "
                        "every connection without TLS with this same message; try tls = "
                        "\"preferred\" or stronger",
                        sec);
  return hint;
}

}  // namespace

std::string_view TlsModeName(TlsMode mode) {
  switch (mode) {
    case TlsMode::kDisabled: return "disabled";
    case TlsMode::kPreferred: return "preferred";
    case TlsMode::kRequired: return "required";
    case TlsMode::kVerifyCa: return "verify_ca";
    case TlsMode::kVerifyIdentity: return "verify_identity";
  }
  return "?";
}

std::optional<TlsMode> ParseTlsMode(std::string_view name) {
  for (TlsMode m : {TlsMode::kDisabled, TlsMode::kPreferred, TlsMode::kRequired,
                    TlsMode::kVerifyCa, TlsMode::kVerifyIdentity})
    if (TlsModeName(m) == name) return m;
  return std::nullopt;
}

std::string ConnectOptions::Describe() const {
  if (unix_socket) return fmt::format("{}@unix:{}", user, *unix_socket);
  return fmt::format("{}@{}:{}", user, host, port);
}

int QueryResult::ColumnIndex(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

StatusCode MapMysqlErrorCode(unsigned int errnum) {
  switch (errnum) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_IPSOCK_ERROR:
    case CR_UNKNOWN_HOST:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_SERVER_LOST_EXTENDED:
    case CR_ERR_NET_READ:
    case CR_ERR_NET_WRITE:
    case ER_CONNECTION_KILLED:
    case ER_SERVER_SHUTDOWN:
    case ER_QUERY_INTERRUPTED:
    case ER_LOCK_DEADLOCK:
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_NET_READ_INTERRUPTED:
    case ER_NET_WRITE_INTERRUPTED:
      return StatusCode::kUnavailable;
    case ER_DBACCESS_DENIED_ERROR:
    case ER_ACCESS_DENIED_ERROR:
    case ER_TABLEACCESS_DENIED_ERROR:
    case 1143:  // ER_COLUMNACCESS_DENIED_ERROR
    case ER_SPECIFIC_ACCESS_DENIED_ERROR:
    case 1370:  // ER_PROCACCESS_DENIED_ERROR
      return StatusCode::kFailedPrecondition;
    case ER_BAD_DB_ERROR:
    case ER_NO_SUCH_TABLE:
      return StatusCode::kNotFound;
    default:
      return StatusCode::kInvalidArgument;
  }
}

bool TlsErrorIsNetworkFailure(unsigned int errnum, std::string_view message, bool established) {
  if (errnum != CR_SSL_CONNECTION_ERROR) return false;
  if (established) return true;
  for (std::string_view words : {"unexpected eof", "timed out", "reset by peer", "Broken pipe", "Connection refused"})
    if (message.find(words) != std::string_view::npos) return true;
  return false;
}

std::string RedactSecret(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), "***");
    pos += 3;
  }
  return text;
}

Result<std::unique_ptr<Connection>> Connection::Connect(const ConnectOptions& options) {
  InitLibraryOnce();
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Status::Internal("mysql_init failed (out of memory)");
  unsigned int connect_timeout = options.connect_timeout_s;
  unsigned int read_timeout = options.read_timeout_s;
  unsigned int write_timeout = options.write_timeout_s;
  if (connect_timeout > 0) mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  if (read_timeout > 0) mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
  if (write_timeout > 0) mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, options.charset.c_str());
  my_bool no_reconnect = 0;
  mysql_options(m, MYSQL_OPT_RECONNECT, &no_reconnect);
  unsigned int protocol = options.unix_socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
  mysql_options(m, MYSQL_OPT_PROTOCOL, &protocol);
  SetTlsOptions(m, options);
  if (!options.allow_cleartext_auth && !TlsVerifiesServer(options.tls))
    mysql_optionsv(m, MARIADB_OPT_RESTRICTED_AUTH, kSafeAuthPlugins);

  const char* db = options.database ? options.database->c_str() : nullptr;
  const char* sock = options.unix_socket ? options.unix_socket->c_str() : nullptr;
  TlsGuard guard;
  guard.mysql = m;
  if (TlsRequired(options.tls)) tls_guard = &guard;
  MYSQL* connected =
      mysql_real_connect(m, options.host.c_str(), options.user.c_str(), options.password.c_str(),
                         db, options.port, sock, options.found_rows ? CLIENT_FOUND_ROWS : 0);
  tls_guard = nullptr;
  if (connected == nullptr) {
    unsigned int err = mysql_errno(m);
    std::string hint = ConnectHint(options, err, mysql_error(m));
    std::string msg = RedactSecret(
        fmt::format("connect to {} failed: [{}] {}{}{}", options.Describe(), err, mysql_error(m),
                    hint.empty() ? "" : "; ", hint),
        options.password);
    const bool network = TlsErrorIsNetworkFailure(err, mysql_error(m), /*established=*/false);
    mysql_close(m);
    if (network) return Status::Unavailable(std::move(msg));
    StatusCode code = MapMysqlErrorCode(err);
    switch (code) {
      case StatusCode::kUnavailable: return Status::Unavailable(std::move(msg));
      case StatusCode::kNotFound: return Status::NotFound(std::move(msg));
      case StatusCode::kFailedPrecondition: return Status::FailedPrecondition(std::move(msg));
      default:
        // Other connect-time failures (TLS, protocol, too many connections) are transient
        // from the caller's point of view only when they are network errors; the rest
        // need a person.
        if (err == 1040 /* ER_CON_COUNT_ERROR */) return Status::Unavailable(std::move(msg));
        return Status::FailedPrecondition(std::move(msg));
    }
  }
  std::unique_ptr<Connection> conn(new Connection(m, options));
  if (TlsRequired(options.tls) && conn->tls_cipher().empty()) {
    // The TlsGuard refuses this before the login; kept in case a connector version reads
    // the greeting without the read callbacks.
    return Status::FailedPrecondition(fmt::format(
        "connect to {0} failed: {1}.tls = {2} needs TLS, but the server does not offer it "
        "(have_ssl is not YES): configure ssl_cert/ssl_key on the server, or lower {1}.tls",
        options.Describe(), options.config_section, TlsModeName(options.tls)));
  }
  return conn;
}

Connection::~Connection() {
  if (mysql_ != nullptr) mysql_close(mysql_);
}

Status Connection::LastError(std::string_view what, std::string_view sql) const {
  unsigned int err = mysql_errno(mysql_);
  std::string msg = fmt::format("{} on {}: [{}] {}", what, options_.Describe(), err,
                                err != 0 ? mysql_error(mysql_) : "unknown error");
  if (!sql.empty()) msg += fmt::format(" (SQL: {})", TruncateSql(sql));
  msg = RedactSecret(std::move(msg), options_.password);
  if (TlsErrorIsNetworkFailure(err, "", /*established=*/true)) return Status::Unavailable(std::move(msg));
  switch (MapMysqlErrorCode(err)) {
    case StatusCode::kUnavailable: return Status::Unavailable(std::move(msg));
    case StatusCode::kFailedPrecondition: return Status::FailedPrecondition(std::move(msg));
    case StatusCode::kNotFound: return Status::NotFound(std::move(msg));
    default: return Status::InvalidArgument(std::move(msg));
  }
}

Status Connection::DrainResults() {
  while (true) {
    int rc = mysql_next_result(mysql_);
    if (rc == -1) return Status::Ok();  // no more results
    if (rc > 0) return LastError("reading further result sets");
    MYSQL_RES* res = mysql_store_result(mysql_);
    if (res != nullptr) mysql_free_result(res);
    else if (mysql_errno(mysql_) != 0) return LastError("reading further result sets");
  }
}

Result<QueryResult> Connection::Query(std::string_view sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return LastError("query", sql);
  QueryResult out;
  MYSQL_RES* res = mysql_store_result(mysql_);
  if (res == nullptr) {
    // A NULL result is "no result set" only when the connector reports no error: after a
    // lost connection mysql_field_count is 0 too, and taking that for an empty result
    // would make a half-read table look finished.
    if (mysql_errno(mysql_) != 0 || mysql_field_count(mysql_) != 0)
      return LastError("reading result", sql);
    out.affected_rows = mysql_affected_rows(mysql_);
    RETURN_IF_ERROR(DrainResults());
    return out;
  }
  unsigned int nfields = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  out.columns.reserve(nfields);
  for (unsigned int i = 0; i < nfields; ++i)
    out.columns.emplace_back(fields[i].name, fields[i].name_length);
  out.rows.reserve(mysql_num_rows(res));
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    TextRow r;
    r.reserve(nfields);
    for (unsigned int i = 0; i < nfields; ++i) {
      if (row[i] == nullptr) r.emplace_back(std::nullopt);
      else r.emplace_back(std::string(row[i], lengths[i]));
    }
    out.rows.push_back(std::move(r));
  }
  if (mysql_errno(mysql_) != 0) {
    Status st = LastError("reading result rows", sql);
    mysql_free_result(res);
    return st;
  }
  mysql_free_result(res);
  RETURN_IF_ERROR(DrainResults());
  return out;
}

Status Connection::Execute(std::string_view sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return LastError("query", sql);
  MYSQL_RES* res = mysql_store_result(mysql_);
  if (res != nullptr) {
    mysql_free_result(res);
  } else if (mysql_errno(mysql_) != 0 || mysql_field_count(mysql_) != 0) {
    return LastError("reading result", sql);
  }
  return DrainResults();
}

Status Connection::QueryStream(std::string_view sql, const RowCallback& on_row,
                               std::vector<std::string>* columns) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return LastError("query", sql);
  MYSQL_RES* res = mysql_use_result(mysql_);
  if (res == nullptr) {
    if (mysql_errno(mysql_) != 0 || mysql_field_count(mysql_) != 0)
      return LastError("reading result", sql);
    return DrainResults();
  }
  unsigned int nfields = mysql_num_fields(res);
  if (columns != nullptr) {
    MYSQL_FIELD* fields = mysql_fetch_fields(res);
    columns->clear();
    for (unsigned int i = 0; i < nfields; ++i)
      columns->emplace_back(fields[i].name, fields[i].name_length);
  }
  std::vector<TextCellView> cells(nfields);
  Status st;
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    for (unsigned int i = 0; i < nfields; ++i) {
      if (row[i] == nullptr) cells[i] = std::nullopt;
      else cells[i] = std::string_view(row[i], lengths[i]);
    }
    st = on_row(cells);
    if (!st.ok()) break;
  }
  // mysql_fetch_row returns NULL both at the end and on error.
  Status read_error;
  if (st.ok() && mysql_errno(mysql_) != 0) read_error = LastError("reading streamed rows", sql);
  mysql_free_result(res);  // drains unread rows
  if (!st.ok()) return st;
  if (!read_error.ok()) return read_error;
  return DrainResults();
}

std::string Connection::Escape(std::string_view s) {
  std::string out(s.size() * 2 + 1, '\0');
  unsigned long n = mysql_real_escape_string(mysql_, out.data(), s.data(), s.size());
  if (n == static_cast<unsigned long>(-1)) {
    // Only with a multi-byte charset under NO_BACKSLASH_ESCAPES; the ANSI form (quotes
    // doubled) is always valid inside single quotes.
    out.clear();
    for (char c : s) {
      if (c == '\'') out.push_back('\'');
      out.push_back(c);
    }
    return out;
  }
  out.resize(n);
  return out;
}

std::string Connection::Quote(std::string_view s) { return "'" + Escape(s) + "'"; }

std::string Connection::tls_cipher() const {
  const char* c = mysql_get_ssl_cipher(mysql_);
  return c ? c : "";
}

std::string Connection::tls_version() const {
  if (tls_cipher().empty()) return "";
  const char* v = nullptr;
  if (mariadb_get_infov(mysql_, MARIADB_CONNECTION_TLS_VERSION, &v) != 0 || v == nullptr) return "";
  return v;
}

std::string Connection::DescribeTls() const {
  std::string cipher = tls_cipher();
  if (cipher.empty()) return "no TLS";
  return fmt::format("{}, cipher {}", tls_version(), cipher);
}

uint64_t Connection::connection_id() const { return mysql_thread_id(mysql_); }

std::string Connection::server_version() const {
  const char* v = mysql_get_server_info(mysql_);
  return v ? v : "";
}

}  // namespace sluice
