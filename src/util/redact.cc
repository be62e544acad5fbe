#include "util/redact.h"

#include <utility>

namespace sluice {
namespace {

// The [begin, end) of the userinfo of `url` (without its '@'); begin == end: none.
std::pair<size_t, size_t> Userinfo(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return {0, 0};
  const size_t start = sep + 3;
  size_t end = url.find_first_of("/?#", start);
  if (end == std::string_view::npos) end = url.size();
  const size_t at = url.substr(0, end).rfind('@');
  if (at == std::string_view::npos || at < start) return {0, 0};
  return {start, at + 1};  // '@' kept out below; an empty userinfo ("nats://@h") counts
}

}  // namespace

std::string RedactOneUrlCredentials(std::string_view one) {
  const auto [begin, end] = Userinfo(one);
  if (begin == end) return std::string(one);
  const std::string_view info = one.substr(begin, end - 1 - begin);
  const size_t colon = info.find(':');
  std::string out(one.substr(0, begin));
  if (colon != std::string_view::npos) out.append(info.substr(0, colon)).append(":");
  out.append("***");
  out.append(one.substr(end - 1));
  return out;
}

std::string RedactUrlCredentials(std::string_view urls) {
  std::string out;
  for (size_t at = 0; at <= urls.size();) {
    size_t comma = urls.find(',', at);
    if (comma == std::string_view::npos) comma = urls.size();
    out += RedactOneUrlCredentials(urls.substr(at, comma - at));
    if (comma < urls.size()) out.push_back(',');
    at = comma + 1;
  }
  return out;
}

bool UrlHasCredentials(std::string_view urls) {
  for (size_t at = 0; at <= urls.size();) {
    size_t comma = urls.find(',', at);
    if (comma == std::string_view::npos) comma = urls.size();
    const auto [begin, end] = Userinfo(urls.substr(at, comma - at));
    if (begin != end) return true;
    at = comma + 1;
  }
  return false;
}

}  // namespace sluice
