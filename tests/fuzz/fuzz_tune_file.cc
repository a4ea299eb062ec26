// BRAID_TUNE_FILE and braid-perf's JSON (braid-tune --fit reads it back).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tune/fit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  braid::tune::TuneFile file;
  braid::tune::parseTuneFile(text, "fuzz", &file).ignore();
  std::vector<braid::tune::Point> points;
  int ranks = 0;
  braid::tune::readPerfJson(text, "allreduce", &points, &ranks).ignore();
  return 0;
}
