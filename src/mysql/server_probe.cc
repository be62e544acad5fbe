#include "mysql/server_probe.h"

#include <charconv>
#include <map>

namespace sluice {

namespace {

std::string Upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

bool IsOn(const std::string& v) {
  std::string u = Upper(v);
  return u == "ON" || u == "1" || u == "YES" || u == "TRUE";
}

template <typename T>
bool ParseUnsigned(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

void ParseServerVersion(std::string_view version, ServerInfo* info) {
  info->version = std::string(version);
  info->flavor = version.find("MariaDB") != std::string_view::npos ? Flavor::kMariaDB
                                                                    : Flavor::kMySQL;
  // Some MariaDB builds report "5.5.5-10.x.y-MariaDB" over the protocol; skip that prefix.
  if (version.substr(0, 6) == "5.5.5-" && info->flavor == Flavor::kMariaDB)
    version.remove_prefix(6);
  uint32_t parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    uint32_t v = 0;
    bool any = false;
    while (i < version.size() && version[i] >= '0' && version[i] <= '9') {
      v = v * 10 + static_cast<uint32_t>(version[i] - '0');
      ++i;
      any = true;
    }
    if (!any) break;
    parts[k] = v;
    if (i < version.size() && version[i] == '.') ++i;
    else break;
  }
  info->version_major = parts[0];
  info->version_minor = parts[1];
  info->version_patch = parts[2];
}

Result<BinlogPosition> ReadBinlogPosition(Connection& conn) {
  Result<QueryResult> r = conn.Query("SHOW BINARY LOG STATUS");
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kUnavailable) return r.status();
    r = conn.Query("SHOW MASTER STATUS");
    if (!r.ok()) return r.status();
  }
  if (r->rows.empty())
    return Status::FailedPrecondition(
        "the server has binary logging disabled (SHOW MASTER STATUS is empty): start it with "
        "log_bin=ON and binlog_format=ROW");
  int fi = r->ColumnIndex("File");
  int pi = r->ColumnIndex("Position");
  if (fi < 0 || pi < 0 || !r->rows[0][fi] || !r->rows[0][pi])
    return Status::Internal("SHOW MASTER STATUS returned no File/Position columns");
  BinlogPosition pos;
  pos.file = *r->rows[0][fi];
  if (!ParseUnsigned(*r->rows[0][pi], &pos.pos))
    return Status::Internal("SHOW MASTER STATUS returned a bad Position: " + *r->rows[0][pi]);
  return pos;
}

Result<std::vector<std::pair<std::string, uint64_t>>> ListBinaryLogs(Connection& conn) {
  ASSIGN_OR_RETURN(QueryResult r, conn.Query("SHOW BINARY LOGS"));
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const TextRow& row : r.rows) {
    if (row.size() < 2 || !row[0]) continue;
    uint64_t size = 0;
    if (row[1]) (void)ParseUnsigned(*row[1], &size);
    out.emplace_back(*row[0], size);
  }
  return out;
}

Result<ServerInfo> ProbeServer(Connection& conn) {
  ServerInfo info;
  ASSIGN_OR_RETURN(QueryResult v, conn.Query("SELECT @@version"));
  if (v.rows.empty() || !v.rows[0][0]) return Status::Internal("SELECT @@version returned nothing");
  ParseServerVersion(*v.rows[0][0], &info);

  ASSIGN_OR_RETURN(
      QueryResult vars,
      conn.Query("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'log_bin', "
                 "'binlog_format', 'binlog_row_image', 'binlog_row_metadata', "
                 "'binlog_checksum', 'gtid_binlog_pos', 'gtid_strict_mode', 'gtid_domain_id', "
                 "'gtid_mode', 'gtid_executed')"));
  std::map<std::string, std::string> m;
  for (const TextRow& row : vars.rows)
    if (row.size() >= 2 && row[0]) m[*row[0]] = row[1].value_or("");
  auto get = [&](const char* k) -> std::string {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second;
  };
  (void)ParseUnsigned(get("server_id"), &info.server_id);
  info.log_bin = IsOn(get("log_bin"));
  info.binlog_format = Upper(get("binlog_format"));
  info.binlog_row_image = Upper(get("binlog_row_image"));
  info.binlog_row_metadata = Upper(get("binlog_row_metadata"));
  info.binlog_checksum = Upper(get("binlog_checksum"));
  info.gtid_binlog_pos = get("gtid_binlog_pos");
  info.gtid_strict_mode = IsOn(get("gtid_strict_mode"));
  (void)ParseUnsigned(get("gtid_domain_id"), &info.gtid_domain_id);
  info.gtid_mode = Upper(get("gtid_mode"));
  info.gtid_executed = get("gtid_executed");
  // gtid_executed may be printed with newlines between UUIDs.
  std::erase(info.gtid_executed, '\n');

  if (info.log_bin) {
    Result<BinlogPosition> pos = ReadBinlogPosition(conn);
    if (pos.ok()) info.position = std::move(pos).value();
    else if (pos.status().code() == StatusCode::kUnavailable) return pos.status();
  }
  return info;
}

Status CheckReplicationReady(const ServerInfo& info, std::vector<std::string>* warnings) {
  if (!info.log_bin)
    return Status::FailedPrecondition(
        "the server has binary logging off (log_bin=OFF): restart it with log_bin (e.g. "
        "--log-bin=mysql-bin) and binlog_format=ROW");
  if (info.binlog_format != "ROW")
    return Status::FailedPrecondition(fmt::format(
        "the server's binlog_format is {}, sluice needs ROW: SET GLOBAL binlog_format=ROW "
        "(and in the server config) — existing sessions keep their old format until they "
        "reconnect",
        info.binlog_format.empty() ? "unknown" : info.binlog_format));
  auto warn = [&](std::string w) {
    if (warnings != nullptr) warnings->push_back(std::move(w));
  };
  if (!info.binlog_row_image.empty() && info.binlog_row_image != "FULL")
    warn(fmt::format("binlog_row_image is {} (not FULL): updates and deletes carry only some "
                     "columns; the others are reported as absent",
                     info.binlog_row_image));
  if (!info.binlog_row_metadata.empty() && info.binlog_row_metadata != "FULL")
    warn(fmt::format("binlog_row_metadata is {} (not FULL): column names, signedness and "
                     "ENUM/SET labels come from information_schema instead of the binlog",
                     info.binlog_row_metadata));
  if (info.flavor == Flavor::kMySQL && !info.gtid_mode.empty() && info.gtid_mode != "ON")
    warn(fmt::format("gtid_mode is {}: resuming uses binlog file/position only",
                     info.gtid_mode));
  return Status::Ok();
}

}  // namespace sluice
