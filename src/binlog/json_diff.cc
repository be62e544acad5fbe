// Partial JSON diffs: decode and apply. The binary form and the rules are in json_diff.h.
// The document is parsed into a small tree whose scalars keep their printed text, so
// untouched values print exactly as MySQL printed them.
#include "binlog/json_diff.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "binlog/json_binary.h"
#include "util/byte_reader.h"

namespace sluice::binlog {
namespace {

struct Node {
  enum class Kind : uint8_t { kScalar, kArray, kObject };
  Kind kind = Kind::kScalar;
  std::string raw;                 // kScalar: the token as printed
  std::vector<Node> items;         // kArray: cells; kObject: member values
  std::vector<std::string> keys;   // kObject: decoded member names
  std::vector<std::string> raw_keys;  // kObject: the names as printed (quoted)
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<Node> ParseDocument() {
    ASSIGN_OR_RETURN(Node n, ParseValue(0));
    SkipSpace();
    if (pos_ != s_.size()) return Error("trailing text");
    return n;
  }

 private:
  Status Error(std::string_view what) const {
    return Status::Corruption(fmt::format("JSON document at character {}: {}", pos_, what));
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  Result<std::string> StringToken() {
    const size_t start = pos_;
    if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected a string");
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') pos_ += s_[pos_] == '\\' ? 2 : 1;
    if (pos_ >= s_.size()) return Error("unterminated string");
    ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  Result<Node> ParseValue(int depth) {
    if (depth > kMaxJsonDepth) return Error("nested too deeply");
    SkipSpace();
    if (pos_ >= s_.size()) return Error("unexpected end");
    Node n;
    const char c = s_[pos_];
    if (c == '[' || c == '{') {
      const bool object = c == '{';
      n.kind = object ? Node::Kind::kObject : Node::Kind::kArray;
      ++pos_;
      SkipSpace();
      const char close = object ? '}' : ']';
      if (pos_ < s_.size() && s_[pos_] == close) {
        ++pos_;
        return n;
      }
      while (true) {
        if (object) {
          SkipSpace();
          ASSIGN_OR_RETURN(std::string raw_key, StringToken());
          auto key = nlohmann::json::parse(raw_key, nullptr, false);
          if (key.is_discarded() || !key.is_string()) return Error("bad member name");
          n.keys.push_back(key.get<std::string>());
          n.raw_keys.push_back(std::move(raw_key));
          SkipSpace();
          if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':'");
          ++pos_;
        }
        ASSIGN_OR_RETURN(Node item, ParseValue(depth + 1));
        n.items.push_back(std::move(item));
        SkipSpace();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
          return n;
        }
        return Error("expected ',' or a closing bracket");
      }
    }
    if (c == '"') {
      ASSIGN_OR_RETURN(n.raw, StringToken());
      return n;
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != ']' && s_[pos_] != '}' &&
           s_[pos_] != ' ' && s_[pos_] != '\n')
      ++pos_;
    if (pos_ == start) return Error("expected a value");
    n.raw = std::string(s_.substr(start, pos_ - start));
    return n;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

void Print(const Node& n, std::string* out) {
  switch (n.kind) {
    case Node::Kind::kScalar:
      *out += n.raw;
      return;
    case Node::Kind::kArray:
      out->push_back('[');
      for (size_t i = 0; i < n.items.size(); ++i) {
        if (i) *out += ", ";
        Print(n.items[i], out);
      }
      out->push_back(']');
      return;
    case Node::Kind::kObject:
      out->push_back('{');
      for (size_t i = 0; i < n.items.size(); ++i) {
        if (i) *out += ", ";
        *out += n.raw_keys[i];
        *out += ": ";
        Print(n.items[i], out);
      }
      out->push_back('}');
      return;
  }
}

struct Leg {
  bool is_member = false;
  std::string member;
  uint64_t index = 0;
};

// Json_path::to_string form: '$' then legs ".name", ".\"quoted name\"" or "[n]".
Result<std::vector<Leg>> ParsePath(std::string_view p) {
  auto bad = [&](std::string_view why) {
    return Status::Corruption(fmt::format("JSON diff path '{}': {}", p.substr(0, 200), why));
  };
  if (p.empty() || p[0] != '$') return bad("does not start with '$'");
  std::vector<Leg> legs;
  size_t i = 1;
  while (i < p.size()) {
    if (p[i] == '.') {
      ++i;
      Leg leg;
      leg.is_member = true;
      if (i < p.size() && p[i] == '"') {
        size_t j = i + 1;
        while (j < p.size() && p[j] != '"') j += p[j] == '\\' ? 2 : 1;
        if (j >= p.size()) return bad("unterminated member name");
        auto name = nlohmann::json::parse(p.substr(i, j + 1 - i), nullptr, false);
        if (name.is_discarded() || !name.is_string()) return bad("bad quoted member name");
        leg.member = name.get<std::string>();
        i = j + 1;
      } else {
        size_t j = i;
        while (j < p.size() && p[j] != '.' && p[j] != '[') ++j;
        if (j == i) return bad("empty member name");
        leg.member = std::string(p.substr(i, j - i));
        if (leg.member == "*" || leg.member == "**") return bad("wildcard");
        i = j;
      }
      legs.push_back(std::move(leg));
    } else if (p[i] == '[') {
      size_t j = p.find(']', i);
      if (j == std::string_view::npos || j == i + 1) return bad("bad array index");
      Leg leg;
      for (size_t k = i + 1; k < j; ++k) {
        if (p[k] < '0' || p[k] > '9' || leg.index > (uint64_t{1} << 40)) return bad("bad array index");
        leg.index = leg.index * 10 + static_cast<uint64_t>(p[k] - '0');
      }
      legs.push_back(leg);
      i = j + 1;
    } else if (p[i] == ' ') {
      ++i;
    } else {
      return bad(fmt::format("unexpected '{}'", p[i]));
    }
  }
  if (legs.empty()) return bad("has no legs (the root cannot be a diff target)");
  return legs;
}

// MySQL orders object members by key length, then by bytes (Json_key_comparator).
bool KeyLess(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

int FindMember(const Node& obj, const std::string& key) {
  for (size_t i = 0; i < obj.keys.size(); ++i)
    if (obj.keys[i] == key) return static_cast<int>(i);
  return -1;
}

Status ApplyOne(Node* root, const JsonDiff& d, size_t diff_index) {
  ASSIGN_OR_RETURN(std::vector<Leg> legs, ParsePath(d.path));
  auto fail = [&](std::string_view why) {
    return Status::Corruption(fmt::format("JSON diff #{} ({} {}): {}", diff_index,
                                          static_cast<int>(d.op), d.path.substr(0, 200), why));
  };
  Node* parent = root;
  for (size_t k = 0; k + 1 < legs.size(); ++k) {
    const Leg& leg = legs[k];
    if (leg.is_member) {
      if (parent->kind != Node::Kind::kObject) return fail("path goes through a non-object");
      int at = FindMember(*parent, leg.member);
      if (at < 0) return fail("path not found");
      parent = &parent->items[at];
    } else {
      if (parent->kind != Node::Kind::kArray) return fail("path goes through a non-array");
      if (leg.index >= parent->items.size()) return fail("array index out of range");
      parent = &parent->items[leg.index];
    }
  }
  const Leg& last = legs.back();
  Node value;
  if (d.op != JsonDiff::Op::kRemove) {
    auto parsed = Parser(d.value_text).ParseDocument();
    if (!parsed.ok()) return parsed.status().WithContext(fmt::format("JSON diff #{} value", diff_index));
    value = std::move(*parsed);
  }
  if (last.is_member) {
    if (parent->kind != Node::Kind::kObject) return fail("parent is not an object");
    int at = FindMember(*parent, last.member);
    switch (d.op) {
      case JsonDiff::Op::kReplace:
        if (at < 0) return fail("member to replace not found");
        parent->items[at] = std::move(value);
        return Status::Ok();
      case JsonDiff::Op::kInsert: {
        if (at >= 0) {  // Json_object::add_alias replaces an existing member
          parent->items[at] = std::move(value);
          return Status::Ok();
        }
        size_t pos = 0;
        while (pos < parent->keys.size() && KeyLess(parent->keys[pos], last.member)) ++pos;
        parent->keys.insert(parent->keys.begin() + pos, last.member);
        parent->raw_keys.insert(parent->raw_keys.begin() + pos,
                                nlohmann::json(last.member).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        parent->items.insert(parent->items.begin() + pos, std::move(value));
        return Status::Ok();
      }
      case JsonDiff::Op::kRemove:
        if (at < 0) return fail("member to remove not found");
        parent->keys.erase(parent->keys.begin() + at);
        parent->raw_keys.erase(parent->raw_keys.begin() + at);
        parent->items.erase(parent->items.begin() + at);
        return Status::Ok();
    }
  }
  if (parent->kind != Node::Kind::kArray) return fail("parent is not an array");
  auto& items = parent->items;
  switch (d.op) {
    case JsonDiff::Op::kReplace:
      if (last.index >= items.size()) return fail("cell to replace not found");
      items[last.index] = std::move(value);
      return Status::Ok();
    case JsonDiff::Op::kInsert:
      items.insert(items.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(last.index, items.size())),
                   std::move(value));
      return Status::Ok();
    case JsonDiff::Op::kRemove:
      if (last.index >= items.size()) return fail("cell to remove not found");
      items.erase(items.begin() + static_cast<ptrdiff_t>(last.index));
      return Status::Ok();
  }
  return fail("unknown operation");
}

}  // namespace

Result<std::vector<JsonDiff>> DecodeJsonDiffs(std::span<const uint8_t> data, size_t* consumed) {
  ByteReader outer(data, 0, "JSON diff vector");
  ASSIGN_OR_RETURN(uint32_t length, outer.ReadLe32());
  if (length > outer.remaining())
    return outer.Error(fmt::format("diff vector length {} exceeds the {} bytes left", length, outer.remaining()));
  ASSIGN_OR_RETURN(auto body, outer.ReadBytes(length));
  *consumed = 4 + static_cast<size_t>(length);
  ByteReader r(body, 4, "JSON diff vector");
  std::vector<JsonDiff> out;
  while (!r.empty()) {
    JsonDiff d;
    ASSIGN_OR_RETURN(uint8_t op, r.ReadU8());
    if (op > 2) return r.Error(fmt::format("unknown JSON diff operation {}", op));
    d.op = static_cast<JsonDiff::Op>(op);
    ASSIGN_OR_RETURN(std::string_view path, r.ReadLenEncString());
    d.path = std::string(path);
    if (d.op != JsonDiff::Op::kRemove) {
      ASSIGN_OR_RETURN(uint64_t n, r.ReadLenEnc());
      if (n > r.remaining()) return r.Error(fmt::format("JSON diff value length {} too large", n));
      const uint64_t at = r.absolute_offset();
      ASSIGN_OR_RETURN(auto value, r.ReadBytes(static_cast<size_t>(n)));
      auto text = JsonBinaryToText(value);
      if (!text.ok())
        return text.status().WithContext(fmt::format("JSON diff value at byte {}", at));
      d.value_text = std::move(*text);
    }
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::string> ApplyJsonDiffs(std::string_view doc, const std::vector<JsonDiff>& diffs) {
  ASSIGN_OR_RETURN(Node root, Parser(doc).ParseDocument());
  for (size_t i = 0; i < diffs.size(); ++i) RETURN_IF_ERROR(ApplyOne(&root, diffs[i], i));
  std::string out;
  Print(root, &out);
  return out;
}

std::string JsonDiffsToText(const std::vector<JsonDiff>& diffs) {
  static constexpr const char* kOps[] = {"replace", "insert", "remove"};
  std::string out = "[";
  for (size_t i = 0; i < diffs.size(); ++i) {
    if (i) out += ", ";
    out += fmt::format("{{\"op\": \"{}\", \"path\": {}", kOps[static_cast<int>(diffs[i].op)],
                       nlohmann::json(diffs[i].path).dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace));
    if (diffs[i].op != JsonDiff::Op::kRemove) out += ", \"value\": " + diffs[i].value_text;
    out += "}";
  }
  return out + "]";
}

}  // namespace sluice::binlog
