#include "core/value.h"

#include <charconv>

#include <fmt/format.h>

namespace sluice {

std::string Value::ToText() const {
  char buf[64];
  switch (kind) {
    case Kind::kNull: return "NULL";
    case Kind::kAbsent: return "<absent>";
    case Kind::kInt: return std::to_string(i);
    case Kind::kUInt: return std::to_string(u);
    case Kind::kFloat: {
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(d));
      return std::string(buf, r.ptr);
    }
    case Kind::kDouble: {
      auto r = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, r.ptr);
    }
    case Kind::kText:
    case Kind::kBytes: return s;
  }
  return {};
}

std::string Value::DebugString() const {
  switch (kind) {
    case Kind::kNull: return "NULL";
    case Kind::kAbsent: return "ABSENT";
    case Kind::kInt: return fmt::format("Int({})", i);
    case Kind::kUInt: return fmt::format("UInt({})", u);
    case Kind::kFloat: return fmt::format("Float({})", ToText());
    case Kind::kDouble: return fmt::format("Double({})", ToText());
    case Kind::kText: return fmt::format("Text(\"{}\")", s);
    case Kind::kBytes: {
      std::string hex;
      for (unsigned char c : s) hex += fmt::format("{:02x}", c);
      return fmt::format("Bytes(0x{})", hex);
    }
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kNull:
    case Value::Kind::kAbsent: return true;
    case Value::Kind::kInt: return a.i == b.i;
    case Value::Kind::kUInt: return a.u == b.u;
    case Value::Kind::kFloat:
    case Value::Kind::kDouble: return a.d == b.d || (a.d != a.d && b.d != b.d);
    case Value::Kind::kText:
    case Value::Kind::kBytes: return a.s == b.s;
  }
  return false;
}

}  // namespace sluice
