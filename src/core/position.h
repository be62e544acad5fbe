// Binlog coordinates: server flavor, file/position, and GTID positions as text.
//
// A BinlogPosition names the first byte of the next event to read ("file", pos), i.e.
// the end_log_pos of the last event consumed. GTID positions are kept as the server's
// own text: MariaDB "domain-server-seq[,...]" (gtid_slave_pos form), MySQL
// "uuid[:tag]:interval[:interval...][,...]" (gtid_executed form).
// Thread safety: plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

enum class Flavor : uint8_t { kUnknown, kMySQL, kMariaDB };
std::string_view FlavorName(Flavor f);  // "mysql", "mariadb", "unknown"

struct BinlogPosition {
  std::string file;
  uint64_t pos = 0;
  bool empty() const { return file.empty(); }
  std::string ToString() const { return file + ":" + std::to_string(pos); }
  friend bool operator==(const BinlogPosition&, const BinlogPosition&) = default;
};

// A binlog file name split at its last '.': "mariadb-bin.000012" -> {"mariadb-bin", 12};
// sequence -1 when there is no numeric suffix (then the base is the whole name).
struct BinlogFileName {
  std::string base;
  long long seq = -1;
};
BinlogFileName SplitBinlogFileName(const std::string& file);

// Orders positions by (file sequence number, pos). Files are compared by their numeric
// suffix ("mysql-bin.000012" > "mysql-bin.000009"), falling back to string order.
int ComparePositions(const BinlogPosition& a, const BinlogPosition& b);

}  // namespace sluice
