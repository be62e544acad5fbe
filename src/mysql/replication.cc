#include "mysql/replication.h"

// clang-format off
#include <mysql.h>  // must precede mariadb_rpl.h, which uses its types
#include <mariadb_rpl.h>
#include <errmsg.h>
#include <mysqld_error.h>
// clang-format on

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <vector>

#include "mysql/server_probe.h"

namespace sluice {

namespace {

constexpr size_t kEventHeaderSize = 19;
constexpr uint8_t kComBinlogDumpGtid = 0x1e;  // COM_BINLOG_DUMP_GTID (MySQL only)
constexpr uint16_t kBinlogDumpNonBlock = 0x01;
constexpr uint16_t kBinlogThroughGtid = 0x04;

void PutLe(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> EncodeMysqlGtidSet(std::string_view gtid_set) {
  struct Sid {
    uint8_t uuid[16];
    std::vector<std::pair<uint64_t, uint64_t>> intervals;  // [start, end_exclusive)
  };
  std::vector<Sid> sids;
  std::string_view rest = Trim(gtid_set);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      return Status::InvalidArgument(fmt::format("GTID set item '{}' has no ':'", item));
    Sid sid;
    std::string_view uuid = item.substr(0, colon);
    int nibbles = 0;
    for (char c : uuid) {
      if (c == '-') continue;
      int d = HexDigit(c);
      if (d < 0 || nibbles >= 32)
        return Status::InvalidArgument(fmt::format("bad UUID '{}' in GTID set", uuid));
      if (nibbles % 2 == 0) sid.uuid[nibbles / 2] = static_cast<uint8_t>(d << 4);
      else sid.uuid[nibbles / 2] |= static_cast<uint8_t>(d);
      ++nibbles;
    }
    if (nibbles != 32) return Status::InvalidArgument(fmt::format("bad UUID '{}' in GTID set", uuid));
    std::string_view ivs = item.substr(colon + 1);
    while (!ivs.empty()) {
      size_t c2 = ivs.find(':');
      std::string_view iv = ivs.substr(0, c2);
      ivs = c2 == std::string_view::npos ? std::string_view() : ivs.substr(c2 + 1);
      size_t dash = iv.find('-');
      uint64_t a = 0, b = 0;
      bool ok = dash == std::string_view::npos
                    ? ParseU64(iv, &a) && (b = a, true)
                    : ParseU64(iv.substr(0, dash), &a) && ParseU64(iv.substr(dash + 1), &b);
      if (!ok) {
        if (!iv.empty() && !(iv[0] >= '0' && iv[0] <= '9'))
          return Status::NotSupported(fmt::format(
              "tagged GTIDs ('{}') are not supported for MySQL GTID start", item));
        return Status::InvalidArgument(fmt::format("bad GTID interval '{}' in '{}'", iv, item));
      }
      if (a == 0 || b < a)
        return Status::InvalidArgument(fmt::format("bad GTID interval '{}' in '{}'", iv, item));
      sid.intervals.emplace_back(a, b + 1);
    }
    if (sid.intervals.empty())
      return Status::InvalidArgument(fmt::format("GTID set item '{}' has no intervals", item));
    sids.push_back(std::move(sid));
  }
  std::string out;
  PutLe(&out, sids.size(), 8);
  for (const Sid& s : sids) {
    out.append(reinterpret_cast<const char*>(s.uuid), 16);
    PutLe(&out, s.intervals.size(), 8);
    for (auto [a, b] : s.intervals) {
      PutLe(&out, a, 8);
      PutLe(&out, b, 8);
    }
  }
  return out;
}

Result<std::unique_ptr<ReplicationSession>> ReplicationSession::Start(
    const ConnectOptions& conn_options, const ReplicationOptions& options) {
  if (options.server_id == 0)
    return Status::InvalidArgument("replication server_id must be nonzero");
  if (options.gtid.empty() && options.start.file.empty())
    return Status::InvalidArgument("replication needs a start point: a binlog file/pos or a GTID");
  if (options.heartbeat_period_s < 0 || options.heartbeat_period_s > 4294967)
    return Status::InvalidArgument("heartbeat period must be between 0 and 4294967 seconds");

  ConnectOptions co = conn_options;
  if (options.heartbeat_period_s > 0 && co.read_timeout_s != 0) {
    uint32_t need = static_cast<uint32_t>(std::ceil(options.heartbeat_period_s * 2)) + 5;
    // A server that sends neither events nor heartbeats for two periods is hung: time out
    // (kUnavailable) and let the caller reconnect, rather than wait for the default timeout.
    co.read_timeout_s = need;
  }
  std::unique_ptr<ReplicationSession> s(new ReplicationSession());
  ASSIGN_OR_RETURN(s->conn_, Connection::Connect(co));
  Connection& c = *s->conn_;
  s->read_timeout_s_ = co.read_timeout_s;
  s->last_packet_ = std::chrono::steady_clock::now();
  s->connection_id_ = c.connection_id();
  s->non_blocking_ = options.non_blocking;
  s->requested_ = !options.gtid.empty()
                      ? "GTID " + options.gtid
                      : fmt::format("{}:{}", options.start.file, options.start.pos < 4 ? 4 : options.start.pos);

  ASSIGN_OR_RETURN(QueryResult info,
                   c.Query("SELECT @@version, @@server_id, @@global.binlog_checksum"));
  if (info.rows.empty() || info.rows[0].size() < 3)
    return Status::Internal("SELECT @@version, @@server_id returned nothing");
  ServerInfo si;
  ParseServerVersion(info.rows[0][0].value_or(""), &si);
  s->flavor_ = si.flavor;
  uint64_t sid = 0;
  (void)ParseU64(info.rows[0][1].value_or(""), &sid);
  s->source_server_id_ = static_cast<uint32_t>(sid);
  s->server_id_ = options.server_id;
  s->binlog_checksum_ = info.rows[0][2].value_or("NONE");
  if (s->source_server_id_ == options.server_id)
    return Status::InvalidArgument(fmt::format(
        "replication server_id {} equals the server's own @@server_id; choose another",
        options.server_id));

  RETURN_IF_ERROR(c.Execute("SET @master_binlog_checksum = @@global.binlog_checksum, "
                            "@source_binlog_checksum = @@global.binlog_checksum"));
  if (options.heartbeat_period_s > 0) {
    uint64_t ns = static_cast<uint64_t>(std::llround(options.heartbeat_period_s * 1e9));
    RETURN_IF_ERROR(c.Execute(fmt::format(
        "SET @master_heartbeat_period = {0}, @source_heartbeat_period = {0}", ns)));
  }

  uint16_t flags = 0;
  if (options.non_blocking) flags |= MARIADB_RPL_BINLOG_DUMP_NON_BLOCK;

  if (s->flavor_ == Flavor::kMySQL && !options.gtid.empty()) {
    RETURN_IF_ERROR(s->RegisterReplica(options));
    RETURN_IF_ERROR(s->SendMysqlGtidDump(options));
    return s;
  }

  std::string file = options.start.file;
  unsigned long pos = static_cast<unsigned long>(options.start.pos < 4 ? 4 : options.start.pos);
  if (s->flavor_ == Flavor::kMariaDB) {
    RETURN_IF_ERROR(c.Execute("SET @mariadb_slave_capability = 4"));
    if (options.send_annotate_rows) flags |= MARIADB_RPL_BINLOG_SEND_ANNOTATE_ROWS;
    if (!options.gtid.empty()) {
      RETURN_IF_ERROR(c.Execute("SET @slave_connect_state = " + c.Quote(options.gtid)));
      RETURN_IF_ERROR(c.Execute("SET @slave_gtid_strict_mode = 1"));
      RETURN_IF_ERROR(c.Execute("SET @slave_gtid_ignore_duplicates = 0"));
      file.clear();
      pos = 4;
    }
  }

  MYSQL* m = c.handle();
  s->rpl_ = mariadb_rpl_init(m);
  if (s->rpl_ == nullptr) return c.LastError("mariadb_rpl_init");
  const char* host = options.replica_host.empty() ? "sluice" : options.replica_host.c_str();
  if (mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_FILENAME, file.c_str(), file.size()) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_START, pos) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_SERVER_ID, static_cast<unsigned int>(options.server_id)) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_FLAGS, static_cast<unsigned int>(flags)) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_HOST, host) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_PORT, 0u) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_VERIFY_CHECKSUM, 0u) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_UNCOMPRESS, 0u) != 0 ||
      mariadb_rpl_optionsv(s->rpl_, MARIADB_RPL_EXTRACT_VALUES, 0u) != 0)
    return Status::Internal("mariadb_rpl_optionsv rejected an option");
  if (mariadb_rpl_open(s->rpl_) != 0) {
    if (mysql_errno(m) == ER_ACCESS_DENIED_ERROR) {
      // Connector/C reports a refused dump as 1045 "Unknown or undefined error code", the
      // server's words lost (a new user's probe: REPLICATION SLAVE revoked while streaming).
      // The grants, asked on another connection, say which privilege is missing.
      if (auto side = Connection::Connect(conn_options); side.ok())
        if (auto checks = CheckPrivileges(**side, {}); checks.ok())
          for (const ServerCheck& check : *checks)
            if (check.name == "REPLICATION SLAVE privilege" && !check.passed)
              return Status::FailedPrecondition(
                  fmt::format("binlog dump on {}: the server refused it: {} (fix: {})",
                              conn_options.Describe(), check.detail, check.fix));
    }
    if (mysql_errno(m) != 0) return s->FetchError();
    return Status::Internal(fmt::format("mariadb_rpl_open failed: {}", mariadb_rpl_error(s->rpl_)));
  }
  return s;
}

std::string ReplicaHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "sluice";
  std::string host = std::string("sluice@") + name;
  if (host.size() > 60) host.resize(60);
  return host;
}

namespace {
constexpr std::string_view kPidMark = " pid ";
}  // namespace

std::string RegisteredReplicaHost() {
  std::string suffix = std::string(kPidMark) + std::to_string(static_cast<int64_t>(::getpid()));
  std::string host = ReplicaHostName();
  if (host.size() + suffix.size() > 60) host.resize(60 - suffix.size());
  return host + suffix;
}

std::optional<int64_t> SluicePidOf(std::string_view listed_host) {
  size_t mark = listed_host.rfind(kPidMark);
  if (mark == std::string_view::npos || mark == 0) return std::nullopt;
  std::string_view machine = listed_host.substr(0, mark), digits = listed_host.substr(mark + kPidMark.size());
  // The machine part may have been shortened to make room for the id.
  if (!ReplicaHostName().starts_with(machine) || !machine.starts_with("sluice")) return std::nullopt;
  int64_t pid = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) return std::nullopt;
  return pid;
}

void ReplicationSession::Cancel() {
  if (conn_ != nullptr && conn_->handle() != nullptr) mariadb_cancel(conn_->handle());
}

ReplicationSession::~ReplicationSession() {
  if (rpl_ != nullptr) mariadb_rpl_close(rpl_);
  // conn_ closes the socket; the server ends the dump thread when it notices.
}

Status ReplicationSession::RegisterReplica(const ReplicationOptions& options) {
  // COM_REGISTER_SLAVE: server_id u32 | host len u8 + host | user len u8 (0) |
  // password len u8 (0) | port u16 | rank u32 (0) | master_id u32 (0).
  std::string host = options.replica_host.empty() ? "sluice" : options.replica_host;
  if (host.size() > 255) host.resize(255);
  std::string body;
  PutLe(&body, options.server_id, 4);
  body.push_back(static_cast<char>(host.size()));
  body += host;
  body.push_back(0);
  body.push_back(0);
  PutLe(&body, 0, 2);
  PutLe(&body, 0, 4);
  PutLe(&body, 0, 4);
  MYSQL* m = conn_->handle();
  if (m->methods->db_command(m, COM_REGISTER_SLAVE, body.data(), body.size(), 0, nullptr) != 0)
    return FetchError().WithContext("COM_REGISTER_SLAVE");
  return Status::Ok();
}

Status ReplicationSession::SendMysqlGtidDump(const ReplicationOptions& options) {
  ASSIGN_OR_RETURN(std::string sids, EncodeMysqlGtidSet(options.gtid));
  uint16_t flags = kBinlogThroughGtid;
  if (options.non_blocking) flags |= kBinlogDumpNonBlock;
  std::string body;
  PutLe(&body, flags, 2);
  PutLe(&body, options.server_id, 4);
  PutLe(&body, 0, 4);  // binlog name length: empty, the server finds the file from the set
  PutLe(&body, 4, 8);  // position
  PutLe(&body, sids.size(), 4);
  body += sids;
  MYSQL* m = conn_->handle();
  if (m->methods->db_command(m, static_cast<enum enum_server_command>(kComBinlogDumpGtid),
                             body.data(), body.size(), 1, nullptr) != 0)
    return FetchError().WithContext("COM_BINLOG_DUMP_GTID");
  return Status::Ok();
}

Status ReplicationSession::FetchError() {
  MYSQL* m = conn_->handle();
  unsigned int err = mysql_errno(m);
  // MariaDB's ER_SLAVE_SAME_ID (4052; not in Connector/C's list), and MySQL's 1236 with the
  // same words: another replica connected with this server_id and the server dropped this
  // connection for it. Connecting again would drop that one in turn.
  if (err == 4052 || (err == ER_MASTER_FATAL_ERROR_READING_BINLOG &&
                      std::string_view(mysql_error(m)).find("same server_uuid/server_id") !=
                          std::string_view::npos)) {
    return Status::FailedPrecondition(RedactSecret(
        fmt::format("the server {} dropped this replication connection: another replica connected with the "
                    "same server_id ({}), so this run stops rather than drop that one in turn. Give every "
                    "pipeline and replica of the server its own source.server_id (SHOW SLAVE HOSTS on the "
                    "server lists the one that has it now). Server said: [{}] {}",
                    conn_->options().Describe(), server_id_, err, mysql_error(m)),
        conn_->options().password));
  }
  if (err == ER_MASTER_FATAL_ERROR_READING_BINLOG) {
    std::string msg = fmt::format("binlog dump from {} failed: [{}] {}",
                                  conn_->options().Describe(), err, mysql_error(m));
    msg = RedactSecret(std::move(msg), conn_->options().password);
    std::string_view server_msg = mysql_error(m);
    if (server_msg.find("checksum") != std::string_view::npos)
      return Status::FailedPrecondition(std::move(msg));
    // Say what was needed, that it is gone, what the server still has, and what to do. The
    // dump connection is in an error state: ask on a second one.
    std::string oldest = "unknown (SHOW BINARY LOGS failed)";
    if (auto side = Connection::Connect(conn_->options()); side.ok()) {
      if (auto logs = ListBinaryLogs(**side); logs.ok())
        oldest = logs->empty() ? "none" : logs->front().first;
    }
    return Status::DataLoss(fmt::format(
        "the resume position {} is no longer on the server {}: its binlogs were purged, or its "
        "binlog history was reset (RESET MASTER) or restored from an older backup; the oldest binlog "
        "it has is {}. This replica cannot be continued: take a new snapshot into a new destination "
        "(a new sink.path, snapshot.mode = \"initial\"). Server said: {}",
        requested_, conn_->options().Describe(), oldest, msg));
  }
  Status st = conn_->LastError("binlog dump");
  const auto silent = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - last_packet_);
  if (st.code() == StatusCode::kUnavailable && read_timeout_s_ > 0 &&
      silent.count() + 1 >= static_cast<long long>(read_timeout_s_)) {
    // The read timed out: the server sent neither an event nor a heartbeat (a dead network,
    // a hung server), which the client library reports as a lost connection.
    st = Status::Unavailable(fmt::format("{}; nothing arrived from the server for {} s, neither an event nor a "
                                         "heartbeat (the read timeout is twice source.heartbeat_seconds plus 5 s)",
                                         st.message(), silent.count()));
  }
  if (st.code() == StatusCode::kUnavailable || err == 0) {
    if (err == 0) return Status::Unavailable(st.message());
    return st;
  }
  // Other server errors during a dump (duplicate server_id, privileges, unknown command)
  // need a person.
  return Status::FailedPrecondition(st.message());
}

Result<std::span<const uint8_t>> ReplicationSession::Fetch() {
  if (ended_) return std::span<const uint8_t>();
  MYSQL* m = conn_->handle();
  unsigned long len = mysql_net_read_packet(m);
  if (len == packet_error || len == static_cast<unsigned long>(-1)) return FetchError();
  if (read_timeout_s_ > 0) last_packet_ = std::chrono::steady_clock::now();
  const uint8_t* p = m->net.read_pos;
  if (len == 0 || p == nullptr)
    return Status::Corruption(fmt::format("empty packet in the binlog stream from {}",
                                          conn_->options().Describe()));
  if (p[0] == 0xFE && len < 9) {
    if (non_blocking_) {
      ended_ = true;
      return std::span<const uint8_t>();
    }
    return Status::Unavailable(fmt::format("the server {} ended the binlog stream",
                                           conn_->options().Describe()));
  }
  if (p[0] != 0x00)
    return Status::Corruption(fmt::format(
        "binlog stream packet starts with 0x{:02x}, expected 0x00 (OK)", p[0]));
  std::span<const uint8_t> ev(p + 1, len - 1);
  if (ev.size() < kEventHeaderSize)
    return Status::Corruption(fmt::format(
        "binlog stream packet of {} bytes is shorter than an event header", len));
  uint32_t event_size = static_cast<uint32_t>(ev[9]) | (static_cast<uint32_t>(ev[10]) << 8) |
                        (static_cast<uint32_t>(ev[11]) << 16) |
                        (static_cast<uint32_t>(ev[12]) << 24);
  if (event_size != ev.size())
    return Status::Corruption(fmt::format(
        "binlog stream event of type {} has event_size {} but the packet carries {} bytes",
        ev[4], event_size, ev.size()));
  return ev;
}

}  // namespace sluice
