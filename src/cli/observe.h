// Observer: what `sluice run` shows while it works, besides its log.
//
//   [metrics] listen = "host:port"  a Prometheus endpoint, GET /metrics (cpp-httplib, two
//       worker threads): every series of util/metrics.h (events, bytes, transactions, rows by
//       table and op, sink commits, snapshot rows per table, reconnects, queue items and
//       bytes) plus gauges computed per scrape: sluice_lag_seconds, sluice_lag_bytes (one
//       SHOW MASTER STATUS / SHOW BINARY LOGS on a connection of the scraping thread),
//       process_resident_memory_bytes. Port 0 picks a free port; the log names the URL.
//   progress display  when stderr is a terminal (log.progress = "auto") or always
//       ("display"): a block of lines redrawn every second below the log: during the
//       snapshot rows done of expected, rate and ETA per table; while streaming the position,
//       lag and rates. Otherwise ("lines", or not a terminal) the periodic status lines of
//       the snapshot and the stream are logged instead.
// Lag: 0 when every transaction read from the source is in the sink; else the time since the
// source committed the last transaction the sink holds.
// Errors: Start fails with kInvalidArgument naming metrics.listen when it cannot listen.
// Thread safety: Start/destroy from one thread; the threads it owns are joined on destruction.
#pragma once

#include <memory>

#include "cli/config.h"
#include "mysql/connection.h"
#include "util/status.h"

namespace sluice::cli {

class Observer {
 public:
  static Result<std::unique_ptr<Observer>> Start(const Config& config, const ConnectOptions& source);
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  // The port the metrics endpoint listens on; 0 when there is none.
  int metrics_port() const;

  struct Impl;

 private:
  explicit Observer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The lag in seconds as defined above, from the metrics registry; nullopt before streaming.
std::optional<double> LagSeconds();

}  // namespace sluice::cli
