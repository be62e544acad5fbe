#include "cli/postgres_config.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>

namespace sluice::cli {

namespace {
constexpr const char* kHoldsPassword =
    "must not hold the password (neither password=, ?password= nor user:password@ in a URI): name its "
    "environment variable in sink.postgres.password_env";
}  // namespace

Status ParsePostgresConfig(const toml::table& t, std::string_view origin, PostgresSinkOptions* o) {
  const auto error = [&](std::string_view key, std::string_view msg) {
    return Status::InvalidArgument(fmt::format("{}: sink.postgres.{}: {}", origin, key, msg));
  };
  std::string password_env;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "conninfo" || key == "password_env") {
      if (!v.is_string()) return error(key, "expected a string");
      (key == "conninfo" ? o->conninfo : password_env) = v.as_string()->get();
    } else if (key == "connect_timeout_seconds") {
      if (!v.is_integer() || v.as_integer()->get() < 1 || v.as_integer()->get() > 3600)
        return error(key, "expected an integer in 1..3600");
      o->connect_timeout_s = static_cast<int>(v.as_integer()->get());
    } else if (key == "schemas") {
      if (!v.is_table()) return error(key, "expected a table of source database = \"schema\"");
      for (const auto& [db, schema] : *v.as_table()) {
        if (!schema.is_string() || schema.as_string()->get().empty())
          return error(fmt::format("schemas.{}", db.str()), "expected a non-empty string");
        if (schema.as_string()->get() == "_sluice")
          return error(fmt::format("schemas.{}", db.str()),
                       "\"_sluice\" holds sluice's own tables (the checkpoint): map the database to another schema");
        o->schemas[std::string(db.str())] = schema.as_string()->get();
      }
    } else {
      return error(key, "unknown key (known: conninfo, password_env, schemas, connect_timeout_seconds)");
    }
  }
  if (o->conninfo.empty()) return error("conninfo", "required");
  // libpq reads it as a connection string when it holds '=' or starts as a URI, else as a
  // database name (PQconnectdbParams, expand_dbname). One libpq cannot parse can never
  // connect: the run would wait for it as for a server that is down.
  const std::string& ci = o->conninfo;
  if (ci.find('=') != std::string::npos || ci.rfind("postgresql://", 0) == 0 || ci.rfind("postgres://", 0) == 0) {
    char* err = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(ci.c_str(), &err);
    if (parsed == nullptr) {
      std::string why = err != nullptr ? err : "libpq cannot parse it (out of memory?)";
      if (err != nullptr) PQfreemem(err);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      return error("conninfo", fmt::format("{} (the libpq connection string: key=value pairs, or a "
                                           "postgresql:// URI)",
                                           why));
    }
    // libpq takes a password from "password=", "?password=" and a URI's userinfo
    // ("postgresql://user:SECRET@host"): none of them may be used, the password would sit in
    // the file and be printed wherever the conninfo is.
    bool password = false;
    for (const PQconninfoOption* p = parsed; p->keyword != nullptr; ++p)
      password = password || (std::strcmp(p->keyword, "password") == 0 && p->val != nullptr);
    PQconninfoFree(parsed);
    if (password) return error("conninfo", kHoldsPassword);
  }
  if (o->conninfo.find("password") != std::string::npos) return error("conninfo", kHoldsPassword);
  if (!password_env.empty()) {
    const char* pw = std::getenv(password_env.c_str());
    if (pw == nullptr) return error("password_env", fmt::format("environment variable {} is not set", password_env));
    o->password = pw;
  }
  return Status::Ok();
}

}  // namespace sluice::cli
