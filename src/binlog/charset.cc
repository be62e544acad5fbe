// Collation ids -> charset names, and conversion to UTF-8. See charset.h.
#include "binlog/charset.h"

#include <iconv.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace sluice::binlog {
namespace {

struct CollationEntry {
  uint16_t id;
  const char* charset;
};

// MariaDB 10.11: SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS;
// plus MySQL 8.0: 76 (utf8mb3_tolower_ci), 248-250 (gb18030_*), 255-323 (utf8mb4_0900_*).
// Sorted by id.
constexpr CollationEntry kCollations[] = {
    {1, "big5"}, {2, "latin2"}, {3, "dec8"}, {4, "cp850"}, {5, "latin1"}, {6, "hp8"}, {7, "koi8r"},
    {8, "latin1"}, {9, "latin2"}, {10, "swe7"}, {11, "ascii"}, {12, "ujis"}, {13, "sjis"},
    {14, "cp1251"}, {15, "latin1"}, {16, "hebrew"}, {18, "tis620"}, {19, "euckr"}, {20, "latin7"},
    {21, "latin2"}, {22, "koi8u"}, {23, "cp1251"}, {24, "gb2312"}, {25, "greek"}, {26, "cp1250"},
    {27, "latin2"}, {28, "gbk"}, {29, "cp1257"}, {30, "latin5"}, {31, "latin1"}, {32, "armscii8"},
    {33, "utf8mb3"}, {34, "cp1250"}, {35, "ucs2"}, {36, "cp866"}, {37, "keybcs2"}, {38, "macce"},
    {39, "macroman"}, {40, "cp852"}, {41, "latin7"}, {42, "latin7"}, {43, "macce"}, {44, "cp1250"},
    {45, "utf8mb4"}, {46, "utf8mb4"}, {47, "latin1"}, {48, "latin1"}, {49, "latin1"},
    {50, "cp1251"}, {51, "cp1251"}, {52, "cp1251"}, {53, "macroman"}, {54, "utf16"}, {55, "utf16"},
    {56, "utf16le"}, {57, "cp1256"}, {58, "cp1257"}, {59, "cp1257"}, {60, "utf32"}, {61, "utf32"},
    {62, "utf16le"}, {63, "binary"}, {64, "armscii8"}, {65, "ascii"}, {66, "cp1250"},
    {67, "cp1256"}, {68, "cp866"}, {69, "dec8"}, {70, "greek"}, {71, "hebrew"}, {72, "hp8"},
    {73, "keybcs2"}, {74, "koi8r"}, {75, "koi8u"}, {76, "utf8mb3"}, {77, "latin2"}, {78, "latin5"},
    {79, "latin7"}, {80, "cp850"}, {81, "cp852"}, {82, "swe7"}, {83, "utf8mb3"}, {84, "big5"},
    {85, "euckr"}, {86, "gb2312"}, {87, "gbk"}, {88, "sjis"}, {89, "tis620"}, {90, "ucs2"},
    {91, "ujis"}, {92, "geostd8"}, {93, "geostd8"}, {94, "latin1"}, {95, "cp932"}, {96, "cp932"},
    {97, "eucjpms"}, {98, "eucjpms"}, {99, "cp1250"}, {101, "utf16"}, {102, "utf16"},
    {103, "utf16"}, {104, "utf16"}, {105, "utf16"}, {106, "utf16"}, {107, "utf16"}, {108, "utf16"},
    {109, "utf16"}, {110, "utf16"}, {111, "utf16"}, {112, "utf16"}, {113, "utf16"}, {114, "utf16"},
    {115, "utf16"}, {116, "utf16"}, {117, "utf16"}, {118, "utf16"}, {119, "utf16"}, {120, "utf16"},
    {121, "utf16"}, {122, "utf16"}, {123, "utf16"}, {124, "utf16"}, {128, "ucs2"}, {129, "ucs2"},
    {130, "ucs2"}, {131, "ucs2"}, {132, "ucs2"}, {133, "ucs2"}, {134, "ucs2"}, {135, "ucs2"},
    {136, "ucs2"}, {137, "ucs2"}, {138, "ucs2"}, {139, "ucs2"}, {140, "ucs2"}, {141, "ucs2"},
    {142, "ucs2"}, {143, "ucs2"}, {144, "ucs2"}, {145, "ucs2"}, {146, "ucs2"}, {147, "ucs2"},
    {148, "ucs2"}, {149, "ucs2"}, {150, "ucs2"}, {151, "ucs2"}, {159, "ucs2"}, {160, "utf32"},
    {161, "utf32"}, {162, "utf32"}, {163, "utf32"}, {164, "utf32"}, {165, "utf32"}, {166, "utf32"},
    {167, "utf32"}, {168, "utf32"}, {169, "utf32"}, {170, "utf32"}, {171, "utf32"}, {172, "utf32"},
    {173, "utf32"}, {174, "utf32"}, {175, "utf32"}, {176, "utf32"}, {177, "utf32"}, {178, "utf32"},
    {179, "utf32"}, {180, "utf32"}, {181, "utf32"}, {182, "utf32"}, {183, "utf32"},
    {192, "utf8mb3"}, {193, "utf8mb3"}, {194, "utf8mb3"}, {195, "utf8mb3"}, {196, "utf8mb3"},
    {197, "utf8mb3"}, {198, "utf8mb3"}, {199, "utf8mb3"}, {200, "utf8mb3"}, {201, "utf8mb3"},
    {202, "utf8mb3"}, {203, "utf8mb3"}, {204, "utf8mb3"}, {205, "utf8mb3"}, {206, "utf8mb3"},
    {207, "utf8mb3"}, {208, "utf8mb3"}, {209, "utf8mb3"}, {210, "utf8mb3"}, {211, "utf8mb3"},
    {212, "utf8mb3"}, {213, "utf8mb3"}, {214, "utf8mb3"}, {215, "utf8mb3"}, {223, "utf8mb3"},
    {224, "utf8mb4"}, {225, "utf8mb4"}, {226, "utf8mb4"}, {227, "utf8mb4"}, {228, "utf8mb4"},
    {229, "utf8mb4"}, {230, "utf8mb4"}, {231, "utf8mb4"}, {232, "utf8mb4"}, {233, "utf8mb4"},
    {234, "utf8mb4"}, {235, "utf8mb4"}, {236, "utf8mb4"}, {237, "utf8mb4"}, {238, "utf8mb4"},
    {239, "utf8mb4"}, {240, "utf8mb4"}, {241, "utf8mb4"}, {242, "utf8mb4"}, {243, "utf8mb4"},
    {244, "utf8mb4"}, {245, "utf8mb4"}, {246, "utf8mb4"}, {247, "utf8mb4"}, {248, "gb18030"},
    {249, "gb18030"}, {250, "gb18030"}, {255, "utf8mb4"}, {256, "utf8mb4"}, {257, "utf8mb4"},
    {258, "utf8mb4"}, {259, "utf8mb4"}, {260, "utf8mb4"}, {261, "utf8mb4"}, {262, "utf8mb4"},
    {263, "utf8mb4"}, {264, "utf8mb4"}, {265, "utf8mb4"}, {266, "utf8mb4"}, {267, "utf8mb4"},
    {268, "utf8mb4"}, {269, "utf8mb4"}, {270, "utf8mb4"}, {271, "utf8mb4"}, {272, "utf8mb4"},
    {273, "utf8mb4"}, {274, "utf8mb4"}, {275, "utf8mb4"}, {276, "utf8mb4"}, {277, "utf8mb4"},
    {278, "utf8mb4"}, {279, "utf8mb4"}, {280, "utf8mb4"}, {281, "utf8mb4"}, {282, "utf8mb4"},
    {283, "utf8mb4"}, {284, "utf8mb4"}, {285, "utf8mb4"}, {286, "utf8mb4"}, {287, "utf8mb4"},
    {288, "utf8mb4"}, {289, "utf8mb4"}, {290, "utf8mb4"}, {291, "utf8mb4"}, {292, "utf8mb4"},
    {293, "utf8mb4"}, {294, "utf8mb4"}, {295, "utf8mb4"}, {296, "utf8mb4"}, {297, "utf8mb4"},
    {298, "utf8mb4"}, {299, "utf8mb4"}, {300, "utf8mb4"}, {301, "utf8mb4"}, {302, "utf8mb4"},
    {303, "utf8mb4"}, {304, "utf8mb4"}, {305, "utf8mb4"}, {306, "utf8mb4"}, {307, "utf8mb4"},
    {308, "utf8mb4"}, {309, "utf8mb4"}, {310, "utf8mb4"}, {311, "utf8mb4"}, {312, "utf8mb4"},
    {313, "utf8mb4"}, {314, "utf8mb4"}, {315, "utf8mb4"}, {316, "utf8mb4"}, {317, "utf8mb4"},
    {318, "utf8mb4"}, {319, "utf8mb4"}, {320, "utf8mb4"}, {321, "utf8mb4"}, {322, "utf8mb4"},
    {323, "utf8mb4"}, {576, "utf8mb3"}, {577, "utf8mb3"}, {578, "utf8mb3"}, {608, "utf8mb4"},
    {609, "utf8mb4"}, {610, "utf8mb4"}, {640, "ucs2"}, {641, "ucs2"}, {642, "ucs2"},
    {672, "utf16"}, {673, "utf16"}, {674, "utf16"}, {736, "utf32"}, {737, "utf32"}, {738, "utf32"},
    {1025, "big5"}, {1027, "dec8"}, {1028, "cp850"}, {1030, "hp8"}, {1031, "koi8r"},
    {1032, "latin1"}, {1033, "latin2"}, {1034, "swe7"}, {1035, "ascii"}, {1036, "ujis"},
    {1037, "sjis"}, {1040, "hebrew"}, {1042, "tis620"}, {1043, "euckr"}, {1046, "koi8u"},
    {1048, "gb2312"}, {1049, "greek"}, {1050, "cp1250"}, {1052, "gbk"}, {1054, "latin5"},
    {1056, "armscii8"}, {1057, "utf8mb3"}, {1059, "ucs2"}, {1060, "cp866"}, {1061, "keybcs2"},
    {1062, "macce"}, {1063, "macroman"}, {1064, "cp852"}, {1065, "latin7"}, {1067, "macce"},
    {1069, "utf8mb4"}, {1070, "utf8mb4"}, {1071, "latin1"}, {1074, "cp1251"}, {1075, "cp1251"},
    {1077, "macroman"}, {1078, "utf16"}, {1079, "utf16"}, {1080, "utf16le"}, {1081, "cp1256"},
    {1082, "cp1257"}, {1083, "cp1257"}, {1084, "utf32"}, {1085, "utf32"}, {1086, "utf16le"},
    {1088, "armscii8"}, {1089, "ascii"}, {1090, "cp1250"}, {1091, "cp1256"}, {1092, "cp866"},
    {1093, "dec8"}, {1094, "greek"}, {1095, "hebrew"}, {1096, "hp8"}, {1097, "keybcs2"},
    {1098, "koi8r"}, {1099, "koi8u"}, {1101, "latin2"}, {1102, "latin5"}, {1103, "latin7"},
    {1104, "cp850"}, {1105, "cp852"}, {1106, "swe7"}, {1107, "utf8mb3"}, {1108, "big5"},
    {1109, "euckr"}, {1110, "gb2312"}, {1111, "gbk"}, {1112, "sjis"}, {1113, "tis620"},
    {1114, "ucs2"}, {1115, "ujis"}, {1116, "geostd8"}, {1117, "geostd8"}, {1119, "cp932"},
    {1120, "cp932"}, {1121, "eucjpms"}, {1122, "eucjpms"}, {1125, "utf16"}, {1147, "utf16"},
    {1152, "ucs2"}, {1174, "ucs2"}, {1184, "utf32"}, {1206, "utf32"}, {1216, "utf8mb3"},
    {1238, "utf8mb3"}, {1248, "utf8mb4"}, {1270, "utf8mb4"},
};

// MySQL latin1 is Windows-1252 whose five undefined bytes map to the C1 controls.
// Source: MySQL strings/ctype-latin1.cc, cs_to_uni.
constexpr uint16_t kLatin1High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
    0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

// MariaDB keybcs2 (Kamenicky; strings/ctype-extra.c to_uni_keybcs2_general_ci), bytes
// 0x80..0xFF; below 0x80 it is ASCII. glibc iconv has no such charset. Read from MariaDB
// 10.11 with HEX(CONVERT(CONVERT(X'nn' USING keybcs2) USING utf32)).
constexpr uint16_t kKeybcs2High[128] = {
    0x010C, 0x00FC, 0x00E9, 0x010F, 0x00E4, 0x010E, 0x0164, 0x010D, 0x011B, 0x011A, 0x0139,
    0x00CD, 0x013E, 0x013A, 0x00C4, 0x00C1, 0x00C9, 0x017E, 0x017D, 0x00F4, 0x00F6, 0x00D3,
    0x016F, 0x00DA, 0x00FD, 0x00D6, 0x00DC, 0x0160, 0x013D, 0x00DD, 0x0158, 0x0165, 0x00E1,
    0x00ED, 0x00F3, 0x00FA, 0x0148, 0x0147, 0x016E, 0x00D4, 0x0161, 0x0159, 0x0155, 0x0154,
    0x00BC, 0x00A1, 0x00AB, 0x00BB, 0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x2561, 0x2562,
    0x2556, 0x2555, 0x2563, 0x2551, 0x2557, 0x255D, 0x255C, 0x255B, 0x2510, 0x2514, 0x2534,
    0x252C, 0x251C, 0x2500, 0x253C, 0x255E, 0x255F, 0x255A, 0x2554, 0x2569, 0x2566, 0x2560,
    0x2550, 0x256C, 0x2567, 0x2568, 0x2564, 0x2565, 0x2559, 0x2558, 0x2552, 0x2553, 0x256B,
    0x256A, 0x2518, 0x250C, 0x2588, 0x2584, 0x258C, 0x2590, 0x2580, 0x03B1, 0x00DF, 0x0393,
    0x03C0, 0x03A3, 0x03C3, 0x00B5, 0x03C4, 0x03A6, 0x0398, 0x03A9, 0x03B4, 0x221E, 0x03C6,
    0x03B5, 0x2229, 0x2261, 0x00B1, 0x2265, 0x2264, 0x2320, 0x2321, 0x00F7, 0x2248, 0x00B0,
    0x2219, 0x00B7, 0x221A, 0x207F, 0x00B2, 0x25A0, 0x00A0};

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// iconv name for a server charset name; nullptr when there is none.
const char* IconvName(std::string_view cs) {
  static constexpr std::pair<std::string_view, const char*> kNames[] = {
      {"big5", "BIG5"},          {"dec8", "DEC-MCS"},        {"cp850", "CP850"},
      {"hp8", "HP-ROMAN8"},      {"koi8r", "KOI8-R"},        {"latin2", "ISO-8859-2"},
      {"swe7", "ISO646-SE"},     {"ascii", "US-ASCII"},      {"ujis", "EUC-JP"},
      {"sjis", "SHIFT_JIS"},     {"cp1251", "CP1251"},       {"hebrew", "ISO-8859-8"},
      {"tis620", "TIS-620"},     {"euckr", "EUC-KR"},        {"latin7", "ISO-8859-13"},
      {"koi8u", "KOI8-U"},       {"gb2312", "EUC-CN"},       {"greek", "ISO-8859-7"},
      {"cp1250", "CP1250"},      {"gbk", "GBK"},             {"cp1257", "CP1257"},
      {"latin5", "ISO-8859-9"},  {"armscii8", "ARMSCII-8"},  {"ucs2", "UCS-2BE"},
      {"cp866", "CP866"},        {"macce", "MAC-CENTRALEUROPE"}, {"macroman", "MACINTOSH"},
      {"cp852", "CP852"},        {"cp1256", "CP1256"},       {"utf16", "UTF-16BE"},
      {"utf16le", "UTF-16LE"},   {"utf32", "UTF-32BE"},      {"geostd8", "GEORGIAN-PS"},
      {"cp932", "CP932"},        {"eucjpms", "EUC-JP-MS"},   {"gb18030", "GB18030"},
  };
  for (const auto& [name, iconv_name] : kNames)
    if (name == cs) return iconv_name;
  return nullptr;
}

class IconvHandle {
 public:
  explicit IconvHandle(iconv_t h) : h_(h) {}
  ~IconvHandle() {
    if (h_ != reinterpret_cast<iconv_t>(-1)) iconv_close(h_);
  }
  IconvHandle(const IconvHandle&) = delete;
  IconvHandle& operator=(const IconvHandle&) = delete;
  iconv_t get() const { return h_; }
  bool ok() const { return h_ != reinterpret_cast<iconv_t>(-1); }

 private:
  iconv_t h_;
};

Result<std::string> IconvToUtf8(std::string_view charset, const char* from,
                                std::string_view bytes) {
  IconvHandle h(iconv_open("UTF-8", from));
  if (!h.ok())
    return Status::NotSupported(
        fmt::format("charset {} ({}) is not available in iconv", charset, from));
  std::string out;
  out.resize(bytes.size() * 4 + 16);
  char* in_ptr = const_cast<char*>(bytes.data());
  size_t in_left = bytes.size();
  char* out_ptr = out.data();
  size_t out_left = out.size();
  while (in_left > 0) {
    size_t rc = iconv(h.get(), &in_ptr, &in_left, &out_ptr, &out_left);
    if (rc != static_cast<size_t>(-1)) break;
    if (errno == E2BIG) {
      size_t used = out.size() - out_left;
      out.resize(out.size() * 2);
      out_ptr = out.data() + used;
      out_left = out.size() - used;
      continue;
    }
    return Status::Corruption(fmt::format("invalid {} byte sequence at byte {} of {}", charset,
                                          bytes.size() - in_left, bytes.size()));
  }
  out.resize(out.size() - out_left);
  return out;
}

// MariaDB/MySQL sjis is JIS X 0208 Shift_JIS whose single bytes below 0x80 are ASCII
// (0x5C '\\', 0x7E '~'), and whose 0x815F is U+005C as well (strings/ctype-sjis.c,
// tab_sjis_uni0); glibc's SHIFT_JIS maps those to U+00A5, U+203E and U+FF3C. Bytes below
// 0x80 and 0x815F are converted here, every other character by iconv, one run at a time.
Result<std::string> SjisToUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c == 0x81 && i + 1 < bytes.size() && static_cast<unsigned char>(bytes[i + 1]) == 0x5F) {
      out.push_back('\\');
      i += 2;
      continue;
    }
    // A run of multibyte / half-width characters, up to the next ASCII byte or 0x815F.
    size_t j = i;
    while (j < bytes.size()) {
      const unsigned char b = static_cast<unsigned char>(bytes[j]);
      if (b < 0x80) break;
      if (b == 0x81 && j + 1 < bytes.size() && static_cast<unsigned char>(bytes[j + 1]) == 0x5F) break;
      const bool lead = (b >= 0x81 && b <= 0x9F) || (b >= 0xE0 && b <= 0xFC);
      j += lead ? 2 : 1;
    }
    j = std::min(j, bytes.size());
    auto part = IconvToUtf8("sjis", "SHIFT_JIS", bytes.substr(i, j - i));
    if (!part.ok())
      return Status::Corruption(fmt::format("invalid sjis byte sequence at byte {} of {}", i, bytes.size()));
    out += *part;
    i = j;
  }
  return out;
}

}  // namespace

std::string_view CharsetForCollation(uint32_t collation_id) {
  const auto* end = std::end(kCollations);
  const auto* it = std::lower_bound(
      std::begin(kCollations), end, collation_id,
      [](const CollationEntry& e, uint32_t id) { return e.id < id; });
  if (it == end || it->id != collation_id) return {};
  return it->charset;
}

bool IsUtf8Charset(std::string_view cs) {
  return cs == "utf8mb4" || cs == "utf8mb3" || cs == "utf8";
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // Fast path: 16, then 8 ASCII bytes at a time (no byte has its top bit set).
#if defined(__SSE2__)
    while (i + 16 <= n &&
           _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i))) == 0)
      i += 16;
#endif
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

Result<std::string> ToUtf8(std::string_view charset, std::string_view bytes) {
  if (charset == "binary") return std::string(bytes);
  if (IsUtf8Charset(charset)) {
    if (!IsValidUtf8(bytes))
      return Status::Corruption(fmt::format("invalid {} bytes ({} bytes)", charset, bytes.size()));
    return std::string(bytes);
  }
  if (charset == "latin1") {
    std::string out;
    out.reserve(bytes.size() + bytes.size() / 2);
    for (unsigned char c : bytes) {
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if (c < 0xA0) {
        AppendUtf8(kLatin1High[c - 0x80], &out);
      } else {
        AppendUtf8(c, &out);
      }
    }
    return out;
  }
  if (charset == "ascii") {
    bool plain = std::all_of(bytes.begin(), bytes.end(),
                             [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (plain) return std::string(bytes);
  }
  if (charset == "sjis") return SjisToUtf8(bytes);
  if (charset == "keybcs2") {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
      if (c < 0x80) out.push_back(static_cast<char>(c));
      else AppendUtf8(kKeybcs2High[c - 0x80], &out);
    }
    return out;
  }
  const char* name = IconvName(charset);
  if (name == nullptr)
    return Status::NotSupported(fmt::format("no conversion to UTF-8 for charset '{}'", charset));
  return IconvToUtf8(charset, name, bytes);
}

}  // namespace sluice::binlog
