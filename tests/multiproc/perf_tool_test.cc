// braid-perf's own reports, read from its output as a user reads them: --percentiles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace braid::test {
namespace {

// The table's rows (size, out-of-place time) and the per-call lines after them.
struct PerfRow {
  long long bytes = 0;
  double meanUs = 0;
  double p50 = -1, p99 = -1, max = -1;  // out of place
};

std::vector<PerfRow> parseRows(const std::string& out) {
  std::vector<PerfRow> rows;
  std::istringstream in(out);
  std::string line;
  const std::regex row(R"(^ +(\d+) +\d+ +\S+ +\S+ +-?\d+ +([0-9.]+) )");
  const std::regex tail(
      R"(^#   per call, max over ranks \(us\): out of place p50 ([0-9.]+) p99 ([0-9.]+) max ([0-9.]+))");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, row)) {
      rows.push_back({std::stoll(m[1]), std::stod(m[2])});
    } else if (std::regex_search(line, m, tail) && !rows.empty()) {
      rows.back().p50 = std::stod(m[1]);
      rows.back().p99 = std::stod(m[2]);
      rows.back().max = std::stod(m[3]);
    }
  }
  return rows;
}

// The text of file `path`, which is then removed.
std::string takeFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

// Two forked processes, host memory, each call timed: every row gets its line, the quantiles are in
// order, and the slowest call of all is no faster than the slowest rank's mean (-a 3
// prints that mean): a line of made-up or swapped numbers fails.
TEST(PerfTool, PercentilesFollowEveryRowAndBoundTheMean) {
  const std::string json = "/tmp/braid-perf-percentiles-" + std::to_string(getpid()) + ".json";
  std::vector<ProcResult> out = runProcesses({{{BRAID_TEST_PERF, "-p", "2", "-b", "8", "-e", "1M", "-f", "32", "-n",
                                                "200", "-w", "2", "-a", "3", "--percentiles", "1", "-J", json},
                                               {"BRAID_DEVICE=cpu"}}},
                                             60000);
  ASSERT_FALSE(out[0].timedOut) << out[0].output;
  ASSERT_EQ(out[0].exitCode, 0) << out[0].output;
  std::vector<PerfRow> rows = parseRows(out[0].output);
  ASSERT_EQ(rows.size(), 4u) << out[0].output;  // 8 B, 256 B, 8 KiB, 256 KiB: -e 1M stops before 8 MiB
  for (const PerfRow& r : rows) {
    SCOPED_TRACE(std::to_string(r.bytes) + " bytes");
    ASSERT_GE(r.p50, 0) << "no per-call line:\n" << out[0].output;
    EXPECT_GT(r.p50, 0);
    EXPECT_LE(r.p50, r.p99);
    EXPECT_LE(r.p99, r.max);
    EXPECT_GE(r.max * 1.0001 + 0.01, r.meanUs) << "the slowest call is faster than the slowest rank's mean";
  }
  const std::string text = takeFile(json);
  EXPECT_NE(text.find("\"per_call_us\": {\"out_of_place\": ["), std::string::npos) << text;
}

// Send/recv has no in-place form: its row says N/A, and the JSON's in-place quantiles are null.
TEST(PerfTool, PercentilesOfSendRecvHaveNoInPlace) {
  const std::string json = "/tmp/braid-perf-percentiles-sr-" + std::to_string(getpid()) + ".json";
  std::vector<ProcResult> out = runProcesses({{{BRAID_TEST_PERF, "-C", "sendrecv", "-t", "2", "-b", "8", "-e", "8",
                                                "-n", "20", "--percentiles", "1", "-J", json},
                                               {"BRAID_DEVICE=cpu"}}},
                                             60000);
  ASSERT_EQ(out[0].exitCode, 0) << out[0].output;
  std::vector<PerfRow> rows = parseRows(out[0].output);
  ASSERT_EQ(rows.size(), 1u) << out[0].output;
  EXPECT_GT(rows[0].p50, 0) << out[0].output;
  EXPECT_EQ(out[0].output.find("; in place p50"), std::string::npos) << out[0].output;
  const std::string text = takeFile(json);
  EXPECT_NE(text.find("\"in_place\": null}"), std::string::npos) << text;
}

TEST(PerfTool, PercentilesAreRefusedForGpuRanks) {
  std::vector<ProcResult> out = runProcesses({{{BRAID_TEST_PERF, "-g", "1", "--percentiles", "1"}, {}}}, 30000);
  EXPECT_EQ(out[0].exitCode, 2) << out[0].output;
  EXPECT_NE(out[0].output.find("--percentiles times host calls one by one"), std::string::npos) << out[0].output;
}

}  // namespace
}  // namespace braid::test
