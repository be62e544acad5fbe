#include "mysql/server_probe.h"

#include <charconv>
#include <map>
#include <random>
#include <set>

#include "mysql/schema_loader.h"
#include "schema/text_value.h"

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

namespace {

// "user@host" of CURRENT_USER() as 'user'@'host' for GRANT statements in fixes.
std::string GranteeForFix(Connection& conn) {
  auto r = conn.Query("SELECT CURRENT_USER()");
  if (!r.ok() || r->rows.empty() || !r->rows[0][0]) return "<user>";
  const std::string& u = *r->rows[0][0];
  auto at = u.rfind('@');
  if (at == std::string::npos) return "'" + u + "'";
  return "'" + u.substr(0, at) + "'@'" + u.substr(at + 1) + "'";
}

// Access errors (1044, 1045, 1142, 1143, 1227, ...) map to kFailedPrecondition.
bool IsAccessError(const Status& st) { return st.code() == StatusCode::kFailedPrecondition; }

}  // namespace

Result<std::vector<ServerCheck>> CheckPrivileges(Connection& conn,
                                                 const std::vector<std::string>& include_patterns) {
  std::vector<ServerCheck> out;
  const std::string grantee = GranteeForFix(conn);
  const bool mariadb = conn.server_version().find("MariaDB") != std::string::npos;

  // Global privileges from SHOW GRANTS: "GRANT A, B ON *.* TO ...". And the databases with
  // SELECT on all their tables ("GRANT SELECT, ... ON `db`.* TO ..."), to tell a pattern whose
  // tables are granted one by one: a table without its own grant is invisible to the user.
  std::set<std::string> global;
  std::set<std::string> db_select;
  bool grants_known = false, has_roles = false;
  if (Result<QueryResult> g = conn.Query("SHOW GRANTS"); g.ok()) {
    grants_known = true;
    for (const TextRow& row : g->rows) {
      if (row.empty() || !row[0]) continue;
      const std::string& line = *row[0];
      if (line.rfind("GRANT ", 0) != 0) continue;
      auto on = line.find(" ON *.* TO ");
      if (on == std::string::npos) {
        const auto db_on = line.find(" ON `");
        if (line.find(" ON ") == std::string::npos) has_roles = true;  // GRANT role TO user
        if (db_on == std::string::npos) continue;
        const std::string privs = Upper(line.substr(6, db_on - 6));
        const auto db_end = line.find("`.* TO ", db_on + 5);
        if (db_end != std::string::npos &&
            (privs.find("SELECT") != std::string::npos || privs.find("ALL PRIVILEGES") != std::string::npos)) {
          std::string db;  // backquotes doubled inside the name
          for (size_t i = db_on + 5; i < db_end; ++i) {
            db += line[i];
            if (line[i] == '`' && i + 1 < db_end && line[i + 1] == '`') ++i;
          }
          db_select.insert(db);
        }
        continue;
      }
      std::string privs = line.substr(6, on - 6);
      size_t start = 0;
      while (start <= privs.size()) {
        size_t comma = privs.find(", ", start);
        global.insert(Upper(privs.substr(start, comma == std::string::npos ? std::string::npos
                                                                             : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 2;
      }
    }
  } else if (g.status().code() == StatusCode::kUnavailable) {
    return g.status();
  }
  {
    ServerCheck c;
    c.name = "REPLICATION SLAVE privilege";
    bool has = global.count("ALL PRIVILEGES") || global.count("REPLICATION SLAVE");
    if (!grants_known) {
      c.passed = true;
      c.detail = "not checked (SHOW GRANTS failed); the binlog dump will tell";
    } else if (has) {
      c.passed = true;
      c.detail = "granted";
    } else if (has_roles) {
      c.passed = true;
      c.detail = "not granted directly; may come from a role (not checked)";
    } else {
      c.detail = "SHOW GRANTS lists no global REPLICATION SLAVE: the binlog cannot be streamed";
      c.fix = fmt::format("GRANT REPLICATION SLAVE ON *.* TO {}", grantee);
    }
    out.push_back(std::move(c));
  }
  {
    ServerCheck c;
    c.name = "REPLICATION CLIENT privilege";
    Result<QueryResult> r = conn.Query("SHOW BINARY LOGS");
    if (r.ok() || !IsAccessError(r.status())) {
      if (!r.ok() && r.status().code() == StatusCode::kUnavailable) return r.status();
      c.passed = true;
      c.detail = "SHOW BINARY LOGS allowed";
    } else {
      c.detail = "SHOW BINARY LOGS is refused: " + r.status().message();
      c.fix = fmt::format("GRANT {} ON *.* TO {}", mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT",
                          grantee);
    }
    out.push_back(std::move(c));
  }

  if (!mariadb) {
    // MySQL pins the snapshot point with a brief LOCK TABLES ... READ (docs/design.md).
    ServerCheck c;
    c.name = "LOCK TABLES privilege";
    if (!grants_known || has_roles) {
      c.passed = true;
      c.detail = grants_known ? "not granted directly; may come from a role (not checked)"
                              : "not checked (SHOW GRANTS failed)";
    } else if (global.count("ALL PRIVILEGES") || global.count("LOCK TABLES")) {
      c.passed = true;
      c.detail = "granted";
    } else {
      c.detail = "SHOW GRANTS lists no global LOCK TABLES: the snapshot cannot pin its binlog point";
      c.fix = fmt::format("GRANT LOCK TABLES ON *.* TO {}", grantee);
    }
    out.push_back(std::move(c));
  }

  // SELECT on the selected tables.
  ASSIGN_OR_RETURN(QueryResult visible,
                   conn.Query("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                              "WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')" +
                              SchemaScope(conn, include_patterns) + " ORDER BY TABLE_SCHEMA, TABLE_NAME"));
  for (const std::string& pattern : include_patterns) {
    ServerCheck c;
    c.name = "SELECT on " + pattern;
    auto dot = pattern.find('.');
    std::string db = pattern.substr(0, dot);
    std::string table = dot == std::string::npos ? "" : pattern.substr(dot + 1);
    std::string db_fix = HasWildcard(db) ? "<db>" : QuoteIdentifier(db);
    std::vector<std::string> denied;
    size_t matched = 0;
    for (const TextRow& row : visible.rows) {
      if (row.size() < 2 || !row[0] || !row[1] || !PatternMatchesTable(pattern, *row[0], *row[1]))
        continue;
      ++matched;
      Status st = conn.Execute(fmt::format("SELECT 1 FROM {}.{} LIMIT 0", QuoteIdentifier(*row[0]),
                                           QuoteIdentifier(*row[1])));
      if (st.code() == StatusCode::kUnavailable) return st;
      if (IsAccessError(st)) denied.push_back(*row[0] + "." + *row[1]);
    }
    if (matched > 0) {
      c.passed = denied.empty();
      if (c.passed) {
        c.detail = fmt::format("{} table(s), all readable", matched);
        // A wildcard over a database whose tables are granted one by one: the others are not
        // listed here, nor captured (a new user's probe: 2 of 7 tables, PASS).
        if (HasWildcard(table) && !HasWildcard(db) && grants_known && !has_roles && !global.count("SELECT") &&
            !global.count("ALL PRIVILEGES") && !db_select.count(db))
          c.detail += fmt::format(
              "; but SELECT is granted on single tables of {} only: a table without a grant of its own is "
              "invisible to this user, so it is neither listed here nor captured (GRANT SELECT ON {}.* TO {} "
              "to capture every table {} matches)",
              db, db_fix, grantee, pattern);
      } else {
        std::string list;
        for (size_t i = 0; i < denied.size() && i < 10; ++i) list += (i ? ", " : "") + denied[i];
        if (denied.size() > 10) list += fmt::format(" and {} more", denied.size() - 10);
        c.detail = fmt::format("no SELECT privilege on {} of {} table(s): {}", denied.size(),
                               matched, list);
        c.fix = fmt::format("GRANT SELECT ON {}.* TO {}", db_fix, grantee);
      }
    } else if (!HasWildcard(db)) {
      // Nothing visible: a table the user has no privilege on is invisible, so ask directly.
      Status st = conn.Execute("SHOW CREATE DATABASE " + QuoteIdentifier(db));
      if (st.code() == StatusCode::kUnavailable) return st;
      if (IsAccessError(st)) {
        c.detail = fmt::format("the user has no privilege on database {} (or it does not exist)", db);
        c.fix = fmt::format("GRANT SELECT ON {}.* TO {}", db_fix, grantee);
      } else if (!HasWildcard(table)) {
        st = conn.Execute(fmt::format("SELECT 1 FROM {}.{} LIMIT 0", QuoteIdentifier(db),
                                      QuoteIdentifier(table)));
        if (st.code() == StatusCode::kUnavailable) return st;
        if (IsAccessError(st)) {
          c.detail = fmt::format("no SELECT privilege on {}.{}", db, table);
          c.fix = fmt::format("GRANT SELECT ON {}.{} TO {}", db_fix, QuoteIdentifier(table), grantee);
        } else {
          c.passed = true;
          c.detail = "no such table (nothing to check)";
        }
      } else {
        c.passed = true;
        c.detail = "no table matches (nothing to check)";
      }
    } else {
      c.passed = true;
      c.detail = "no visible table matches (tables the user has no privilege on are invisible)";
    }
    out.push_back(std::move(c));
  }
  return out;
}

Status FailedChecks(const std::vector<ServerCheck>& checks) {
  std::string msg;
  for (const ServerCheck& c : checks) {
    if (c.passed) continue;
    msg += fmt::format("{}{}: {} (fix: {})", msg.empty() ? "" : "; ", c.name, c.detail, c.fix);
  }
  if (msg.empty()) return Status::Ok();
  return Status::FailedPrecondition("the source user lacks what sluice needs: " + msg);
}

Result<bool> SameServer(Connection& conn, Connection& other, std::string* evidence) {
  std::random_device random;
  std::string name = "sluice-self-";
  for (int i = 0; i < 4; ++i) name += fmt::format("{:08x}", random());
  Result<QueryResult> got = conn.Query("SELECT GET_LOCK(" + conn.Quote(name) + ", 0)");
  if (got.ok() && got->rows.size() == 1 && got->rows[0].size() == 1 && got->rows[0][0] == "1") {
    Result<QueryResult> used = other.Query("SELECT IS_USED_LOCK(" + other.Quote(name) + ")");
    Result<QueryResult> released = conn.Query("SELECT RELEASE_LOCK(" + conn.Quote(name) + ")");
    if (!used.ok()) return used.status();
    if (!released.ok()) return released.status();
    if (evidence) *evidence = "a user lock taken on one is held on the other";
    return !used->rows.empty() && !used->rows[0].empty() && used->rows[0][0].has_value();
  }
  if (!got.ok() && got.status().code() == StatusCode::kUnavailable) return got.status();
  // No user lock on this server: the identity it reports.
  static constexpr std::string_view kIdentity = "SELECT @@hostname, @@port, @@datadir, @@server_id";
  ASSIGN_OR_RETURN(QueryResult mine, conn.Query(kIdentity));
  ASSIGN_OR_RETURN(QueryResult theirs, other.Query(kIdentity));
  if (evidence) *evidence = "both report the same @@hostname, @@port, @@datadir and @@server_id";
  return mine.rows == theirs.rows;
}

}  // namespace sluice
