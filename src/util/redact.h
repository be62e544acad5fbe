// Credentials out of text that is printed: a URL (or a comma-separated list of them, as a
// NATS server list is written) with its userinfo masked. For messages, check lines and logs,
// which must never show a password (docs/config.md): the config refuses credentials inside
// URLs, and this is the second line of defence wherever such a URL is shown anyway.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// `urls` with the userinfo of each "scheme://userinfo@host..." masked: "user:password@"
// becomes "user:***@", a lone "token@" becomes "***@". Elements without "://" or without
// '@' before the path are returned unchanged, so is the separating ','.
std::string RedactUrlCredentials(std::string_view urls);

// As RedactUrlCredentials for one URL, whose authority may hold commas (a libpq URI lists
// hosts as "postgresql://u:p@h1:1,h2:2/db").
std::string RedactOneUrlCredentials(std::string_view url);

// Whether some element of `urls` holds userinfo ("user:password@" or "token@").
bool UrlHasCredentials(std::string_view urls);

}  // namespace sluice
