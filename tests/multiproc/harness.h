// Runs N child processes (fork + exec, so each starts clean: no threads, no locks inherited from a
// multithreaded test process), collects each one's output and exit status, and kills whatever is
// still running at the deadline. Used by the multi-process tests and the bootstrap benchmark.
#pragma once

#include <string>
#include <vector>

namespace braid::test {

struct ProcSpec {
  std::vector<std::string> argv;  // argv[0] is the program path
  std::vector<std::string> env;   // "NAME=value" entries added to (or replacing in) this process's environment
};

struct ProcResult {
  int exitCode = -1;      // -1 when killed by a signal or by the deadline
  int signal = 0;         // the signal that ended it, if any
  bool timedOut = false;  // still running at the deadline (then killed)
  std::string output;     // stdout and stderr together
};

/// Starts every process at once and waits for all, at most `timeoutMs`.
std::vector<ProcResult> runProcesses(const std::vector<ProcSpec>& specs, int timeoutMs);

/// Hex text of a byte buffer and back (unique ids travel to children in an environment variable).
std::string toHex(const void* data, size_t n);
bool fromHex(const std::string& hex, void* data, size_t n);

/// A TCP port on 127.0.0.1 that was free a moment ago (for rendezvous addresses in tests).
int freeTcpPort();

/// The directory of the running executable (to find sibling test programs).
std::string selfDir();

}  // namespace braid::test
