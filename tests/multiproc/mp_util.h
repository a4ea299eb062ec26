// Shared pieces of the multi-process tests: start worker ranks and read their RESULT lines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness.h"

namespace braid::test {

constexpr int kProcTimeoutMs = 30000;

/// One worker's RESULT line.
struct Report {
  int rank = -1;
  int nranks = 0;
  int code = -1;
  int64_t initStartNs = 0, initEndNs = 0;
  std::string msg;
  std::string raw;        // the whole output of the process, for failure messages
  std::string shmPrefix;  // from its "SHM_PREFIX <name>" line: its communicator's /dev/shm names
  bool ok() const { return code == 0; }
  std::string describe() const;
};

/// RESULT lines of one output (mpirun prints all ranks' lines into one).
std::vector<Report> parseOutput(const std::string& output);

/// One report per process; a process without a RESULT line yields none.
std::vector<Report> parseReports(const std::vector<ProcResult>& results);

std::vector<int> allRanks(int n);

/// The names in /dev/shm that start with any report's shmPrefix (" name" each; "" when none).
std::string leftoverSegments(const std::vector<Report>& reports);

/// Makes a unique id here (this process serves the root) and starts worker `scenario` as each of
/// `ranks` of an `n`-rank communicator, with `env` added.
std::vector<Report> runRanks(int n, const std::vector<int>& ranks, const std::string& scenario,
                             const std::vector<std::string>& env);

/// As runRanks, with the unique id given (hex of braidUniqueId).
std::vector<Report> runRanksWithId(const std::string& idHex, int n, const std::vector<int>& ranks,
                                   const std::string& scenario, const std::vector<std::string>& env);

/// The worker's "stall" scenario with BRAID_TEST_STALL=`how` (skip, exit or broadcast: what the
/// last of `nranks` does instead of the all-reduce) under BRAID_TIMEOUT=`timeoutMs`: "" when the
/// reports show what the watchdog promises (no rank hangs or succeeds but a skipper; each failing
/// rank within the timeout + 2 s; the last rank named: "has not reached" for a skip, by rank for an
/// exit, a mismatch for a broadcast), else what they show instead.
std::string stallReportsProblem(const std::vector<Report>& reports, const std::string& how, int nranks, int timeoutMs);

/// The worker program: $BRAID_TEST_WORKER, else braid_mp_worker beside this executable.
std::string workerPath();
std::string findInPath(const std::string& program);

}  // namespace braid::test
