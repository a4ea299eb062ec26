// A launcher's environment (bootstrap/launcher_env.h): the rank, size and local-rank variables of
// torchrun, Open MPI and Slurm, their job identities, BRAID_COMM_ID, MASTER_ADDR/MASTER_PORT and
// the PMIx names, all from outside braid. The input is lines of NAME=VALUE (the first '=' splits;
// a later line of the same name wins, a line without '=' is skipped); whatever they hold,
// launchInfoFromLookup answers with launch information or an error, and what it accepts is
// consistent. Host names resolve only when numeric (numeric_resolver.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "bootstrap/launcher_env.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> env;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  braid::bootstrap::LaunchInfo info;
  braid::Status st = braid::bootstrap::launchInfoFromLookup(
      [&env](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      &info);
  if (st.isOk()) {
    // What it accepts is a rank of a job of at least one rank, reached through PMIx or an address.
    if (info.nranks < 1 || info.rank < 0 || info.rank >= info.nranks || info.launcher.empty() ||
        info.pmix == !info.address.empty()) {
      std::abort();
    }
  } else if (st.message().empty()) {
    std::abort();  // an error says what was wrong
  }
  return 0;
}
