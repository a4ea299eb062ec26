#include "mp_util.h"

#include <braid/braid.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

namespace braid::test {

std::string Report::describe() const {
  std::ostringstream os;
  os << "rank " << rank << " of " << nranks << " code " << code << " msg '" << msg << "'\n--- output ---\n" << raw;
  return os.str();
}

std::vector<Report> parseOutput(const std::string& output) {
  std::vector<Report> out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RESULT ", 0) != 0) continue;
    Report r;
    long long s = 0, e = 0;
    int consumed = 0;
    if (sscanf(line.c_str(), "RESULT rank=%d nranks=%d code=%d init_ns=%lld,%lld msg=%n", &r.rank, &r.nranks, &r.code,
               &s, &e, &consumed) == 5) {
      r.initStartNs = s;
      r.initEndNs = e;
      r.msg = line.substr(static_cast<size_t>(consumed));
      r.raw = output;
      size_t at = output.find("SHM_PREFIX ");
      if (at != std::string::npos) {
        at += std::strlen("SHM_PREFIX ");
        r.shmPrefix = output.substr(at, output.find('\n', at) - at);
      }
      out.push_back(r);
    }
  }
  return out;
}

std::vector<Report> parseReports(const std::vector<ProcResult>& results) {
  std::vector<Report> out;
  for (const ProcResult& p : results) {
    std::vector<Report> got = parseOutput(p.output);
    if (!got.empty()) {
      out.push_back(got.back());
      continue;
    }
    // A rank that never reported (hung until the harness killed it, or crashed): its output is the
    // only trace of where it stopped, so it goes to the test's log.
    std::fprintf(stderr, "a worker printed no RESULT line (exit code %d, signal %d%s); its output:\n%s\n", p.exitCode,
                 p.signal, p.timedOut ? ", killed at the deadline" : "", p.output.c_str());
  }
  return out;
}

std::string leftoverSegments(const std::vector<Report>& reports) {
  std::set<std::string> prefixes;
  for (const Report& r : reports) {
    if (!r.shmPrefix.empty()) prefixes.insert(r.shmPrefix);
  }
  std::string found;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return found;
  while (dirent* e = readdir(d)) {
    for (const std::string& p : prefixes) {
      if (std::strncmp(e->d_name, p.c_str(), p.size()) == 0) found += std::string(" ") + e->d_name;
    }
  }
  closedir(d);
  return found;
}

std::vector<int> allRanks(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

std::vector<Report> runRanksWithId(const std::string& idHex, int n, const std::vector<int>& ranks,
                                   const std::string& scenario, const std::vector<std::string>& env) {
  std::vector<ProcSpec> specs;
  for (int r : ranks) {
    ProcSpec s{{workerPath(), scenario}, env};
    s.env.push_back("BRAID_TEST_ID=" + idHex);
    s.env.push_back("BRAID_TEST_RANK=" + std::to_string(r));
    s.env.push_back("BRAID_TEST_NRANKS=" + std::to_string(n));
    specs.push_back(s);
  }
  return parseReports(runProcesses(specs, kProcTimeoutMs));
}

std::vector<Report> runRanks(int n, const std::vector<int>& ranks, const std::string& scenario,
                             const std::vector<std::string>& env) {
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) return {};
  return runRanksWithId(toHex(&id, sizeof(id)), n, ranks, scenario, env);
}

std::string workerPath() {
  const char* override = getenv("BRAID_TEST_WORKER");
  return override != nullptr ? override : selfDir() + "/braid_mp_worker";
}

std::string findInPath(const std::string& program) {
  const char* path = getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string stallReportsProblem(const std::vector<Report>& reports, const std::string& how, int nranks, int timeoutMs) {
  const size_t expected = static_cast<size_t>(how == "exit" ? nranks - 1 : nranks);  // the leaver reports nothing
  if (reports.size() != expected) {
    return std::to_string(reports.size()) + " reports, " + std::to_string(expected) + " expected";
  }
  const std::string last = "rank " + std::to_string(nranks - 1);
  bool named = false;
  for (const Report& r : reports) {
    if (r.rank == nranks - 1 && how == "skip") {
      if (r.code != braidSuccess) return "the skipping rank failed: " + r.describe();
      continue;
    }
    if (r.code == braidSuccess) return "a rank succeeded: " + r.describe();
    const char* took = std::strstr(r.msg.c_str(), "took_ms=");
    if (took == nullptr) return "no took_ms: " + r.describe();
    if (std::atoi(took + std::strlen("took_ms=")) >= timeoutMs + 2000) return "too late: " + r.describe();
    if (how == "skip") {
      if (r.code != braidTimeout) return "not braidTimeout: " + r.describe();
      named = named || r.msg.find("diagnosis: " + last + " has not reached allreduce #1") != std::string::npos;
    } else if (how == "exit") {
      named = named || r.msg.find(last) != std::string::npos;
    } else {
      named = named || r.msg.find("mismatch") != std::string::npos;
    }
  }
  return named ? ""
               : "no report names " + last + (how == "broadcast" ? "'s mismatch" : "") + ": " + reports[0].describe();
}

}  // namespace braid::test
