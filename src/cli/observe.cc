#include "cli/observe.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "mysql/server_probe.h"
#include "util/log.h"
#include "util/metrics.h"

namespace sluice::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string Eta(double remaining, double rate) {
  if (remaining <= 0) return "0 s";
  if (rate <= 0) return "unknown";
  double s = remaining / rate;
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string LabelValue(const metrics::Labels& l, const char* key) {
  for (const auto& [k, v] : l)
    if (k == key) return v;
  return "";
}

// Binlog bytes between the applied position and the server's end, on the scraping thread.
class LagBytes {
 public:
  explicit LagBytes(ConnectOptions o) : options_(std::move(o)) { options_.connect_timeout_s = 3; }
  bool Measure(double* out) {
    std::lock_guard lock(mu_);
    const std::string file = metrics::Registry::Global().Text("stream.file");
    if (file.empty()) return false;
    const double pos = metrics::Registry::Global().Get("sluice_stream_position_bytes");
    if (!conn_) {
      auto c = Connection::Connect(options_);
      if (!c.ok()) return false;
      conn_ = std::move(c).value();
    }
    auto end = ReadBinlogPosition(*conn_);
    if (!end.ok()) {
      conn_.reset();
      return false;
    }
    if (end->file == file) {
      *out = std::max(0.0, static_cast<double>(end->pos) - pos);
      return true;
    }
    auto logs = ListBinaryLogs(*conn_);
    if (!logs.ok()) {
      conn_.reset();
      return false;
    }
    double total = 0;
    bool after = false;
    for (const auto& [name, size] : *logs) {
      if (name == file) {
        after = true;
        total += std::max(0.0, static_cast<double>(size) - pos);
      } else if (after && name != end->file) {
        total += static_cast<double>(size);
      }
    }
    *out = total + static_cast<double>(end->pos);
    return after;
  }

 private:
  std::mutex mu_;
  ConnectOptions options_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace

std::optional<double> LagSeconds() {
  auto& reg = metrics::Registry::Global();
  if (reg.Text("stream.position").empty()) return std::nullopt;
  double read = reg.Get("sluice_stream_items_read_total");
  // Items dropped by a lost connection are read again: not behind (streamer.cc).
  double applied = reg.Get("sluice_stream_items_applied_total") + reg.Get("sluice_stream_items_dropped_total");
  if (applied >= read) return 0.0;
  double ts = reg.Get("sluice_last_applied_source_timestamp_seconds");
  // Nothing applied by this process yet (a first large transaction in parts): the sink is at
  // least as far behind as the first transaction it read (it said 0: a new user's probe).
  if (ts <= 0) ts = reg.Get("sluice_first_read_source_timestamp_seconds");
  if (ts <= 0) return 0.0;
  return std::max(0.0, static_cast<double>(std::time(nullptr)) - ts);
}

struct Observer::Impl {
  std::unique_ptr<httplib::Server> server;
  std::thread server_thread;
  int port = 0;
  std::unique_ptr<LagBytes> lag_bytes;

  std::thread display_thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by mu

  // Display state (display thread only).
  struct Seen {
    double value = 0;
    Clock::time_point at;
  };
  std::map<std::string, Seen> first_seen;  // per snapshot table: rows when first shown
  std::map<std::string, double> previous;  // counter values at the previous tick
  Clock::time_point previous_at = Clock::now();

  std::string Render();
  void DisplayLoop();
};

std::string Observer::Impl::Render() {
  auto& reg = metrics::Registry::Global();
  const auto now = Clock::now();
  std::string out;
  if (reg.Get("sluice_snapshot_running") > 0) {
    auto rows = reg.Series("sluice_snapshot_rows");
    double total = 0, expected_total = 0, rate_total = 0;
    std::vector<std::string> lines;
    size_t done_tables = 0;
    for (const auto& [labels, value] : rows) {
      const std::string table = LabelValue(labels, "table");
      double expected = std::max(value, reg.Get("sluice_snapshot_expected_rows", labels));
      total += value;
      expected_total += expected;
      auto [it, inserted] = first_seen.try_emplace(table, Seen{value, now});
      double secs = std::chrono::duration<double>(now - it->second.at).count();
      double rate = secs >= 0.5 ? (value - it->second.value) / secs : 0;
      rate_total += rate;
      if (value >= expected) {  // finished: counted, not listed
        ++done_tables;
        continue;
      }
      if (lines.size() < 8)
        lines.push_back(fmt::format("  {:<32} {:>10.0f} of {:<10.0f} {:>3.0f}%  {:>8.0f} rows/s  ETA {}", table, value,
                                    expected, expected > 0 ? 100 * value / expected : 100.0, rate,
                                    Eta(expected - value, rate)));
    }
    out = fmt::format("snapshot: {:.0f} of {:.0f} rows ({:.0f}%), {:.0f} rows/s, ETA {}; {} of {} table(s) done",
                      total, expected_total, expected_total > 0 ? 100 * total / expected_total : 100.0, rate_total,
                      Eta(expected_total - total, rate_total), done_tables, rows.size());
    for (const auto& l : lines) out += "\n" + l;
    return out;
  }
  const std::string position = reg.Text("stream.position");
  if (position.empty()) return "";
  const double secs = std::max(0.001, std::chrono::duration<double>(now - previous_at).count());
  auto rate = [&](const std::string& key, double value) {
    auto it = previous.find(key);
    double r = it == previous.end() ? 0 : (value - it->second) / secs;
    previous[key] = value;
    return std::max(0.0, r);
  };
  double txns = rate("txns", reg.Get("sluice_transactions_total"));
  double events = rate("events", reg.Get("sluice_binlog_events_total"));
  double bytes = rate("bytes", reg.Get("sluice_binlog_bytes_total"));
  auto lag = LagSeconds();
  std::map<std::string, std::map<std::string, double>> per_table;  // table -> op -> rate
  double rows_total = 0;
  for (const auto& [labels, value] : reg.Series("sluice_rows_total")) {
    const std::string table = LabelValue(labels, "table"), op = LabelValue(labels, "op");
    double r = rate("rows " + table + " " + op, value);
    per_table[table][op] = r;
    rows_total += r;
  }
  out = fmt::format("stream: at {}, lag {:.0f} s; {:.0f} transactions/s, {:.0f} row changes/s, {:.0f} events/s, "
                    "{:.1f} KiB/s",
                    position, lag.value_or(0), txns, rows_total, events, bytes / 1024);
  size_t shown = 0;
  for (const auto& [table, ops] : per_table) {
    double sum = 0;
    for (const auto& [op, r] : ops) sum += r;
    if (sum <= 0 || ++shown > 6) continue;
    std::string parts;
    for (const auto& [op, r] : ops)
      if (r > 0) parts += fmt::format("{}{} {:.0f}/s", parts.empty() ? "" : ", ", op, r);
    out += fmt::format("\n  {:<32} {}", table, parts);
  }
  previous_at = now;
  return out;
}

void Observer::Impl::DisplayLoop() {
  std::unique_lock lock(mu);
  while (!stopping) {
    // Four redraws a second while a snapshot runs, so that a short one still shows a rate.
    const bool snapshot = metrics::Registry::Global().Get("sluice_snapshot_running") > 0;
    cv.wait_for(lock, snapshot ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000));
    if (stopping) break;
    lock.unlock();
    std::string block = Render();
    SetStatusDisplay(block);
    lock.lock();
  }
}

Observer::Observer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Observer::~Observer() {
  if (impl_->display_thread.joinable()) {
    {
      std::lock_guard lock(impl_->mu);
      impl_->stopping = true;
    }
    impl_->cv.notify_all();
    impl_->display_thread.join();
    SetStatusDisplay("");
  }
  if (impl_->server) {
    // stop() is a no-op until the listening thread has started; a run that ends at once
    // (refused by a check) would otherwise leave that thread in accept() forever.
    for (int i = 0; i < 2000 && !impl_->server->is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    impl_->server->stop();
    if (impl_->server_thread.joinable()) impl_->server_thread.join();
  }
}

int Observer::metrics_port() const { return impl_->port; }

Result<std::unique_ptr<Observer>> Observer::Start(const Config& config, const ConnectOptions& source) {
  auto impl = std::make_unique<Impl>();
  auto& reg = metrics::Registry::Global();
  reg.SetCallback("process_resident_memory_bytes", "resident memory of the sluice process", [](double* v) {
    *v = static_cast<double>(metrics::ResidentBytes());
    return *v > 0;
  });
  reg.SetCallback("sluice_lag_seconds",
                  "0 when the sink holds everything read; else seconds since the source committed the last "
                  "transaction the sink holds",
                  [](double* v) {
                    auto lag = LagSeconds();
                    if (!lag) return false;
                    *v = *lag;
                    return true;
                  });
  // Present from the start, so a scrape shows 0 rather than nothing.
  for (const char* component : {"snapshot", "stream"})
    reg.Counter("sluice_reconnects_total", "reconnects to the source after a lost connection",
                {{"component", component}});
  if (!config.metrics.listen.empty()) {
    impl->lag_bytes = std::make_unique<LagBytes>(source);
    LagBytes* lb = impl->lag_bytes.get();
    reg.SetCallback("sluice_lag_bytes", "binlog bytes between the position the sink holds and the server's end",
                    [lb](double* v) { return lb->Measure(v); });
    impl->server = std::make_unique<httplib::Server>();
    impl->server->new_task_queue = [] { return new httplib::ThreadPool(2); };
    impl->server->Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics::Registry::Global().RenderPrometheus(), "text/plain; version=0.0.4; charset=utf-8");
    });
    impl->server->Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("sluice: metrics at /metrics\n", "text/plain");
    });
    int port = config.metrics.port;
    if (port == 0) {
      port = impl->server->bind_to_any_port(config.metrics.host);
      if (port <= 0) port = -1;
    } else if (!impl->server->bind_to_port(config.metrics.host, port)) {
      port = -1;
    }
    if (port < 0)
      return Status::InvalidArgument(fmt::format("metrics.listen: cannot listen on {}: {}", config.metrics.listen,
                                                 std::strerror(errno)));
    impl->port = port;
    httplib::Server* s = impl->server.get();
    impl->server_thread = std::thread([s] { s->listen_after_bind(); });
    LogInfo("metrics: serving http://{}:{}/metrics", config.metrics.host, port);
  }
  bool display = config.log.progress == LogConfig::Progress::kDisplay ||
                 (config.log.progress == LogConfig::Progress::kAuto && ::isatty(STDERR_FILENO) && !config.log.json);
  if (display) {
    SetStatusDisplay(" ");  // status lines give way from here on
    Impl* p = impl.get();
    impl->display_thread = std::thread([p] { p->DisplayLoop(); });
  }
  return std::unique_ptr<Observer>(new Observer(std::move(impl)));
}

}  // namespace sluice::cli
