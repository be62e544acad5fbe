// Metrics: process-wide counters and gauges with labels, rendered in the Prometheus text
// exposition format (version 0.0.4) for the optional `[metrics]` endpoint, and read by the
// progress display.
//
// A metric is a family (name, help, type) of series, one per label set. Counter() and
// Gauge() return a stable reference to a series (created on first use; never removed), so
// hot paths look a series up once and then update an atomic. Names follow Prometheus
// conventions: sluice_<what>_<unit>[_total]. Text() values are for the display only and are
// never exported. Gauges whose value is computed at scrape time are registered with
// SetCallback (e.g. RSS, lag); a callback runs on the scraping thread.
// Thread safety: every function is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sluice::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Value {
 public:
  void Add(double d) {
    double cur = v_.load(std::memory_order_relaxed);
    while (!v_.compare_exchange_weak(cur, cur + d, std::memory_order_relaxed)) {
    }
  }
  void Set(double d) { v_.store(d, std::memory_order_relaxed); }
  double Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

class Registry {
 public:
  static Registry& Global();

  Value& Counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Value& Gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // A gauge computed when rendered; return false to leave it out this time.
  void SetCallback(const std::string& name, const std::string& help, std::function<bool(double*)> fn);

  // Free-form values for the progress display ("stream.position").
  void SetText(const std::string& key, std::string value);
  std::string Text(const std::string& key) const;

  // Every series of a family: (labels, value), in label order.
  std::vector<std::pair<Labels, double>> Series(const std::string& name) const;
  // One series' value; 0 when absent.
  double Get(const std::string& name, const Labels& labels = {}) const;

  std::string RenderPrometheus() const;

  // Tests: forget everything.
  void Reset();

 private:
  struct Family {
    std::string help;
    const char* type = "counter";
    std::map<Labels, std::unique_ptr<metrics::Value>> series;
    std::function<bool(double*)> callback;
  };
  Value& Get(const std::string& name, const std::string& help, const char* type, const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;   // guarded by mu_
  std::map<std::string, std::string> text_;  // guarded by mu_
};

// Resident set size of this process in bytes (/proc/self/statm), 0 if unknown.
uint64_t ResidentBytes();

}  // namespace sluice::metrics
