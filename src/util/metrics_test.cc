#include "util/metrics.h"

#include <gtest/gtest.h>

namespace sluice::metrics {
namespace {

TEST(Metrics, RendersPrometheusTextWithLabelsAndCallbacks) {
  Registry r;
  r.Counter("sluice_rows_total", "rows", {{"op", "insert"}, {"table", "d.\"t\""}}).Add(3);
  r.Counter("sluice_rows_total", "rows", {{"op", "insert"}, {"table", "d.\"t\""}}).Add(2);
  r.Gauge("sluice_queue_bytes", "bytes", {{"queue", "sink"}}).Set(1.5);
  r.SetCallback("sluice_lag_seconds", "lag", [](double* v) { *v = 7; return true; });
  r.SetCallback("sluice_absent", "absent", [](double*) { return false; });
  const std::string text = r.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE sluice_rows_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sluice_rows_total{op=\"insert\",table=\"d.\\\"t\\\"\"} 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE sluice_queue_bytes gauge\nsluice_queue_bytes{queue=\"sink\"} 1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sluice_lag_seconds 7\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("sluice_absent"), std::string::npos) << text;
  EXPECT_EQ(r.Get("sluice_rows_total", {{"op", "insert"}, {"table", "d.\"t\""}}), 5);
  EXPECT_EQ(r.Get("sluice_rows_total", {{"op", "delete"}}), 0);
  EXPECT_GT(ResidentBytes(), 0u);
}

// A table name is a label value, and the exposition format escapes only \\, \" and newline in
// it: an ESC, CR or other control byte of a name went out raw (probe7 F7) and reached whoever
// reads the endpoint with curl. Each becomes the text \xNN (its backslash escaped).
TEST(Metrics, LabelValuesHoldNoControlCharacter) {
  Registry r;
  r.Counter("sluice_rows_total", "rows", {{"table", "d.x\nsluice_fake 1\r\x1b[2J\\"}}).Add(1);
  const std::string text = r.RenderPrometheus();
  EXPECT_NE(text.find("sluice_rows_total{table=\"d.x\\\\x0asluice_fake 1\\\\x0d\\\\x1b[2J\\\\\"} 1\n"), std::string::npos)
      << text;
  for (char c : text) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << text;
}

}  // namespace
}  // namespace sluice::metrics
