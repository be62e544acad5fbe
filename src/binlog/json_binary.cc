// MySQL binary JSON -> text. See json_binary.h for the grammar and the printing rules.
#include "binlog/json_binary.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "binlog/decimal.h"
#include "binlog/temporal.h"

namespace sluice::binlog {
namespace {

enum JsonbType : uint8_t {
  kSmallObject = 0x00,
  kLargeObject = 0x01,
  kSmallArray = 0x02,
  kLargeArray = 0x03,
  kLiteral = 0x04,
  kInt16 = 0x05,
  kUint16 = 0x06,
  kInt32 = 0x07,
  kUint32 = 0x08,
  kInt64 = 0x09,
  kUint64 = 0x0A,
  kDouble = 0x0B,
  kString = 0x0C,
  kOpaque = 0x0F,
};

// Field types used inside opaque values (include/field_types.h).
constexpr uint8_t kFieldTimestamp = 7, kFieldDate = 10, kFieldTime = 11, kFieldDatetime = 12,
                  kFieldNewDecimal = 246, kFieldVarString = 253;

class Printer {
 public:
  explicit Printer(std::span<const uint8_t> doc) : doc_(doc), max_out_(16 * doc.size() + 1024) {}

  // Prints the value of `type` whose bytes start at doc_[begin] and end at doc_[end].
  Status Value(uint8_t type, size_t begin, size_t end, int depth, std::string* out) {
    if (depth > kMaxJsonDepth) return Err(begin, "nesting deeper than the limit");
    switch (type) {
      case kSmallObject: return Container(begin, end, false, true, depth, out);
      case kLargeObject: return Container(begin, end, true, true, depth, out);
      case kSmallArray: return Container(begin, end, false, false, depth, out);
      case kLargeArray: return Container(begin, end, true, false, depth, out);
      case kLiteral: {
        RETURN_IF_ERROR(Need(begin, 1, end));
        return Literal(doc_[begin], begin, out);
      }
      case kInt16: case kUint16: case kInt32: case kUint32: case kInt64: case kUint64: {
        size_t n = (type == kInt16 || type == kUint16) ? 2 : (type == kInt32 || type == kUint32) ? 4 : 8;
        RETURN_IF_ERROR(Need(begin, n, end));
        Integer(type, Le(begin, n), out);
        return Status::Ok();
      }
      case kDouble: {
        RETURN_IF_ERROR(Need(begin, 8, end));
        uint64_t bits = Le(begin, 8);
        double d;
        std::memcpy(&d, &bits, sizeof d);
        out->append(FormatJsonDouble(d));
        return Status::Ok();
      }
      case kString: {
        size_t pos = begin;
        ASSIGN_OR_RETURN(uint64_t len, VarLen(&pos, end));
        RETURN_IF_ERROR(Need(pos, len, end));
        Quote(Str(pos, len), out);
        return Status::Ok();
      }
      case kOpaque: return Opaque(begin, end, out);
      default:
        return Err(begin, fmt::format("unknown value type 0x{:02x}", type));
    }
  }

  Status Err(size_t at, std::string_view msg) const {
    return Status::Corruption(fmt::format("binary JSON at byte {}: {}", at, msg));
  }

 private:
  Status Need(size_t pos, uint64_t n, size_t end) const {
    if (pos <= end && n <= end - pos) return Status::Ok();
    return Err(pos, fmt::format("truncated: need {} bytes, {} left", n, pos <= end ? end - pos : 0));
  }
  uint64_t Le(size_t pos, size_t n) const {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{doc_[pos + i]} << (8 * i);
    return v;
  }
  std::string_view Str(size_t pos, size_t n) const {
    return std::string_view(reinterpret_cast<const char*>(doc_.data() + pos), n);
  }
  Result<uint64_t> VarLen(size_t* pos, size_t end) const {
    uint64_t len = 0;
    for (int i = 0; i < 5; ++i) {
      RETURN_IF_ERROR(Need(*pos, 1, end));
      uint8_t b = doc_[(*pos)++];
      len |= uint64_t{b & 0x7Fu} << (7 * i);
      if ((b & 0x80) == 0) return len;
    }
    return Err(*pos, "variable-length size longer than 5 bytes");
  }

  Status Literal(uint8_t v, size_t at, std::string* out) const {
    switch (v) {
      case 0x00: out->append("null"); return Status::Ok();
      case 0x01: out->append("true"); return Status::Ok();
      case 0x02: out->append("false"); return Status::Ok();
    }
    return Err(at, fmt::format("unknown literal 0x{:02x}", v));
  }

  static void Integer(uint8_t type, uint64_t v, std::string* out) {
    switch (type) {
      case kInt16: out->append(fmt::format("{}", static_cast<int16_t>(v))); break;
      case kUint16: out->append(fmt::format("{}", static_cast<uint16_t>(v))); break;
      case kInt32: out->append(fmt::format("{}", static_cast<int32_t>(v))); break;
      case kUint32: out->append(fmt::format("{}", static_cast<uint32_t>(v))); break;
      case kInt64: out->append(fmt::format("{}", static_cast<int64_t>(v))); break;
      default: out->append(fmt::format("{}", v)); break;
    }
  }

  static void Quote(std::string_view s, std::string* out) {
    out->push_back('"');
    for (char ch : s) {
      unsigned char c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\b': out->append("\\b"); break;
        case '\f': out->append("\\f"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          if (c <= 0x1F) {
            out->append(fmt::format("\\u00{:02x}", c));
          } else {
            out->push_back(ch);
          }
      }
    }
    out->push_back('"');
  }

  Status Container(size_t begin, size_t end, bool large, bool object, int depth, std::string* out) {
    const size_t osize = large ? 4 : 2;
    RETURN_IF_ERROR(Need(begin, 2 * osize, end));
    const uint64_t count = Le(begin, osize);
    const uint64_t bytes = Le(begin + osize, osize);
    if (bytes > end - begin) return Err(begin, fmt::format("container size {} exceeds {} bytes", bytes, end - begin));
    const size_t cend = begin + bytes;
    const size_t key_entry = osize + 2;
    const size_t value_entry = 1 + osize;
    const uint64_t header = 2 * osize + count * ((object ? key_entry : 0) + value_entry);
    if (count > bytes || header > bytes)
      return Err(begin, fmt::format("{} elements do not fit in {} bytes", count, bytes));
    out->push_back(object ? '{' : '[');
    for (uint64_t i = 0; i < count; ++i) {
      // Value offsets may point at the same bytes, so a small document could print an
      // exponentially large text. A valid one prints at most ~8 characters per byte.
      if (out->size() > max_out_)
        return Err(begin, fmt::format("text exceeds {} characters: values overlap", max_out_));
      if (i > 0) out->append(", ");
      if (object) {
        size_t ke = begin + 2 * osize + i * key_entry;
        uint64_t koff = Le(ke, osize);
        uint64_t klen = Le(ke + osize, 2);
        if (koff < header || koff > bytes || klen > bytes - koff)
          return Err(ke, fmt::format("key {} out of bounds", i));
        Quote(Str(begin + koff, klen), out);
        out->append(": ");
      }
      size_t ve = begin + 2 * osize + (object ? count * key_entry : 0) + i * value_entry;
      uint8_t type = doc_[ve];
      bool inlined = type == kLiteral || type == kInt16 || type == kUint16 ||
                     (large && (type == kInt32 || type == kUint32));
      if (inlined) {
        if (type == kLiteral) {
          RETURN_IF_ERROR(Literal(doc_[ve + 1], ve + 1, out));
        } else {
          size_t n = (type == kInt16 || type == kUint16) ? 2 : 4;
          Integer(type, Le(ve + 1, n), out);
        }
        continue;
      }
      uint64_t voff = Le(ve + 1, osize);
      if (voff < header || voff >= bytes) return Err(ve, fmt::format("value {} offset {} out of bounds", i, voff));
      RETURN_IF_ERROR(Value(type, begin + voff, cend, depth + 1, out));
    }
    out->push_back(object ? '}' : ']');
    return Status::Ok();
  }

  Status Opaque(size_t begin, size_t end, std::string* out) {
    RETURN_IF_ERROR(Need(begin, 1, end));
    uint8_t field_type = doc_[begin];
    size_t pos = begin + 1;
    ASSIGN_OR_RETURN(uint64_t len, VarLen(&pos, end));
    RETURN_IF_ERROR(Need(pos, len, end));
    auto data = doc_.subspan(pos, len);
    switch (field_type) {
      case kFieldNewDecimal: {
        if (len < 2) return Err(pos, "opaque DECIMAL shorter than 2 bytes");
        int precision = data[0], scale = data[1];
        if (DecimalBinarySize(precision, scale) != len - 2)
          return Err(pos, fmt::format("opaque DECIMAL({},{}) has {} bytes", precision, scale, len - 2));
        auto text = DecimalToString(data.subspan(2), precision, scale);
        if (!text.ok()) return Err(pos, text.status().message());
        out->append(*text);
        return Status::Ok();
      }
      case kFieldDate: case kFieldTime: case kFieldDatetime: case kFieldTimestamp: {
        if (len < 8) return Err(pos, "opaque temporal value shorter than 8 bytes");
        int64_t packed = static_cast<int64_t>(Le(pos, 8));
        out->push_back('"');
        if (field_type == kFieldDate) {
          out->append(FormatPackedDate(packed));
        } else if (field_type == kFieldTime) {
          out->append(FormatPackedTime(packed, 6));
        } else {
          out->append(FormatPackedDatetime(packed, 6));
        }
        out->push_back('"');
        return Status::Ok();
      }
      case kFieldVarString:
        Quote(Str(pos, len), out);
        return Status::Ok();
      default:
        Quote(fmt::format("base64:type{}:{}", field_type, MysqlBase64(data)), out);
        return Status::Ok();
    }
  }

  std::span<const uint8_t> doc_;
  size_t max_out_;  // output bound, see Container
};

}  // namespace

Result<std::string> JsonBinaryToText(std::span<const uint8_t> data) {
  if (data.empty()) return std::string("null");
  Printer p(data);
  std::string out;
  RETURN_IF_ERROR(p.Value(data[0], 1, data.size(), 0, &out));
  return out;
}

std::string FormatJsonDouble(double x) {
  // Shortest round-trip digits (what dtoa mode 4 with 34 digits yields), then MySQL's
  // my_gcvt choice between 'f' and 'e' formats (strings/dtoa.cc), width 34.
  if (!std::isfinite(x)) return "0";  // my_gcvt prints DTOA_OVERFLOW as "0"
  const bool sign = std::signbit(x);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(x), std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits.push_back(c);
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exp10);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;
  const int len = static_cast<int>(digits.size());
  if (digits == "0") decpt = 1;
  int width = 34;
  if (x < 0.) --width;
  const int exp_len = 1 + (decpt >= 101 || decpt <= -99) + (decpt >= 11 || decpt <= -9);
  const bool have_space = (decpt <= 0 ? len - decpt + 2 : decpt < len ? len + 1 : decpt) <= width;
  const bool force_e = decpt <= 0 && width <= 2 - decpt && width >= 3 + exp_len;
  constexpr int kMaxDecptForF = 15;  // DBL_DIG
  const bool use_f =
      (have_space || ((decpt <= width && (decpt >= -1 || (decpt == -2 && (len > 1 || !force_e)))) &&
                      !force_e)) &&
      (!have_space || (decpt >= -kMaxDecptForF + 1 && (decpt <= kMaxDecptForF || len > decpt)));
  std::string out;
  if (sign) out.push_back('-');
  if (use_f) {
    if (decpt <= 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-decpt), '0');
      out.append(digits);
    } else {
      for (int i = 0; i < len; ++i) {
        out.push_back(digits[i]);
        if (i + 1 == decpt && i + 1 < len) out.push_back('.');
      }
      for (int i = len; i < decpt; ++i) out.push_back('0');
    }
  } else {
    int ex = decpt - 1;
    out.push_back(digits[0]);
    if (len > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    if (ex < 0) {
      out.push_back('-');
      ex = -ex;
    }
    out.append(std::to_string(ex));
  }
  if (out.find_first_of(".e") == std::string::npos) out.append(".0");
  return out;
}

std::string MysqlBase64(std::span<const uint8_t> data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t line = 0;
  for (size_t i = 0; i < data.size(); i += 3, line += 4) {
    if (line == 76) {
      out.push_back('\n');
      line = 0;
    }
    uint32_t c = uint32_t{data[i]} << 16;
    if (i + 1 < data.size()) c |= uint32_t{data[i + 1]} << 8;
    if (i + 2 < data.size()) c |= data[i + 2];
    out.push_back(kAlphabet[(c >> 18) & 0x3F]);
    out.push_back(kAlphabet[(c >> 12) & 0x3F]);
    out.push_back(i + 1 < data.size() ? kAlphabet[(c >> 6) & 0x3F] : '=');
    out.push_back(i + 2 < data.size() ? kAlphabet[c & 0x3F] : '=');
  }
  return out;
}

}  // namespace sluice::binlog
