// braid-bootstrap-bench [nranks=8] [runs=10]
//
// Starts nranks worker processes that bootstrap one communicator, `runs` times, and prints per run
// and as medians:
//   join     from the last rank's arrival (its call to braidCommInitRank) until every rank's init
//            has returned: the cost of the rendezvous itself, without process start-up skew;
//   span     from the first rank's arrival until every rank's init has returned.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mp_util.h"

int main(int argc, char** argv) {
  using namespace braid::test;
  int n = argc > 1 ? std::atoi(argv[1]) : 8;
  int runs = argc > 2 ? std::atoi(argv[2]) : 10;
  if (n < 1 || runs < 1) {
    std::fprintf(stderr, "usage: %s [nranks >= 1] [runs >= 1]\n", argv[0]);
    return 2;
  }
  setenv("BRAID_TEST_WORKER", BRAID_MP_WORKER, 0);  // an explicit BRAID_TEST_WORKER wins
  std::vector<double> joins, spans;
  std::printf("bootstrap of %d local processes, %d runs\n%6s %12s %12s\n", n, runs, "run", "join (ms)", "span (ms)");
  for (int run = 0; run < runs; ++run) {
    std::vector<Report> reports = runRanks(n, allRanks(n), "id", {});
    if (static_cast<int>(reports.size()) != n) {
      std::fprintf(stderr, "run %d: only %zu of %d ranks reported\n", run, reports.size(), n);
      return 1;
    }
    int64_t firstStart = INT64_MAX, lastStart = 0, lastEnd = 0;
    for (const Report& r : reports) {
      if (!r.ok()) {
        std::fprintf(stderr, "run %d: %s\n", run, r.describe().c_str());
        return 1;
      }
      firstStart = std::min(firstStart, r.initStartNs);
      lastStart = std::max(lastStart, r.initStartNs);
      lastEnd = std::max(lastEnd, r.initEndNs);
    }
    joins.push_back((lastEnd - lastStart) / 1e6);
    spans.push_back((lastEnd - firstStart) / 1e6);
    std::printf("%6d %12.2f %12.2f\n", run, joins.back(), spans.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::printf("median %12.2f %12.2f\n", median(joins), median(spans));
  return 0;
}
