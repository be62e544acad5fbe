// Checkpoint <-> JSON text.
//
// Grammar (version 1, 2 with "schemas", or 3 (4 with "ahead.replayed") with "ahead" and
// "schemas" optional; keys in
// this order when written, unknown keys ignored when read):
//   {
//     "version": 1 | 2 | 3 | 4,                      integer; anything else -> kFailedPrecondition
//     "flavor": "mariadb" | "mysql" | "unknown",
//     "stream_start": {"file": string, "pos": unsigned integer},
//     "witness": {"file": string, "created": n, "event_pos": n, "event_size": n,
//                 "event_hash": n}           optional (checkpoint.h PositionWitness)
//     "gtid": string,                                may be ""
//     "source": {"server_id": n, "server_uuid": string}   optional (absent: not recorded)
//     "snapshot": {
//       "done": bool,
//       "tables": {"<db>.<table>": {"done": bool, "rows": unsigned integer,
//                                   "last_key": [string, ...],
//                                   "copied_at": {"file": string, "pos": n} (optional),
//                                   "read_until": {"file": string, "pos": n} (optional),
//                                   "expected_rows": n (optional),
//                                   "reread": true (optional: an online re-read, see
//                                                   checkpoint.h),
//                                   "db": string (optional: the key's database part),
//                                   "ranges": [{"lower": key, "upper": key, "done": bool,
//                                               "rows": n, "last_key": key,
//                                               "segments": [{"end": key,
//                                                  "file": string, "pos": n}, ...]}, ...]
//                                   (optional)}, ...}
//     A key is an array with one entry per primary-key column: a string when the column's
//     canonical text is valid UTF-8, else {"hex": "<bytes in hex>"} (binary keys).
//     },
//     "filter": {"include": [string...], "exclude": [string...]}   optional
//     "incremental": {"<db>.<table>": {"mode": string, "backfill_done": bool,
//                     "backfill_last_key": key, "backfill_rows": n, "watermark": key,
//                     "run_high": key, "runs": n, "definition": string (optional),
//                     "restart": true (optional)}, ...}                    optional
//     "ahead": {"file": string, "pos": n, "tables": [string...],   optional: others_at and
//               "replayed": {"<db>.<table>": {"file": string, "pos": n}, ...} (optional)}
//                                                   rereading, replayed (checkpoint.h)
//     "schemas": SchemaHistory JSON (schema/schema_history.h)    versions 2 and 3 only
//   }
// Text that is not JSON, a missing "version", or any field of the wrong type or missing is
// kCorruption naming the field.
#include "checkpoint/checkpoint.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "util/hash.h"

namespace sluice {

namespace {

using OJson = nlohmann::ordered_json;
using Json = nlohmann::json;

Status Missing(std::string_view field, std::string_view want) {
  return Status::Corruption(fmt::format("checkpoint: field \"{}\" missing or not {}", field, want));
}

// Each getter returns kCorruption naming `field` when `obj[key]` is absent or of the wrong type.
Result<const Json*> Member(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end()) return Missing(field, "present");
  return &*it;
}

Result<std::string> GetString(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return Missing(field, "a string");
  return it->get<std::string>();
}

Result<uint64_t> GetUnsigned(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_unsigned()) return Missing(field, "an unsigned integer");
  return it->get<uint64_t>();
}

Result<bool> GetBool(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_boolean()) return Missing(field, "a boolean");
  return it->get<bool>();
}

Result<const Json*> GetObject(const Json& obj, const char* key, std::string_view field) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return Missing(field, "an object");
  return &*it;
}

Result<Flavor> ParseFlavor(const std::string& s) {
  if (s == "mariadb") return Flavor::kMariaDB;
  if (s == "mysql") return Flavor::kMySQL;
  if (s == "unknown") return Flavor::kUnknown;
  return Status::Corruption(fmt::format("checkpoint: unknown flavor \"{}\"", s));
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    if (n == 2 && c < 0xC2) return false;  // overlong
    if (n == 3) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return false;
    }
    if (n == 4) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xF0 && c1 < 0x90) || c > 0xF4 || (c == 0xF4 && c1 >= 0x90)) return false;
    }
    i += n;
  }
  return true;
}

OJson KeyToJson(const KeyTexts& key) {
  OJson a = OJson::array();
  for (const std::string& k : key) {
    if (ValidUtf8(k)) {
      a.push_back(k);
    } else {
      std::string hex;
      for (unsigned char c : k) hex += fmt::format("{:02x}", c);
      a.push_back(OJson{{"hex", hex}});
    }
  }
  return a;
}

Result<KeyTexts> KeyFromJson(const Json& obj, const char* name, const std::string& field) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_array()) return Missing(field, "an array");
  KeyTexts out;
  for (const Json& k : *it) {
    if (k.is_string()) {
      out.push_back(k.get<std::string>());
      continue;
    }
    auto h = k.is_object() ? k.find("hex") : k.end();
    if (h == k.end() || !h->is_string() || h->get<std::string>().size() % 2 != 0)
      return Missing(field + "[]", "a string or {\"hex\": even-length hex}");
    const std::string hex = h->get<std::string>();
    std::string bytes;
    for (size_t i = 0; i < hex.size(); i += 2) {
      auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      int a = nib(hex[i]), b = nib(hex[i + 1]);
      if (a < 0 || b < 0) return Missing(field + "[].hex", "hex digits");
      bytes.push_back(static_cast<char>(a * 16 + b));
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

Result<RangeProgress> RangeFromJson(const Json& r, const std::string& field) {
  if (!r.is_object()) return Missing(field, "an object");
  RangeProgress p;
  ASSIGN_OR_RETURN(p.lower, KeyFromJson(r, "lower", field + ".lower"));
  ASSIGN_OR_RETURN(p.upper, KeyFromJson(r, "upper", field + ".upper"));
  ASSIGN_OR_RETURN(p.done, GetBool(r, "done", field + ".done"));
  ASSIGN_OR_RETURN(p.rows, GetUnsigned(r, "rows", field + ".rows"));
  ASSIGN_OR_RETURN(p.last_key, KeyFromJson(r, "last_key", field + ".last_key"));
  auto segs = r.find("segments");
  if (segs == r.end() || !segs->is_array()) return Missing(field + ".segments", "an array");
  for (const Json& sj : *segs) {
    const std::string sf = field + ".segments[]";
    if (!sj.is_object()) return Missing(sf, "an object");
    RangeSegment seg;
    ASSIGN_OR_RETURN(seg.end, KeyFromJson(sj, "end", sf + ".end"));
    ASSIGN_OR_RETURN(seg.point.file, GetString(sj, "file", sf + ".file"));
    ASSIGN_OR_RETURN(seg.point.pos, GetUnsigned(sj, "pos", sf + ".pos"));
    p.segments.push_back(std::move(seg));
  }
  return p;
}

OJson RangeToJson(const RangeProgress& r) {
  OJson segs = OJson::array();
  for (const RangeSegment& s : r.segments)
    segs.push_back(OJson{{"end", KeyToJson(s.end)}, {"file", s.point.file}, {"pos", s.point.pos}});
  return OJson{{"lower", KeyToJson(r.lower)}, {"upper", KeyToJson(r.upper)}, {"done", r.done},
               {"rows", r.rows}, {"last_key", KeyToJson(r.last_key)}, {"segments", std::move(segs)}};
}

Result<Checkpoint> FromParsed(const Json& doc) {
  if (!doc.is_object()) return Status::Corruption("checkpoint: top level is not a JSON object");
  ASSIGN_OR_RETURN(const Json* version, Member(doc, "version", "version"));
  if (!version->is_number_integer()) return Missing("version", "an integer");
  const int64_t v = version->get<int64_t>();
  if (v != Checkpoint::kVersion && v != Checkpoint::kVersionWithSchemas && v != Checkpoint::kVersionWithAhead &&
      v != Checkpoint::kVersionWithReplayed) {
    return Status::FailedPrecondition(
        fmt::format("checkpoint: format version {} is not supported (this sluice reads versions {} to {})",
                    v, Checkpoint::kVersion, Checkpoint::kVersionWithReplayed));
  }
  // Versions 3 and 4 differ only in "ahead.replayed".
  const bool with_ahead = v == Checkpoint::kVersionWithAhead || v == Checkpoint::kVersionWithReplayed;
  Checkpoint cp;
  ASSIGN_OR_RETURN(std::string flavor, GetString(doc, "flavor", "flavor"));
  ASSIGN_OR_RETURN(cp.flavor, ParseFlavor(flavor));
  ASSIGN_OR_RETURN(const Json* start, GetObject(doc, "stream_start", "stream_start"));
  ASSIGN_OR_RETURN(cp.stream_start.file, GetString(*start, "file", "stream_start.file"));
  ASSIGN_OR_RETURN(cp.stream_start.pos, GetUnsigned(*start, "pos", "stream_start.pos"));
  if (auto w = doc.find("witness"); w != doc.end()) {
    if (!w->is_object()) return Missing("witness", "an object");
    ASSIGN_OR_RETURN(cp.witness.file, GetString(*w, "file", "witness.file"));
    ASSIGN_OR_RETURN(cp.witness.event_pos, GetUnsigned(*w, "event_pos", "witness.event_pos"));
    ASSIGN_OR_RETURN(cp.witness.event_hash, GetUnsigned(*w, "event_hash", "witness.event_hash"));
    uint32_t* narrow[] = {&cp.witness.created, &cp.witness.event_size};
    const char* names[] = {"created", "event_size"};
    for (int i = 0; i < 2; ++i) {
      const std::string field = std::string("witness.") + names[i];
      ASSIGN_OR_RETURN(uint64_t n, GetUnsigned(*w, names[i], field));
      if (n > 0xffffffffu) return Missing(field, "a 32-bit unsigned integer");
      *narrow[i] = static_cast<uint32_t>(n);
    }
  }
  ASSIGN_OR_RETURN(cp.gtid, GetString(doc, "gtid", "gtid"));
  if (auto src = doc.find("source"); src != doc.end()) {
    if (!src->is_object()) return Missing("source", "an object");
    ASSIGN_OR_RETURN(uint64_t id, GetUnsigned(*src, "server_id", "source.server_id"));
    if (id > 0xffffffffu) return Missing("source.server_id", "a 32-bit unsigned integer");
    cp.source.server_id = static_cast<uint32_t>(id);
    ASSIGN_OR_RETURN(cp.source.server_uuid, GetString(*src, "server_uuid", "source.server_uuid"));
  }
  ASSIGN_OR_RETURN(const Json* snap, GetObject(doc, "snapshot", "snapshot"));
  ASSIGN_OR_RETURN(cp.snapshot_done, GetBool(*snap, "done", "snapshot.done"));
  ASSIGN_OR_RETURN(const Json* tables, GetObject(*snap, "tables", "snapshot.tables"));
  for (auto it = tables->begin(); it != tables->end(); ++it) {
    const std::string field = "snapshot.tables[\"" + it.key() + "\"]";
    if (!it->is_object()) return Missing(field, "an object");
    TableSnapshotProgress p;
    ASSIGN_OR_RETURN(p.done, GetBool(*it, "done", field + ".done"));
    ASSIGN_OR_RETURN(p.rows, GetUnsigned(*it, "rows", field + ".rows"));
    ASSIGN_OR_RETURN(p.last_key, KeyFromJson(*it, "last_key", field + ".last_key"));
    if (auto e = it->find("expected_rows"); e != it->end()) {
      ASSIGN_OR_RETURN(p.expected_rows, GetUnsigned(*it, "expected_rows", field + ".expected_rows"));
    }
    if (auto rs = it->find("ranges"); rs != it->end()) {
      if (!rs->is_array()) return Missing(field + ".ranges", "an array");
      for (const Json& r : *rs) {
        ASSIGN_OR_RETURN(RangeProgress rp, RangeFromJson(r, field + ".ranges[]"));
        p.ranges.push_back(std::move(rp));
      }
    }
    if (auto rr = it->find("reread"); rr != it->end()) {
      ASSIGN_OR_RETURN(p.reread, GetBool(*it, "reread", field + ".reread"));
    }
    if (it->contains("db")) {
      ASSIGN_OR_RETURN(p.db, GetString(*it, "db", field + ".db"));
      if (!it.key().starts_with(p.db + "."))
        return Status::Corruption(fmt::format("checkpoint: {}.db \"{}\" is not the database part of \"{}\"", field,
                                              p.db, it.key()));
    }
    auto at = it->find("copied_at");
    if (at != it->end()) {
      if (!at->is_object()) return Missing(field + ".copied_at", "an object");
      ASSIGN_OR_RETURN(p.copied_at.file, GetString(*at, "file", field + ".copied_at.file"));
      ASSIGN_OR_RETURN(p.copied_at.pos, GetUnsigned(*at, "pos", field + ".copied_at.pos"));
    }
    if (auto until = it->find("read_until"); until != it->end()) {
      if (!until->is_object()) return Missing(field + ".read_until", "an object");
      ASSIGN_OR_RETURN(p.read_until.file, GetString(*until, "file", field + ".read_until.file"));
      ASSIGN_OR_RETURN(p.read_until.pos, GetUnsigned(*until, "pos", field + ".read_until.pos"));
    }
    cp.tables.emplace(it.key(), std::move(p));
  }
  if (auto f = doc.find("filter"); f != doc.end()) {
    if (!f->is_object()) return Missing("filter", "an object");
    for (const char* key : {"include", "exclude"}) {
      auto list = f->find(key);
      if (list == f->end()) continue;
      if (!list->is_array()) return Missing(std::string("filter.") + key, "an array");
      for (const Json& e : *list) {
        if (!e.is_string()) return Missing(std::string("filter.") + key + "[]", "a string");
        (std::string_view(key) == "include" ? cp.filter_include : cp.filter_exclude).push_back(e.get<std::string>());
      }
    }
  }
  if (auto inc = doc.find("incremental"); inc != doc.end()) {
    if (!inc->is_object()) return Missing("incremental", "an object");
    for (auto it = inc->begin(); it != inc->end(); ++it) {
      const std::string field = "incremental[\"" + it.key() + "\"]";
      if (!it->is_object()) return Missing(field, "an object");
      IncrementalProgress p;
      ASSIGN_OR_RETURN(p.mode, GetString(*it, "mode", field + ".mode"));
      ASSIGN_OR_RETURN(p.backfill_done, GetBool(*it, "backfill_done", field + ".backfill_done"));
      ASSIGN_OR_RETURN(p.backfill_last_key, KeyFromJson(*it, "backfill_last_key", field + ".backfill_last_key"));
      ASSIGN_OR_RETURN(p.backfill_rows, GetUnsigned(*it, "backfill_rows", field + ".backfill_rows"));
      ASSIGN_OR_RETURN(p.watermark, KeyFromJson(*it, "watermark", field + ".watermark"));
      ASSIGN_OR_RETURN(p.run_high, KeyFromJson(*it, "run_high", field + ".run_high"));
      ASSIGN_OR_RETURN(p.runs, GetUnsigned(*it, "runs", field + ".runs"));
      if (it->contains("definition")) {
        ASSIGN_OR_RETURN(p.definition, GetString(*it, "definition", field + ".definition"));
      }
      if (it->contains("restart")) {
        ASSIGN_OR_RETURN(p.restart, GetBool(*it, "restart", field + ".restart"));
      }
      cp.incremental.emplace(it.key(), std::move(p));
    }
  }
  if (auto a = doc.find("ahead"); a != doc.end()) {
    if (!with_ahead) {
      return Status::Corruption(fmt::format(
          "checkpoint: \"ahead\" in a version {} checkpoint (only versions {} and {} have it)", v,
          Checkpoint::kVersionWithAhead, Checkpoint::kVersionWithReplayed));
    }
    if (!a->is_object()) return Missing("ahead", "an object");
    ASSIGN_OR_RETURN(cp.others_at.file, GetString(*a, "file", "ahead.file"));
    ASSIGN_OR_RETURN(cp.others_at.pos, GetUnsigned(*a, "pos", "ahead.pos"));
    auto list = a->find("tables");
    if (list == a->end() || !list->is_array()) return Missing("ahead.tables", "an array");
    for (const Json& e : *list) {
      if (!e.is_string()) return Missing("ahead.tables[]", "a string");
      cp.rereading.push_back(e.get<std::string>());
    }
    if (auto r = a->find("replayed"); r != a->end()) {
      if (v != Checkpoint::kVersionWithReplayed)
        return Status::Corruption(fmt::format("checkpoint: \"ahead.replayed\" in a version {} checkpoint", v));
      if (!r->is_object()) return Missing("ahead.replayed", "an object");
      for (auto it = r->begin(); it != r->end(); ++it) {
        const std::string field = "ahead.replayed." + it.key();
        if (!it->is_object()) return Missing(field, "an object");
        BinlogPosition at;
        ASSIGN_OR_RETURN(at.file, GetString(*it, "file", field + ".file"));
        ASSIGN_OR_RETURN(at.pos, GetUnsigned(*it, "pos", field + ".pos"));
        cp.replayed.emplace(it.key(), std::move(at));
      }
    }
  }
  auto schemas = doc.find("schemas");
  const bool has_schemas = v == Checkpoint::kVersionWithSchemas ||
                           (with_ahead &&
                            (schemas != doc.end() || doc.find("schemas_ref") != doc.end()));
  if (has_schemas) {
    if (auto ref = doc.find("schemas_ref"); schemas == doc.end() && ref != doc.end()) {
      return Status::Corruption(fmt::format(
          "checkpoint: the schema history it refers to (schemas_ref {}) was not found beside it",
          ref->dump()));
    }
    if (schemas == doc.end() || !schemas->is_object()) return Missing("schemas", "an object");
    auto h = SchemaHistory::FromJson(schemas->dump());
    if (!h.ok()) return h.status().WithContext("checkpoint");
    // Every checkpoint written after this one repeats the history: format it once.
    h->CacheJson();
    cp.schemas = std::make_shared<const SchemaHistory>(std::move(h).value());
  }
  return cp;
}

}  // namespace

struct Checkpoint::FrozenSnapshot {
  std::string fingerprint;
  std::string json;  // the "snapshot" object
};

namespace {
// The "snapshot" object written straight into text, byte for byte what nlohmann's dump of
// SnapshotToJson gives (CheckpointRangesTest.SnapshotTextEqualsTheDocumentsDump): it holds
// every range's progress and is made once per applied group, and building it as a document
// first was most of a snapshot with thousands of ranges. False when a string is not UTF-8
// (nlohmann would replace bytes there): the caller then takes the document's way.
class SnapshotText {
 public:
  explicit SnapshotText(std::string* out) : out_(*out) {}

  bool Snapshot(bool snapshot_done, const std::map<std::string, TableSnapshotProgress>& tables) {
    out_ += "{\"done\":";
    Bool(snapshot_done);
    out_ += ",\"tables\":{";
    bool first = true;
    for (const auto& [name, p] : tables) {
      if (!first) out_ += ',';
      first = false;
      if (!String(name)) return false;
      out_ += ":{\"done\":";
      Bool(p.done);
      out_ += ",\"rows\":";
      Number(p.rows);
      out_ += ",\"last_key\":";
      Key(p.last_key);
      if (!p.copied_at.empty()) {
        out_ += ",\"copied_at\":";
        if (!Point(p.copied_at)) return false;
      }
      if (!p.read_until.empty()) {
        out_ += ",\"read_until\":";
        if (!Point(p.read_until)) return false;
      }
      if (p.expected_rows > 0) {
        out_ += ",\"expected_rows\":";
        Number(p.expected_rows);
      }
      if (p.reread) out_ += ",\"reread\":true";
      if (!p.db.empty()) {
        out_ += ",\"db\":";
        if (!String(p.db)) return false;
      }
      if (!p.ranges.empty()) {
        out_ += ",\"ranges\":[";
        for (size_t i = 0; i < p.ranges.size(); ++i) {
          if (i) out_ += ',';
          if (!Range(p.ranges[i])) return false;
        }
        out_ += ']';
      }
      out_ += '}';
    }
    out_ += "}}";
    return true;
  }

 private:
  bool Range(const RangeProgress& r) {
    out_ += "{\"lower\":";
    Key(r.lower);
    out_ += ",\"upper\":";
    Key(r.upper);
    out_ += ",\"done\":";
    Bool(r.done);
    out_ += ",\"rows\":";
    Number(r.rows);
    out_ += ",\"last_key\":";
    Key(r.last_key);
    out_ += ",\"segments\":[";
    for (size_t i = 0; i < r.segments.size(); ++i) {
      if (i) out_ += ',';
      out_ += "{\"end\":";
      Key(r.segments[i].end);
      out_ += ',';
      if (!PointFields(r.segments[i].point)) return false;
      out_ += '}';
    }
    out_ += "]}";
    return true;
  }
  bool Point(const BinlogPosition& p) {
    out_ += '{';
    if (!PointFields(p)) return false;
    out_ += '}';
    return true;
  }
  bool PointFields(const BinlogPosition& p) {
    out_ += "\"file\":";
    if (!String(p.file)) return false;
    out_ += ",\"pos\":";
    Number(p.pos);
    return true;
  }
  // As KeyToJson: UTF-8 texts as strings, others as {"hex": ...}.
  void Key(const KeyTexts& key) {
    out_ += '[';
    for (size_t i = 0; i < key.size(); ++i) {
      if (i) out_ += ',';
      if (ValidUtf8(key[i])) {
        Escaped(key[i]);
      } else {
        out_ += "{\"hex\":\"";
        for (unsigned char c : key[i]) {
          static constexpr char kHex[] = "0123456789abcdef";
          out_ += kHex[c >> 4];
          out_ += kHex[c & 15];
        }
        out_ += "\"}";
      }
    }
    out_ += ']';
  }
  bool String(std::string_view s) {
    if (!ValidUtf8(s)) return false;
    Escaped(s);
    return true;
  }
  // nlohmann's escaping with ensure_ascii off: the quote, the backslash and control
  // characters; \u00xx in lower case for those without a short form.
  void Escaped(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const unsigned char c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\b': out_ += "\\b"; break;
        case '\f': out_ += "\\f"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            static constexpr char kHex[] = "0123456789abcdef";
            out_ += "\\u00";
            out_ += kHex[c >> 4];
            out_ += kHex[c & 15];
          } else {
            out_ += ch;
          }
      }
    }
    out_ += '"';
  }
  void Bool(bool b) { out_ += b ? "true" : "false"; }
  void Number(uint64_t n) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
    out_.append(buf, end);
  }

  std::string& out_;
};

OJson SnapshotToJson(bool snapshot_done, const std::map<std::string, TableSnapshotProgress>& tables) {
  OJson t = OJson::object();
  for (const auto& [name, p] : tables) {
    t[name] = OJson{{"done", p.done}, {"rows", p.rows}, {"last_key", KeyToJson(p.last_key)}};
    if (!p.copied_at.empty())
      t[name]["copied_at"] = OJson{{"file", p.copied_at.file}, {"pos", p.copied_at.pos}};
    if (!p.read_until.empty())
      t[name]["read_until"] = OJson{{"file", p.read_until.file}, {"pos", p.read_until.pos}};
    if (p.expected_rows > 0) t[name]["expected_rows"] = p.expected_rows;
    if (p.reread) t[name]["reread"] = true;
    if (!p.db.empty()) t[name]["db"] = p.db;
    if (!p.ranges.empty()) {
      OJson rs = OJson::array();
      for (const RangeProgress& r : p.ranges) rs.push_back(RangeToJson(r));
      t[name]["ranges"] = std::move(rs);
    }
  }
  return OJson{{"done", snapshot_done}, {"tables", std::move(t)}};
}
// The "snapshot" object's text: SnapshotText, or the document's dump where it declines.
std::string SnapshotJsonText(bool snapshot_done, const std::map<std::string, TableSnapshotProgress>& tables) {
  std::string text;
  if (SnapshotText(&text).Snapshot(snapshot_done, tables)) return text;
  return SnapshotToJson(snapshot_done, tables).dump(-1, ' ', false, OJson::error_handler_t::replace);
}
}  // namespace

std::string SnapshotJsonForTest(bool snapshot_done, const std::map<std::string, TableSnapshotProgress>& tables,
                                bool through_document) {
  if (through_document)
    return SnapshotToJson(snapshot_done, tables).dump(-1, ' ', false, OJson::error_handler_t::replace);
  std::string text;
  if (!SnapshotText(&text).Snapshot(snapshot_done, tables)) return "<declined>";
  return text;
}

std::string Checkpoint::SnapshotFingerprint() const {
  std::string f = snapshot_done ? "1" : "0";
  for (const auto& [name, p] : tables)
    f += fmt::format("|{}:{}:{}:{}:{}:{}:{}:{}", name.size(), p.done, p.rows, p.ranges.size(),
                     p.copied_at.pos, p.read_until.pos, p.reread, p.db.size());
  return f;
}

void Checkpoint::FreezeSnapshotJson() {
  auto frozen = std::make_shared<FrozenSnapshot>();
  frozen->fingerprint = SnapshotFingerprint();
  frozen->json = SnapshotJsonText(snapshot_done, tables);
  frozen_snapshot_ = std::move(frozen);
}

std::string Checkpoint::ToJsonWithoutSchemas() const {
  const bool with_schemas = schemas != nullptr && !schemas->empty();
  const bool frozen = frozen_snapshot_ && frozen_snapshot_->fingerprint == SnapshotFingerprint();
  OJson doc;
  const bool with_replayed = !others_at.empty() && !replayed.empty();
  doc["version"] = with_replayed       ? kVersionWithReplayed
                   : !others_at.empty() ? kVersionWithAhead
                   : with_schemas       ? kVersionWithSchemas
                                        : kVersion;
  doc["flavor"] = std::string(FlavorName(flavor));
  doc["stream_start"] = OJson{{"file", stream_start.file}, {"pos", stream_start.pos}};
  if (!witness.file.empty())
    doc["witness"] = OJson{{"file", witness.file},
                           {"created", witness.created},
                           {"event_pos", witness.event_pos},
                           {"event_size", witness.event_size},
                           {"event_hash", witness.event_hash}};
  doc["gtid"] = gtid;
  if (source.known())
    doc["source"] = OJson{{"server_id", source.server_id}, {"server_uuid", source.server_uuid}};
  // The snapshot object (frozen, or written by SnapshotText) is spliced in where its
  // placeholder is: the first `"snapshot":` of the text is this key, as the strings before it
  // cannot hold an unescaped quote.
  doc["snapshot"] = nullptr;
  if (!filter_include.empty() || !filter_exclude.empty())
    doc["filter"] = OJson{{"include", filter_include}, {"exclude", filter_exclude}};
  if (!incremental.empty()) {
    OJson inc = OJson::object();
    for (const auto& [name, p] : incremental) {
      inc[name] = OJson{{"mode", p.mode},
                        {"backfill_done", p.backfill_done},
                        {"backfill_last_key", KeyToJson(p.backfill_last_key)},
                        {"backfill_rows", p.backfill_rows},
                        {"watermark", KeyToJson(p.watermark)},
                        {"run_high", KeyToJson(p.run_high)},
                        {"runs", p.runs}};
      if (!p.definition.empty()) inc[name]["definition"] = p.definition;
      if (p.restart) inc[name]["restart"] = true;
    }
    doc["incremental"] = std::move(inc);
  }
  if (!others_at.empty()) {
    doc["ahead"] = OJson{{"file", others_at.file}, {"pos", others_at.pos}, {"tables", rereading}};
    if (with_replayed) {
      OJson r = OJson::object();
      for (const auto& [name, at] : replayed) r[name] = OJson{{"file", at.file}, {"pos", at.pos}};
      doc["ahead"]["replayed"] = std::move(r);
    }
  }
  // Replacement never triggers: every string here is UTF-8 we produced; invalid bytes (if a
  // key ever held them) become U+FFFD instead of throwing.
  std::string text = doc.dump(-1, ' ', false, OJson::error_handler_t::replace);
  static constexpr std::string_view kPlaceholder = "\"snapshot\":null";
  const size_t at = text.find(kPlaceholder);
  text.replace(at + kPlaceholder.size() - 4, 4, frozen ? frozen_snapshot_->json : SnapshotJsonText(snapshot_done, tables));
  return text;
}

namespace {
// The history is always the last key, spliced in as text after everything nlohmann wrote; no
// other key of the document is "schemas" or "schemas_ref", and a JSON string cannot hold the
// quote right after a comma unescaped, so the first `,"schemas":{` / `,"schemas_ref":"` of
// a checkpoint text is that key.
constexpr std::string_view kSchemasKey = ",\"schemas\":";
constexpr std::string_view kRefKey = ",\"schemas_ref\":\"";

// 64-bit FNV-1a of the text, and its length. The offset basis lacks a digit of FNV's own
// (1469598103934665603, not 14695981039346656037); stored references were made with it, so it
// stays.
std::string HistoryRef(std::string_view json) {
  return fmt::format("{:016x}-{}", Fnv1a64(json, 1469598103934665603ull), json.size());
}
}  // namespace

std::string Checkpoint::ToJson() const {
  std::string text = ToJsonWithoutSchemas();
  if (schemas != nullptr && !schemas->empty()) {
    // Spliced in as text (the history caches its JSON, schema_history.h): written once per
    // transaction, it is not parsed and dumped again each time.
    text.pop_back();  // '}'
    text += kSchemasKey;
    text += schemas->ToJson();
    text += '}';
  }
  return text;
}

std::string Checkpoint::ToJsonWithRef(const SchemaHistoryText* history) const {
  if (history == nullptr || schemas == nullptr || schemas->empty()) return ToJson();
  std::string text = ToJsonWithoutSchemas();
  text.pop_back();
  text += kRefKey;
  text += history->ref;  // hex digits and '-': nothing to escape
  text += "\"}";
  return text;
}

std::shared_ptr<const SchemaHistoryText> SchemaHistoryTextOf(const SchemaHistory& h) {
  auto out = std::make_shared<SchemaHistoryText>();
  out->json = h.ToJson();
  out->ref = HistoryRef(out->json);
  return out;
}

std::string_view CheckpointSchemasRef(std::string_view text) {
  const size_t at = text.find(kRefKey);
  if (at == std::string_view::npos || !text.ends_with("\"}")) return {};
  const size_t from = at + kRefKey.size();
  if (from + 2 > text.size()) return {};
  return text.substr(from, text.size() - 2 - from);
}

std::string JoinCheckpoint(std::string_view split, std::string_view history_json) {
  const size_t at = split.find(kRefKey);
  if (at == std::string_view::npos || CheckpointSchemasRef(split).empty()) return std::string(split);
  std::string out;
  out.reserve(at + kSchemasKey.size() + history_json.size() + 1);
  out.append(split.substr(0, at));
  out.append(kSchemasKey);
  out.append(history_json);
  out.push_back('}');
  return out;
}

SplitCheckpointText SplitCheckpoint(std::string_view whole) {
  SplitCheckpointText out;
  const size_t at = whole.find(std::string(kSchemasKey) + "{");
  if (at == std::string_view::npos || !whole.ends_with("}")) {
    out.split = std::string(whole);
    return out;
  }
  auto h = std::make_shared<SchemaHistoryText>();
  h->json = std::string(whole.substr(at + kSchemasKey.size(), whole.size() - 1 - at - kSchemasKey.size()));
  h->ref = HistoryRef(h->json);
  out.split = std::string(whole.substr(0, at));
  out.split += kRefKey;
  out.split += h->ref;
  out.split += "\"}";
  out.schemas = std::move(h);
  return out;
}

std::string WholeCheckpoint(const Transaction& txn) {
  if (!txn.schemas) return txn.checkpoint;
  return JoinCheckpoint(txn.checkpoint, txn.schemas->json);
}

std::string SourceIdentity::ToString() const {
  std::string out = fmt::format("server_id {}", server_id);
  if (!server_uuid.empty()) out += ", server_uuid " + server_uuid;
  return out;
}

std::vector<KeyPointPiece> HandoffPieces(const TableSnapshotProgress& table) {
  std::vector<KeyPointPiece> pieces;
  for (size_t i = 0; i < table.ranges.size(); ++i) {
    const RangeProgress& r = table.ranges[i];
    if (!r.done || r.segments.empty()) return {};
    for (size_t j = 0; j < r.segments.size(); ++j) {
      const bool last = j + 1 == r.segments.size();
      KeyPointPiece piece{last ? r.upper : r.segments[j].end, r.segments[j].point};
      // Only the table's last range may end unbounded.
      if (piece.end.empty() && !(last && i + 1 == table.ranges.size())) return {};
      if (!pieces.empty() && pieces.back().point == piece.point) pieces.back().end = piece.end;
      else pieces.push_back(std::move(piece));
    }
  }
  if (!pieces.empty() && !pieces.back().end.empty()) return {};
  return pieces;
}

Result<Checkpoint> Checkpoint::FromJson(const std::string& text) {
  // nlohmann reports errors by exception; none leaves this function.
  try {
    Json doc = Json::parse(text);
    return FromParsed(doc);
  } catch (const Json::parse_error& e) {
    return Status::Corruption(
        fmt::format("checkpoint: not valid JSON at byte {}: {}", e.byte, e.what()));
  } catch (const Json::exception& e) {
    return Status::Corruption(fmt::format("checkpoint: {}", e.what()));
  }
}

}  // namespace sluice
