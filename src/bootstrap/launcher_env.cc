#include "bootstrap/launcher_env.h"

#include <climits>
#include <cstdlib>
#include <vector>

#include "bootstrap/pmix_rendezvous.h"
#include "core/log.h"

namespace braid::bootstrap {
namespace {

struct Launcher {
  const char* name;
  const char* rankVar;
  const char* sizeVar;
  const char* localRankVar;
  std::vector<const char*> identityVars;
};

const std::vector<Launcher>& launchers() {
  static const std::vector<Launcher> kLaunchers = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", {"TORCHELASTIC_RUN_ID"}},
      {"Open MPI",
       "OMPI_COMM_WORLD_RANK",
       "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK",
       {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", {"SLURM_JOB_ID", "SLURM_STEP_ID"}},
  };
  return kLaunchers;
}

std::optional<std::string> lookup(const EnvLookup& env, const std::string& name) {
  std::optional<std::string> v = env(name);
  if (v.has_value() && v->empty()) return std::nullopt;
  return v;
}

// A whole non-negative decimal int: "007" is 7; "-1", "1e3", " 3", "" and 2^31 are not.
Status parseCount(const std::string& name, const std::string& value, const char* launcher, int* out) {
  bool digits = !value.empty() && value.size() <= 10 && value.find_first_not_of("0123456789") == std::string::npos;
  long long v = digits ? std::strtoll(value.c_str(), nullptr, 10) : -1;
  if (!digits || v > INT_MAX) {
    return invalidArgument(name + "='" + value + "' is not a non-negative integer (set by " + launcher + "?)");
  }
  *out = static_cast<int>(v);
  return Status::ok();
}

Status readLauncher(const EnvLookup& env, const Launcher& l, LaunchInfo* out) {
  std::optional<std::string> rank = lookup(env, l.rankVar), size = lookup(env, l.sizeVar);
  if (!rank || !size) {
    const char* missing = rank ? l.sizeVar : l.rankVar;
    const char* present = rank ? l.rankVar : l.sizeVar;
    return invalidArgument(std::string(present) + " is set (" + l.name + ") but " + missing + " is not");
  }
  BRAID_RETURN_IF_ERROR(parseCount(l.rankVar, *rank, l.name, &out->rank));
  BRAID_RETURN_IF_ERROR(parseCount(l.sizeVar, *size, l.name, &out->nranks));
  if (out->nranks < 1) return invalidArgument(std::string(l.sizeVar) + "='" + *size + "' must be at least 1");
  if (out->rank >= out->nranks) {
    return invalidArgument(std::string(l.rankVar) + "='" + *rank + "' is not below " + l.sizeVar + "='" + *size + "'");
  }
  out->localRank = -1;
  if (std::optional<std::string> local = lookup(env, l.localRankVar)) {
    BRAID_RETURN_IF_ERROR(parseCount(l.localRankVar, *local, l.name, &out->localRank));
  }
  out->launcher = l.name;
  return Status::ok();
}

// Under mpirun and srun (PMIx) with no address variable: rank 0's unique id goes through the
// launcher's PMIx server instead (pmix_rendezvous.h).
bool pmixServed(const EnvLookup& env, const std::string& launcher) {
  return launcher != "torchrun" && lookup(env, "PMIX_NAMESPACE").has_value() && lookup(env, "PMIX_RANK").has_value();
}

const char* kAddressAdvice =
    "set BRAID_COMM_ID=host:port to rank 0's host and a free port on every rank (e.g. mpirun -x "
    "BRAID_COMM_ID=node0:29600 ..., or export it before srun), or MASTER_ADDR and MASTER_PORT (braid then uses "
    "MASTER_PORT+1)";

Status rendezvousAddress(const EnvLookup& env, const std::string& launcher, std::string* out) {
  if (std::optional<std::string> commId = lookup(env, "BRAID_COMM_ID")) {
    *out = *commId;
    return Status::ok();
  }
  std::optional<std::string> host = lookup(env, "MASTER_ADDR"), port = lookup(env, "MASTER_PORT");
  if (host && port) {
    int p = 0;
    BRAID_RETURN_IF_ERROR(parseCount("MASTER_PORT", *port, launcher.c_str(), &p));
    if (p < 1 || p > 65535) return invalidArgument("MASTER_PORT='" + *port + "' is not a port (1..65535)");
    p = p + kMasterPortOffset <= 65535 ? p + kMasterPortOffset : p - kMasterPortOffset;
    bool bareV6 = host->find(':') != std::string::npos && (*host)[0] != '[';
    *out = (bareV6 ? "[" + *host + "]" : *host) + ":" + std::to_string(p);
    return Status::ok();
  }
  if (host || port) {
    return invalidUsage(std::string(host ? "MASTER_ADDR" : "MASTER_PORT") + " is set but " +
                        (host ? "MASTER_PORT" : "MASTER_ADDR") + " is not");
  }
  if (pmixServed(env, launcher)) return Status::ok();  // no address: PMIx
  return invalidUsage("launched by " + launcher + " but no rendezvous address is set and no PMIx server is named " +
                      "(PMIX_NAMESPACE, PMIX_RANK): " + kAddressAdvice);
}

}  // namespace

Status launchInfoFromLookup(const EnvLookup& env, LaunchInfo* out) {
  *out = LaunchInfo();
  const Launcher* found = nullptr;
  for (const Launcher& l : launchers()) {
    if (lookup(env, l.rankVar) || lookup(env, l.sizeVar)) {
      found = &l;
      break;
    }
  }
  if (found == nullptr) {
    std::string looked;
    for (const Launcher& l : launchers()) {
      looked += (looked.empty() ? "" : ", ") + std::string(l.rankVar) + "/" + l.sizeVar + " (" + l.name + ")";
    }
    return invalidUsage("no launcher environment found: looked for " + looked +
                        "; start the program with torchrun, mpirun or srun, or create the communicator with a "
                        "unique id");
  }
  BRAID_RETURN_IF_ERROR(readLauncher(env, *found, out));
  BRAID_RETURN_IF_ERROR(rendezvousAddress(env, found->name, &out->address));
  if (out->address.empty()) {
    out->pmix = true;
    out->jobKey = "pmix|" + *lookup(env, "PMIX_NAMESPACE");
    return Status::ok();  // the id comes from rank 0 through PMIx (launchInfoFromEnv)
  }

  out->jobKey = out->address + "|" + std::to_string(out->nranks);
  for (const char* var : found->identityVars) {
    if (std::optional<std::string> v = lookup(env, var)) out->jobKey += std::string("|") + var + "=" + *v;
  }
  BRAID_RETURN_IF_ERROR(
      uniqueIdForAddress(out->address, out->jobKey, &out->id)
          .withContext("rendezvous address of " + std::string(found->name) + " rank " + std::to_string(out->rank)));
  return Status::ok();
}

Status launchInfoFromEnv(LaunchInfo* out) {
  Status st = launchInfoFromLookup(
      [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v == nullptr ? std::nullopt : std::optional<std::string>(v);
      },
      out);
  if (st.isOk() && out->pmix) {
    st = pmixUniqueId(out->rank, out->nranks, &out->id)
             .withContext("launched by " + out->launcher + " with no address set, the rendezvous through PMIx");
    if (!st.isOk()) return Status(st.code(), st.message() + "; or " + kAddressAdvice);
  }
  if (st.isOk()) {
    BRAID_INFO(log::Subsys::kBootstrap, "launched by ", out->launcher, ": rank ", out->rank, " of ", out->nranks,
               ", local rank ", out->localRank, ", rendezvous ",
               out->pmix ? std::string("through PMIx") : "at " + out->address);
  }
  return st;
}

}  // namespace braid::bootstrap
