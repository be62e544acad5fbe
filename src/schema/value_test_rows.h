// Test-only: the t.allt table (one column of every MariaDB type) and the canonical
// Values its rows must decode to, shared by binlog/rows_test.cc (binlog path) and
// schema/text_value_live_test.cc (snapshot path). The SQL is kAlltSql; the expected Values
// are what SELECT returns (session time_zone '+00:00').
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/value.h"

namespace sluice::testing_allt {

inline std::string UnhexStr(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

// CREATE TABLE and the three INSERTs (run with sql_mode='', utf8mb4 client).
inline constexpr const char kAlltSql[] = R"sql(SET sql_mode=''; SET time_zone='+00:00';
CREATE TABLE allt (
 id INT NOT NULL PRIMARY KEY,
 ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
 i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
 d65 DECIMAL(65,30), d10 DECIMAL(10,0), d52 DECIMAL(5,2),
 f FLOAT, dbl DOUBLE, b1 BIT(1), b10 BIT(10), b64 BIT(64), y YEAR,
 dt DATE, tm TIME, tm6 TIME(6), tm3 TIME(3), dtm DATETIME, dtm1 DATETIME(1), dtm3 DATETIME(3), dtm6 DATETIME(6),
 ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL,
 c5 CHAR(5) CHARACTER SET utf8mb4, c5l CHAR(5) CHARACTER SET latin1, c255 CHAR(255) CHARACTER SET utf8mb4,
 vc VARCHAR(300) CHARACTER SET utf8mb4, vcl VARCHAR(10) CHARACTER SET latin1,
 bn BINARY(5), vb VARBINARY(10), tt TINYTEXT, tx TEXT, mb MEDIUMBLOB, js JSON,
 e ENUM('a','bb','ccc'), s SET('x','y','z'), g GEOMETRY
) DEFAULT CHARSET=utf8mb4;
INSERT INTO allt VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
 '-99999999999999999999999999999999999.999999999999999999999999999999', -9999999999, -999.99,
 -3.4028235e38, -1.7976931348623157e308, 0, 0, 0, 0,
 '0000-00-00', '-838:59:59', '-838:59:59.000001', '-00:00:00.001', '0000-00-00 00:00:00', '0000-00-00 00:00:00.0', '1000-01-01 00:00:00.001', '1000-01-01 00:00:00.000001',
 '0000-00-00 00:00:00', '1970-01-01 00:00:01.000001',
 '', '', '', '', '', '', '', '', '', '', '[]', '', '', ST_GeomFromText('POINT(1 2)'));
INSERT INTO allt VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
 '99999999999999999999999999999999999.999999999999999999999999999999', 9999999999, 999.99,
 3.4028235e38, 1.7976931348623157e308, 1, 1023, 18446744073709551615, 2155,
 '9999-12-31', '838:59:59', '838:59:59.000000', '-00:00:01.5', '9999-12-31 23:59:59', '9999-12-31 23:59:59.9', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999',
 '2038-01-19 03:14:07', '2038-01-19 03:14:07.999999',
 'ab😀 ', _latin1 0x80FFE9A0, REPEAT('é',255), CONCAT(REPEAT('x',290),'😀𝄞'), _latin1 0x8081FF,
 0x0102, 0x00FF00, 'tiny', 'text\n', 0x00FFFE, '{"a": [1, 2.5, null, true], "b": {"c": "d"}}', 'ccc', 'x,z', ST_GeomFromText('LINESTRING(0 0, 1 1)'));
INSERT INTO allt VALUES (3, 0, 1, -1, 1, -1, 1, -1, 1, -1, 1,
 '-0.000000000000000000000000000001', 0, -0.01, 0.1, 0.1, NULL, 5, 1, 1901,
 '2024-02-29', '-00:00:01', '-00:00:00.000001', '12:34:56.789', '2024-02-29 12:34:56', '2024-02-29 12:34:56.7', '2024-02-29 12:34:56.007', '2024-02-29 12:34:56.000007',
 '1970-01-01 00:00:01', NULL,
 NULL, ' a ', 'z', NULL, 'é', 0x00000000, 0x00, NULL, '', NULL, NULL, 'a', '', NULL);
)sql";

struct Col {
  const char* name;
  const char* data_type;
  bool is_unsigned;
  const char* charset;
};
inline constexpr Col kCols[] = {
    {"id", "int", false, ""},          {"ti", "tinyint", false, ""},
    {"tiu", "tinyint", true, ""},      {"si", "smallint", false, ""},
    {"siu", "smallint", true, ""},     {"mi", "mediumint", false, ""},
    {"miu", "mediumint", true, ""},    {"i", "int", false, ""},
    {"iu", "int", true, ""},           {"bi", "bigint", false, ""},
    {"biu", "bigint", true, ""},       {"d65", "decimal", false, ""},
    {"d10", "decimal", false, ""},     {"d52", "decimal", false, ""},
    {"f", "float", false, ""},         {"dbl", "double", false, ""},
    {"b1", "bit", false, ""},          {"b10", "bit", false, ""},
    {"b64", "bit", false, ""},         {"y", "year", false, ""},
    {"dt", "date", false, ""},         {"tm", "time", false, ""},
    {"tm6", "time", false, ""},        {"tm3", "time", false, ""},
    {"dtm", "datetime", false, ""},    {"dtm1", "datetime", false, ""},
    {"dtm3", "datetime", false, ""},   {"dtm6", "datetime", false, ""},
    {"ts", "timestamp", false, ""},    {"ts6", "timestamp", false, ""},
    {"c5", "char", false, "utf8mb4"},  {"c5l", "char", false, "latin1"},
    {"c255", "char", false, "utf8mb4"}, {"vc", "varchar", false, "utf8mb4"},
    {"vcl", "varchar", false, "latin1"}, {"bn", "binary", false, "binary"},
    {"vb", "varbinary", false, "binary"}, {"tt", "tinytext", false, "utf8mb4"},
    {"tx", "text", false, "utf8mb4"},  {"mb", "mediumblob", false, "binary"},
    {"js", "longtext", false, "utf8mb4"}, {"e", "enum", false, "utf8mb4"},
    {"s", "set", false, "utf8mb4"},    {"g", "geometry", false, ""},
};

inline Row Row1() {
  return {Value::Int(1), Value::Int(-128), Value::UInt(0), Value::Int(-32768), Value::UInt(0),
          Value::Int(-8388608), Value::UInt(0), Value::Int(-2147483648LL), Value::UInt(0),
          Value::Int(std::numeric_limits<int64_t>::min()), Value::UInt(0),
          Value::Text("-99999999999999999999999999999999999.999999999999999999999999999999"),
          Value::Text("-9999999999"), Value::Text("-999.99"), Value::Float(-3.4028235e38f),
          Value::Double(-1.7976931348623157e308), Value::UInt(0), Value::UInt(0), Value::UInt(0),
          Value::Int(0), Value::Text("0000-00-00"), Value::Text("-838:59:59"),
          Value::Text("-838:59:59.000001"), Value::Text("-00:00:00.001"),
          Value::Text("0000-00-00 00:00:00"), Value::Text("0000-00-00 00:00:00.0"),
          Value::Text("1000-01-01 00:00:00.001"), Value::Text("1000-01-01 00:00:00.000001"),
          Value::Text("0000-00-00 00:00:00"), Value::Text("1970-01-01 00:00:01.000001"),
          Value::Text(""), Value::Text(""), Value::Text(""), Value::Text(""), Value::Text(""),
          Value::Bytes(std::string(5, '\0')), Value::Bytes(""), Value::Text(""), Value::Text(""),
          Value::Bytes(""), Value::Text("[]"), Value::Text(""), Value::Text(""),
          Value::Bytes(UnhexStr("000000000101000000000000000000F03F0000000000000040"))};
}

inline Row Row2() {
  std::string c255;
  for (int i = 0; i < 255; ++i) c255 += "\xC3\xA9";
  return {Value::Int(2), Value::Int(127), Value::UInt(255), Value::Int(32767), Value::UInt(65535),
          Value::Int(8388607), Value::UInt(16777215), Value::Int(2147483647), Value::UInt(4294967295u),
          Value::Int(std::numeric_limits<int64_t>::max()),
          Value::UInt(std::numeric_limits<uint64_t>::max()),
          Value::Text("99999999999999999999999999999999999.999999999999999999999999999999"),
          Value::Text("9999999999"), Value::Text("999.99"), Value::Float(3.4028235e38f),
          Value::Double(1.7976931348623157e308), Value::UInt(1), Value::UInt(1023),
          Value::UInt(std::numeric_limits<uint64_t>::max()), Value::Int(2155),
          Value::Text("9999-12-31"), Value::Text("838:59:59"), Value::Text("838:59:59.000000"),
          Value::Text("-00:00:01.500"), Value::Text("9999-12-31 23:59:59"),
          Value::Text("9999-12-31 23:59:59.9"), Value::Text("9999-12-31 23:59:59.999"),
          Value::Text("9999-12-31 23:59:59.999999"), Value::Text("2038-01-19 03:14:07"),
          Value::Text("2038-01-19 03:14:07.999999"), Value::Text("ab\xF0\x9F\x98\x80"),
          Value::Text("\xE2\x82\xAC\xC3\xBF\xC3\xA9\xC2\xA0"), Value::Text(c255),
          Value::Text(std::string(290, 'x') + "\xF0\x9F\x98\x80\xF0\x9D\x84\x9E"),
          Value::Text("\xE2\x82\xAC\xC2\x81\xC3\xBF"), Value::Bytes(std::string("\x01\x02\0\0\0", 5)),
          Value::Bytes(std::string("\x00\xFF\x00", 3)), Value::Text("tiny"), Value::Text("text\n"),
          Value::Bytes(std::string("\x00\xFF\xFE", 3)),
          Value::Text(R"({"a": [1, 2.5, null, true], "b": {"c": "d"}})"), Value::Text("ccc"),
          Value::Text("x,z"),
          Value::Bytes(UnhexStr("0000000001020000000200000000000000000000000000000000000000000000"
                                "000000F03F000000000000F03F"))};
}

inline Row Row3() {
  return {Value::Int(3), Value::Int(0), Value::UInt(1), Value::Int(-1), Value::UInt(1),
          Value::Int(-1), Value::UInt(1), Value::Int(-1), Value::UInt(1), Value::Int(-1),
          Value::UInt(1), Value::Text("-0.000000000000000000000000000001"), Value::Text("0"),
          Value::Text("-0.01"), Value::Float(0.1f), Value::Double(0.1), Value::Null(),
          Value::UInt(5), Value::UInt(1), Value::Int(1901), Value::Text("2024-02-29"),
          Value::Text("-00:00:01"), Value::Text("-00:00:00.000001"), Value::Text("12:34:56.789"),
          Value::Text("2024-02-29 12:34:56"), Value::Text("2024-02-29 12:34:56.7"),
          Value::Text("2024-02-29 12:34:56.007"), Value::Text("2024-02-29 12:34:56.000007"),
          Value::Text("1970-01-01 00:00:01"), Value::Null(), Value::Null(), Value::Text(" a"),
          Value::Text("z"), Value::Null(), Value::Text("\xC3\xA9"),
          Value::Bytes(std::string(5, '\0')), Value::Bytes(std::string(1, '\0')), Value::Null(),
          Value::Text(""), Value::Null(), Value::Null(), Value::Text("a"), Value::Text(""),
          Value::Null()};
}

}  // namespace sluice::testing_allt
