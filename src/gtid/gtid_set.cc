// Text forms of MySQL GTID sets and MariaDB GTID lists; grammar in gtid_set.h.
#include "gtid/gtid_set.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace sluice::gtid {
namespace {

std::string_view Trim(std::string_view s) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    if (p == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Inserts [first,last] into a sorted, merged interval list.
void InsertInterval(std::vector<GnoInterval>* v, uint64_t first, uint64_t last) {
  auto it = std::lower_bound(v->begin(), v->end(), first,
                             [](const GnoInterval& iv, uint64_t x) {
                               return iv.last != UINT64_MAX && iv.last + 1 < x;
                             });
  // `it` is the first interval that touches or follows [first, last].
  auto end = it;
  while (end != v->end() && (last == UINT64_MAX || end->first <= last + 1)) {
    first = std::min(first, end->first);
    last = std::max(last, end->last);
    ++end;
  }
  it = v->erase(it, end);
  v->insert(it, GnoInterval{first, last});
}

}  // namespace

std::string Uuid::ToString() const {
  std::string out;
  out.reserve(36);
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 15]);
  }
  return out;
}

Result<Uuid> Uuid::Parse(std::string_view text) {
  std::string hex;
  if (text.size() == 36) {
    for (size_t i = 0; i < 36; ++i) {
      bool dash_pos = (i == 8 || i == 13 || i == 18 || i == 23);
      if (dash_pos != (text[i] == '-')) {
        return Status::InvalidArgument(fmt::format("invalid UUID '{}'", text));
      }
      if (!dash_pos) hex.push_back(text[i]);
    }
  } else if (text.size() == 32) {
    hex = std::string(text);
  } else {
    return Status::InvalidArgument(fmt::format("invalid UUID '{}'", text));
  }
  Uuid u;
  for (size_t i = 0; i < 16; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument(fmt::format("invalid UUID '{}'", text));
    u.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return u;
}

bool IsValidTag(std::string_view tag) {
  if (tag.size() > 32) return false;
  for (size_t i = 0; i < tag.size(); ++i) {
    char c = tag[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

Result<MysqlGtidSet> MysqlGtidSet::Parse(std::string_view text) {
  MysqlGtidSet set;
  text = Trim(text);
  if (text.empty()) return set;
  for (std::string_view group : Split(text, ',')) {
    group = Trim(group);
    if (group.empty()) continue;  // MySQL tolerates empty groups ("a,,b")
    auto items = Split(group, ':');
    ASSIGN_OR_RETURN(Uuid uuid, Uuid::Parse(Trim(items[0])));
    std::string tag;
    for (size_t i = 1; i < items.size(); ++i) {
      std::string_view item = Trim(items[i]);
      if (item.empty()) {
        return Status::InvalidArgument(fmt::format("empty item in GTID set '{}'", group));
      }
      if (item[0] < '0' || item[0] > '9') {
        if (!IsValidTag(item)) {
          return Status::InvalidArgument(fmt::format("invalid GTID tag '{}' in '{}'", item, group));
        }
        tag = Lower(item);
        continue;
      }
      uint64_t first = 0, last = 0;
      size_t dash = item.find('-');
      bool ok = dash == std::string_view::npos
                    ? ParseU64(item, &first) && ((last = first), true)
                    : ParseU64(Trim(item.substr(0, dash)), &first) &&
                          ParseU64(Trim(item.substr(dash + 1)), &last);
      if (!ok || first == 0 || last < first) {
        return Status::InvalidArgument(fmt::format("invalid GTID interval '{}' in '{}'", item, group));
      }
      set.AddInterval(uuid, tag, first, last);
    }
  }
  return set;
}

std::string MysqlGtidSet::ToString() const {
  std::string out;
  const Uuid* current = nullptr;
  for (const auto& [key, ivs] : sets_) {
    if (current == nullptr || !(*current == key.first)) {
      if (current != nullptr) out += ',';
      out += key.first.ToString();
      current = &key.first;
    }
    if (!key.second.empty()) {
      out += ':';
      out += key.second;
    }
    for (const auto& iv : ivs) {
      if (iv.first == iv.last) {
        out += fmt::format(":{}", iv.first);
      } else {
        out += fmt::format(":{}-{}", iv.first, iv.last);
      }
    }
  }
  return out;
}

void MysqlGtidSet::Add(const Uuid& uuid, std::string_view tag, uint64_t gno) {
  AddInterval(uuid, tag, gno, gno);
}

void MysqlGtidSet::AddInterval(const Uuid& uuid, std::string_view tag, uint64_t first,
                               uint64_t last) {
  if (last < first) return;
  InsertInterval(&sets_[Key{uuid, Lower(tag)}], first, last);
}

void MysqlGtidSet::AddAll(const MysqlGtidSet& other) {
  for (const auto& [key, ivs] : other.sets_) {
    for (const auto& iv : ivs) InsertInterval(&sets_[key], iv.first, iv.last);
  }
}

bool MysqlGtidSet::Contains(const Uuid& uuid, std::string_view tag, uint64_t gno) const {
  auto it = sets_.find(Key{uuid, Lower(tag)});
  if (it == sets_.end()) return false;
  for (const auto& iv : it->second) {
    if (gno >= iv.first && gno <= iv.last) return true;
  }
  return false;
}

bool MysqlGtidSet::ContainsAll(const MysqlGtidSet& other) const {
  for (const auto& [key, ivs] : other.sets_) {
    auto it = sets_.find(key);
    if (it == sets_.end()) return false;
    for (const auto& iv : ivs) {
      bool covered = false;
      for (const auto& mine : it->second) {
        if (iv.first >= mine.first && iv.last <= mine.last) {
          covered = true;
          break;
        }
      }
      if (!covered) return false;
    }
  }
  return true;
}

std::string MariadbGtid::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

// Made for every transaction the stream reads (twice: its GTID and the position after it),
// where fmt::format was 4% of the decoding thread (issue 8).
void MariadbGtid::AppendTo(std::string* out) const {
  char buf[3 * 20 + 2];
  char* w = std::to_chars(buf, buf + 20, domain_id).ptr;
  *w++ = '-';
  w = std::to_chars(w, w + 20, server_id).ptr;
  *w++ = '-';
  w = std::to_chars(w, w + 20, seq_no).ptr;
  out->append(buf, static_cast<size_t>(w - buf));
}

Result<MariadbGtid> MariadbGtid::Parse(std::string_view text) {
  text = Trim(text);
  auto parts = Split(text, '-');
  uint64_t d = 0, s = 0, q = 0;
  if (parts.size() != 3 || !ParseU64(parts[0], &d) || !ParseU64(parts[1], &s) ||
      !ParseU64(parts[2], &q) || d > UINT32_MAX || s > UINT32_MAX) {
    return Status::InvalidArgument(fmt::format("invalid MariaDB GTID '{}'", text));
  }
  return MariadbGtid{static_cast<uint32_t>(d), static_cast<uint32_t>(s), q};
}

Result<MariadbGtidList> MariadbGtidList::Parse(std::string_view text) {
  MariadbGtidList list;
  text = Trim(text);
  if (text.empty()) return list;
  for (std::string_view item : Split(text, ',')) {
    ASSIGN_OR_RETURN(MariadbGtid g, MariadbGtid::Parse(item));
    for (const auto& e : list.entries_) {
      if (e.domain_id == g.domain_id) {
        return Status::InvalidArgument(
            fmt::format("MariaDB GTID position '{}' names domain {} twice", text, g.domain_id));
      }
    }
    list.Add(g);
  }
  return list;
}

std::string MariadbGtidList::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

void MariadbGtidList::AppendTo(std::string* out) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) out->push_back(',');
    entries_[i].AppendTo(out);
  }
}

void MariadbGtidList::Add(const MariadbGtid& gtid) {
  std::erase_if(entries_, [&](const MariadbGtid& e) { return e.domain_id == gtid.domain_id; });
  AddRaw(gtid);
}

void MariadbGtidList::AddRaw(const MariadbGtid& gtid) {
  auto less = [](const MariadbGtid& a, const MariadbGtid& b) {
    return std::pair(a.domain_id, a.server_id) < std::pair(b.domain_id, b.server_id);
  };
  auto it = std::lower_bound(entries_.begin(), entries_.end(), gtid, less);
  if (it != entries_.end() && it->domain_id == gtid.domain_id && it->server_id == gtid.server_id) {
    *it = gtid;
  } else {
    entries_.insert(it, gtid);
  }
}

bool MariadbGtidList::Contains(const MariadbGtid& gtid) const {
  for (const auto& e : entries_) {
    if (e.domain_id == gtid.domain_id && e.seq_no >= gtid.seq_no) return true;
  }
  return false;
}

}  // namespace sluice::gtid
