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

}  // namespace
}  // namespace sluice::metrics
