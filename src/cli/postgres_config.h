// Configuration of the PostgreSQL sink: the [sink.postgres] table of the TOML config
// (docs/config.md):
//   conninfo = "host=127.0.0.1 port=5432 user=sluice dbname=replica"   (required; libpq
//              keywords or a postgresql:// URI, without the password: password=,
//              ?password= and user:password@ are refused)
//   password_env = "PGPASS_VAR"    the environment variable holding the password (optional:
//              libpq's own PGPASSWORD / .pgpass also work)
//   schemas = { sakila = "sakila_copy" }   source database -> PostgreSQL schema (unmapped
//              databases keep their name)
//   connect_timeout_seconds = 10
// Unknown keys and wrong types are kInvalidArgument naming the key.
// Thread safety: pure function (reads the environment).
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "sink/postgres_sink.h"
#include "util/status.h"

namespace sluice::cli {

[[nodiscard]] Status ParsePostgresConfig(const toml::table& t, std::string_view origin, PostgresSinkOptions* out);

}  // namespace sluice::cli
