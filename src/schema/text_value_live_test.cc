// LIVE differential test of the snapshot path against the local MariaDB: creates t.allt
// (value_test_rows.h), reads it back with SnapshotSelectExpr through the text protocol
// (the `mariadb` client in --batch mode, session time_zone '+00:00', utf8mb4 results)
// and checks ValueFromText against the same canonical rows binlog/rows_test.cc decodes
// from MariaDB's binlog. Needs scripts/mariadb-test-server.sh: source DIR/env first.
// Fails (never skips) when SLUICE_TEST_MYSQL_PORT is unset.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/text_value.h"
#include "schema/value_test_rows.h"

namespace sluice {
namespace {

using testing_allt::kCols;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Runs `sql` through the mariadb client; returns stdout or sets *ok=false.
std::string RunSql(const std::string& db, const std::string& sql, bool* ok) {
  std::string file = ::testing::TempDir() + "/sluice_values_live.sql";
  {
    std::ofstream f(file, std::ios::binary);
    f << sql;
  }
  std::string cmd = "MYSQL_PWD='" + Env("SLUICE_TEST_MYSQL_PASSWORD") +
                    "' mariadb --no-defaults --default-character-set=utf8mb4 --batch -N -h " +
                    Env("SLUICE_TEST_MYSQL_HOST") + " -P " + Env("SLUICE_TEST_MYSQL_PORT") +
                    " -u " + Env("SLUICE_TEST_MYSQL_USER") + " " + db + " < " + file + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *ok = false;
    return "popen failed";
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *ok = pclose(p) == 0;
  return out;
}

// Splits one --batch line into cells, undoing the client's escapes (\0 \\ \t \n).
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells(1);
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\t') {
      cells.emplace_back();
    } else if (c == '\\' && i + 1 < line.size()) {
      char e = line[++i];
      cells.back().push_back(e == '0' ? '\0' : e == 't' ? '\t' : e == 'n' ? '\n' : e);
    } else {
      cells.back().push_back(c);
    }
  }
  return cells;
}

TEST(TextValueLive, SnapshotCellsEqualCanonicalRows) {
  ASSERT_FALSE(Env("SLUICE_TEST_MYSQL_PORT").empty())
      << "SLUICE_TEST_MYSQL_PORT is unset: start scripts/mariadb-test-server.sh start DIR and "
         "source DIR/env";
  bool ok = false;
  std::string out = RunSql("", "DROP DATABASE IF EXISTS sluice_values_live; "
                               "CREATE DATABASE sluice_values_live;", &ok);
  ASSERT_TRUE(ok) << out;
  out = RunSql("sluice_values_live", testing_allt::kAlltSql, &ok);
  ASSERT_TRUE(ok) << out;

  std::vector<ColumnDesc> cols;
  std::string select = "SET time_zone='+00:00'; SELECT ";
  for (const auto& c : kCols) {
    ColumnDesc d;
    d.name = c.name;
    d.SetType(c.data_type);
    d.is_unsigned = c.is_unsigned;
    d.charset = c.charset;
    if (cols.size()) select += ", ";
    select += SnapshotSelectExpr(d) + ", " + QuoteIdentifier(d.name) + " IS NULL";
    cols.push_back(d);
  }
  select += " FROM allt ORDER BY id;";
  out = RunSql("sluice_values_live", select, &ok);
  ASSERT_TRUE(ok) << out;

  const Row want[] = {testing_allt::Row1(), testing_allt::Row2(), testing_allt::Row3()};
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < out.size()) {
    size_t nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    lines.push_back(out.substr(start, nl - start));
    start = nl + 1;
  }
  ASSERT_EQ(lines.size(), std::size(want)) << out;
  for (size_t r = 0; r < lines.size(); ++r) {
    auto cells = Cells(lines[r]);
    ASSERT_EQ(cells.size(), 2 * cols.size()) << "row " << r;
    for (size_t i = 0; i < cols.size(); ++i) {
      std::optional<std::string_view> text;
      if (cells[2 * i + 1] != "1") text = cells[2 * i];
      auto v = ValueFromText(cols[i], text);
      ASSERT_TRUE(v.ok()) << "row " << r << " " << cols[i].name << ": " << v.status().ToString();
      EXPECT_EQ(*v, want[r][i]) << "row " << r << " column " << cols[i].name << ": got "
                                << v->DebugString() << ", want " << want[r][i].DebugString();
    }
  }
  RunSql("", "DROP DATABASE sluice_values_live;", &ok);
}

}  // namespace
}  // namespace sluice
