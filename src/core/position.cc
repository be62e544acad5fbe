#include "core/position.h"

#include <cstdlib>

namespace sluice {

std::string_view FlavorName(Flavor f) {
  switch (f) {
    case Flavor::kMySQL: return "mysql";
    case Flavor::kMariaDB: return "mariadb";
    case Flavor::kUnknown: break;
  }
  return "unknown";
}

BinlogFileName SplitBinlogFileName(const std::string& f) {
  auto dot = f.rfind('.');
  if (dot == std::string::npos || dot + 1 >= f.size()) return {f, -1};
  long long v = 0;
  for (size_t i = dot + 1; i < f.size(); ++i) {
    if (f[i] < '0' || f[i] > '9') return {f, -1};
    v = v * 10 + (f[i] - '0');
  }
  return {f.substr(0, dot), v};
}

int ComparePositions(const BinlogPosition& a, const BinlogPosition& b) {
  long long sa = SplitBinlogFileName(a.file).seq, sb = SplitBinlogFileName(b.file).seq;
  if (sa >= 0 && sb >= 0 && sa != sb) return sa < sb ? -1 : 1;
  if (sa < 0 || sb < 0) {
    int c = a.file.compare(b.file);
    if (c != 0) return c < 0 ? -1 : 1;
  }
  if (a.pos == b.pos) return 0;
  return a.pos < b.pos ? -1 : 1;
}

}  // namespace sluice
