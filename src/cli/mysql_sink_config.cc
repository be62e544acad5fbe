#include "cli/mysql_sink_config.h"

#include <cstdlib>
#include <set>

namespace sluice::cli {
namespace {

Status KeyError(std::string_view origin, std::string_view key, std::string_view msg) {
  return Status::InvalidArgument(fmt::format("{}: sink.mysql.{}: {}", origin, key, msg));
}

Status GetString(const toml::table& t, const char* key, std::string* out, std::string_view origin) {
  const toml::node* n = t.get(key);
  if (!n) return Status::Ok();
  if (!n->is_string()) return KeyError(origin, key, "expected a string");
  *out = n->as_string()->get();
  return Status::Ok();
}

}  // namespace

Status ParseMysqlSinkConfig(const toml::table& t, std::string_view origin, MysqlSinkOptions* out) {
  static const std::set<std::string> kKnown = {"host", "port", "user", "password_env", "database", "databases",
                                               "tls", "ca", "cert", "key", "allow_cleartext_auth",
                                               "connect_timeout_seconds", "max_statement_bytes"};
  for (const auto& [k, v] : t) {
    (void)v;
    if (!kKnown.count(std::string(k.str()))) {
      std::string list;
      for (const auto& a : kKnown) list += (list.empty() ? "" : ", ") + a;
      return KeyError(origin, k.str(), fmt::format("unknown key (known: {})", list));
    }
  }
  ConnectOptions& c = out->connect;
  c.config_section = "sink.mysql";  // connection messages name sink.mysql.tls, not source.tls
  RETURN_IF_ERROR(GetString(t, "host", &c.host, origin));
  if (c.host.empty()) return KeyError(origin, "host", "must not be empty");
  if (const toml::node* n = t.get("port")) {
    if (!n->is_integer() || n->as_integer()->get() < 1 || n->as_integer()->get() > 65535)
      return KeyError(origin, "port", "expected an integer in 1..65535");
    c.port = static_cast<uint16_t>(n->as_integer()->get());
  }
  if (const toml::node* n = t.get("connect_timeout_seconds")) {
    if (!n->is_integer() || n->as_integer()->get() < 1 || n->as_integer()->get() > 3600)
      return KeyError(origin, "connect_timeout_seconds", "expected an integer in 1..3600");
    c.connect_timeout_s = static_cast<uint32_t>(n->as_integer()->get());
  }
  if (const toml::node* n = t.get("max_statement_bytes")) {
    if (!n->is_integer() || n->as_integer()->get() < 1024 || n->as_integer()->get() > (1LL << 30))
      return KeyError(origin, "max_statement_bytes", "expected an integer in 1024..1073741824");
    out->max_statement_bytes = static_cast<size_t>(n->as_integer()->get());
  }
  RETURN_IF_ERROR(GetString(t, "user", &c.user, origin));
  if (c.user.empty()) return KeyError(origin, "user", "missing; the destination user");
  std::string password_env;
  RETURN_IF_ERROR(GetString(t, "password_env", &password_env, origin));
  if (!password_env.empty()) {
    const char* pw = std::getenv(password_env.c_str());
    if (!pw) return KeyError(origin, "password_env", fmt::format("environment variable {} is not set", password_env));
    c.password = pw;
    c.password_env = password_env;
    c.password_env_key = "sink.mysql.password_env";
  }
  RETURN_IF_ERROR(GetString(t, "database", &out->database, origin));
  if (out->database.empty()) return KeyError(origin, "database", "must not be empty (it holds _sluice_checkpoint)");
  if (const toml::node* n = t.get("databases")) {
    const toml::table* m = n->as_table();
    if (!m) return KeyError(origin, "databases", "expected a table of source database = \"destination database\"");
    for (const auto& [k, v] : *m) {
      if (!v.is_string() || v.as_string()->get().empty())
        return KeyError(origin, fmt::format("databases.{}", k.str()), "expected a non-empty string");
      out->databases[std::string(k.str())] = v.as_string()->get();
    }
  }
  std::string mode(TlsModeName(c.tls));
  RETURN_IF_ERROR(GetString(t, "tls", &mode, origin));
  std::optional<TlsMode> parsed = ParseTlsMode(mode);
  if (!parsed)
    return KeyError(origin, "tls",
                    fmt::format("'{}' is not one of: disabled, preferred, required, verify_ca, verify_identity", mode));
  c.tls = *parsed;
  RETURN_IF_ERROR(GetString(t, "ca", &c.tls_ca, origin));
  RETURN_IF_ERROR(GetString(t, "cert", &c.tls_cert, origin));
  RETURN_IF_ERROR(GetString(t, "key", &c.tls_key, origin));
  if (const toml::node* n = t.get("allow_cleartext_auth")) {
    if (!n->is_boolean()) return KeyError(origin, "allow_cleartext_auth", "expected true or false");
    c.allow_cleartext_auth = n->as_boolean()->get();
  }
  if (c.tls == TlsMode::kVerifyCa && c.tls_ca.empty())
    return KeyError(origin, "ca", "required with tls = \"verify_ca\": the PEM file of the CA that signed the server certificate");
  if (c.tls_cert.empty() != c.tls_key.empty())
    return KeyError(origin, c.tls_cert.empty() ? "cert" : "key", "cert and key go together");
  return Status::Ok();
}

}  // namespace sluice::cli
