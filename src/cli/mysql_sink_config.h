// Configuration of the MySQL/MariaDB destination: the [sink.mysql] table of the TOML config
// (docs/config.md, "[sink.mysql]"). Unknown keys and wrong types are kInvalidArgument naming
// the key ("sink.mysql.port: expected an integer in 1..65535"); the password comes from the
// environment variable named by password_env, never from the file.
// Thread safety: pure functions (reads the environment).
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "sink/mysql_sink.h"
#include "util/status.h"

namespace sluice::cli {

[[nodiscard]] Status ParseMysqlSinkConfig(const toml::table& t, std::string_view origin, MysqlSinkOptions* out);

}  // namespace sluice::cli
