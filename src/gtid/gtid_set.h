// GTID positions of both flavors, as values: parse, format, add, contains.
//
// MySQL (sql/rpl_gtid_set.cc Gtid_set::to_string/add_gtid_text; libs/mysql/gtid/tag.h):
//   set   := group ("," group)*            whitespace and newlines around items ignored
//   group := uuid (":" item)*              item := interval | tag
//   interval := n | n "-" m                 1 <= n <= m, inclusive on both ends
//   tag   := [a-z_][a-z0-9_]{0,31}         case-insensitive, kept lowercase; applies to
//                                            the intervals that follow it in the group
//   ToString() gives MySQL's canonical form: uuids ascending (lowercase), untagged
//   intervals first, then each tag ascending with its intervals, intervals merged:
//   "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,3e11...:alpha:1-3".
// MariaDB (sql/rpl_gtid.cc, gtid_slave_pos / GTID_LIST_EVENT):
//   list := gtid ("," gtid)*   gtid := domain_id "-" server_id "-" seq_no
//   A position holds one GTID per domain; Add() replaces the domain's entry.
// Errors: Parse returns kInvalidArgument naming the bad text.
// Thread safety: plain values, no shared state.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace sluice::gtid {

// A server UUID (16 bytes, RFC 4122 order as written in the binlog).
struct Uuid {
  std::array<uint8_t, 16> bytes{};
  // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase.
  std::string ToString() const;
  // Accepts the 36-character dashed form (any case) or 32 hex digits.
  static Result<Uuid> Parse(std::string_view text);
  friend auto operator<=>(const Uuid&, const Uuid&) = default;
  friend bool operator==(const Uuid&, const Uuid&) = default;
};

// Inclusive range of transaction numbers [first, last].
struct GnoInterval {
  uint64_t first = 0;
  uint64_t last = 0;
  friend bool operator==(const GnoInterval&, const GnoInterval&) = default;
};

// True when `tag` is a valid MySQL GTID tag (empty = untagged is also valid).
bool IsValidTag(std::string_view tag);

// A MySQL GTID set, possibly with tagged GTIDs (MySQL 8.3+).
class MysqlGtidSet {
 public:
  // Key: (uuid, tag); tag "" means untagged.
  using Key = std::pair<Uuid, std::string>;

  static Result<MysqlGtidSet> Parse(std::string_view text);
  std::string ToString() const;

  // Adds one GTID / one inclusive interval. `tag` must be valid (lowercased here).
  void Add(const Uuid& uuid, std::string_view tag, uint64_t gno);
  void AddInterval(const Uuid& uuid, std::string_view tag, uint64_t first, uint64_t last);
  // Adds every GTID of `other`.
  void AddAll(const MysqlGtidSet& other);

  bool Contains(const Uuid& uuid, std::string_view tag, uint64_t gno) const;
  // True when every GTID of `other` is in this set.
  bool ContainsAll(const MysqlGtidSet& other) const;

  bool empty() const { return sets_.empty(); }
  const std::map<Key, std::vector<GnoInterval>>& intervals() const { return sets_; }
  friend bool operator==(const MysqlGtidSet&, const MysqlGtidSet&) = default;

 private:
  std::map<Key, std::vector<GnoInterval>> sets_;  // intervals sorted, merged, non-empty
};

// One MariaDB GTID: domain-server-seq.
struct MariadbGtid {
  uint32_t domain_id = 0;
  uint32_t server_id = 0;
  uint64_t seq_no = 0;
  std::string ToString() const;  // "0-1-42"
  void AppendTo(std::string* out) const;  // appends ToString()'s text (no allocation of its own)
  static Result<MariadbGtid> Parse(std::string_view text);
  friend bool operator==(const MariadbGtid&, const MariadbGtid&) = default;
};

// A MariaDB GTID position/list, sorted by (domain, server).
class MariadbGtidList {
 public:
  static Result<MariadbGtidList> Parse(std::string_view text);  // "" is the empty list
  std::string ToString() const;                                  // "0-1-42,1-2-7"
  void AppendTo(std::string* out) const;                         // appends ToString()'s text

  // Position semantics: replaces any entry of the same domain.
  void Add(const MariadbGtid& gtid);
  // List semantics (GTID_LIST_EVENT): keeps one entry per (domain, server).
  void AddRaw(const MariadbGtid& gtid);
  // True when some entry of the same domain has seq_no >= gtid.seq_no.
  bool Contains(const MariadbGtid& gtid) const;

  const std::vector<MariadbGtid>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  friend bool operator==(const MariadbGtidList&, const MariadbGtidList&) = default;

 private:
  std::vector<MariadbGtid> entries_;
};

}  // namespace sluice::gtid
