// libFuzzer target: the row-image decoder (binlog::DecodeRows) over fixed TableMaps of every column type. The body is sluice::fuzz::FuzzRows (fuzz/targets.h), shared with
// the regression test that replays tests/fuzz-regressions/rows/*.
// Seeds: fuzz/make-corpus.sh. Run: scripts/fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::FuzzRows(data, size);
  return 0;
}
