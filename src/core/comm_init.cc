#include "core/comm_init.h"

#include <thread>

#include "bootstrap/launcher_env.h"
#include "core/log.h"
#include "exec/cuda_device.h"

namespace braid::core {

Status initAll(int ndev, const int* devlist, std::vector<std::shared_ptr<Comm>>* out) {
  if (ndev < 1) return invalidArgument("'ndev' = " + std::to_string(ndev) + " must be >= 1");
  std::string why;
  int count = exec::cudaDeviceCount(&why);
  if (count == 0) return invalidUsage("needs CUDA devices, but " + why);
  for (int i = 0; i < ndev; ++i) {
    int dev = devlist != nullptr ? devlist[i] : i;
    if (dev < 0 || dev >= count) {
      return invalidArgument((devlist != nullptr ? "'devlist[" + std::to_string(i) + "]'" : std::string("'ndev'")) +
                             ": device " + std::to_string(dev) + " does not exist (this machine has " +
                             std::to_string(count) + ")");
    }
  }
  CommConfig config;
  BRAID_RETURN_IF_ERROR(defaultConfig(&config));
  config.deviceKind = DeviceKind::kCuda;
  bootstrap::UniqueIdBytes id;
  BRAID_RETURN_IF_ERROR(bootstrap::createUniqueId(&id));

  std::vector<std::shared_ptr<Comm>> comms(ndev);
  std::vector<Status> results(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      InitArgs args;
      args.id = id;
      args.rank = i;
      args.nranks = ndev;
      args.config = config;
      args.cudaDevice = devlist != nullptr ? devlist[i] : i;
      results[i] = Comm::start(args, &comms[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) BRAID_RETURN_IF_ERROR(results[i].withContext("rank " + std::to_string(i)));
  *out = std::move(comms);
  return Status::ok();
}

Status initFromEnv(const CommConfig& config, std::shared_ptr<Comm>* out) {
  bootstrap::LaunchInfo info;
  BRAID_RETURN_IF_ERROR(bootstrap::launchInfoFromEnv(&info));
  BRAID_INFO(log::Subsys::kInit, "launcher ", info.launcher, ": rank ", info.rank, " of ", info.nranks, ", local rank ",
             info.localRank);
  InitArgs args;
  args.id = info.id;
  args.rank = info.rank;
  args.nranks = info.nranks;
  args.config = config;
  int count = config.deviceKind == DeviceKind::kHost ? 0 : exec::cudaDeviceCount();
  if (count > 0) args.cudaDevice = (info.localRank >= 0 ? info.localRank : 0) % count;  // -1: launcher gave none
  return Comm::start(args, out);
}

}  // namespace braid::core
