// Launch information from torchrun, Open MPI and Slurm environments (over a map, not environ).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "bootstrap/launcher_env.h"

namespace braid::bootstrap {
namespace {

using Env = std::map<std::string, std::string>;

Status launch(const Env& env, LaunchInfo* out) {
  return launchInfoFromLookup(
      [&env](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      out);
}

UniqueIdInfo idOf(const LaunchInfo& info) {
  UniqueIdInfo id;
  EXPECT_TRUE(decodeUniqueId(info.id, &id).isOk());
  return id;
}

const Env kTorchrun = {{"RANK", "3"},
                       {"WORLD_SIZE", "8"},
                       {"LOCAL_RANK", "1"},
                       {"MASTER_ADDR", "127.0.0.1"},
                       {"MASTER_PORT", "29500"},
                       {"TORCHELASTIC_RUN_ID", "run-7"}};

TEST(BootstrapLauncher, Torchrun) {
  LaunchInfo info;
  Status st = launch(kTorchrun, &info);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.nranks, 8);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.address, "127.0.0.1:29501");  // MASTER_PORT is PyTorch's TCPStore
  EXPECT_NE(info.jobKey.find("TORCHELASTIC_RUN_ID=run-7"), std::string::npos) << info.jobKey;
  UniqueIdInfo id = idOf(info);
  EXPECT_TRUE(id.rank0ServesRoot);
  EXPECT_EQ(id.root.toString(), "127.0.0.1:29501");
}

TEST(BootstrapLauncher, OpenMpiWithCommId) {
  Env env = {{"OMPI_COMM_WORLD_RANK", "0"},       {"OMPI_COMM_WORLD_SIZE", "2"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"BRAID_COMM_ID", "127.0.0.1:4000"},
             {"PMIX_NAMESPACE", "prterun-x-1@1"}, {"SLURM_STEP_ID", "differs per node under mpirun"}};
  LaunchInfo info;
  Status st = launch(env, &info);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(info.launcher, "Open MPI");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.nranks, 2);
  EXPECT_EQ(info.address, "127.0.0.1:4000");
  EXPECT_NE(info.jobKey.find("PMIX_NAMESPACE=prterun-x-1@1"), std::string::npos) << info.jobKey;
  EXPECT_EQ(info.jobKey.find("SLURM"), std::string::npos) << info.jobKey;
}

TEST(BootstrapLauncher, SlurmWithoutLocalRank) {
  Env env = {{"SLURM_PROCID", "5"},  {"SLURM_NTASKS", "6"},  {"SLURM_JOB_ID", "123"},
             {"SLURM_STEP_ID", "0"}, {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "65535"}};
  LaunchInfo info;
  Status st = launch(env, &info);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(info.launcher, "Slurm");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.nranks, 6);
  EXPECT_EQ(info.localRank, -1);
  EXPECT_EQ(info.address, "[::1]:65534");
  EXPECT_NE(info.jobKey.find("SLURM_JOB_ID=123|SLURM_STEP_ID=0"), std::string::npos) << info.jobKey;
}

TEST(BootstrapLauncher, PrecedenceTorchrunThenMpiThenSlurm) {
  Env env = kTorchrun;
  env["OMPI_COMM_WORLD_RANK"] = "1";
  env["OMPI_COMM_WORLD_SIZE"] = "2";
  env["SLURM_PROCID"] = "0";
  env["SLURM_NTASKS"] = "1";
  LaunchInfo info;
  ASSERT_TRUE(launch(env, &info).isOk());
  EXPECT_EQ(info.launcher, "torchrun");
  env.erase("RANK");
  env.erase("WORLD_SIZE");
  ASSERT_TRUE(launch(env, &info).isOk());
  EXPECT_EQ(info.launcher, "Open MPI");
  EXPECT_EQ(info.rank, 1);
  env.erase("OMPI_COMM_WORLD_RANK");
  env.erase("OMPI_COMM_WORLD_SIZE");
  ASSERT_TRUE(launch(env, &info).isOk());
  EXPECT_EQ(info.launcher, "Slurm");
  EXPECT_EQ(info.nranks, 1);
}

TEST(BootstrapLauncher, EveryRankGetsTheSameIdAndOtherJobsAnother) {
  LaunchInfo r0, r3, other;
  Env env0 = kTorchrun;
  env0["RANK"] = "0";
  env0["LOCAL_RANK"] = "0";
  ASSERT_TRUE(launch(env0, &r0).isOk());
  ASSERT_TRUE(launch(kTorchrun, &r3).isOk());
  EXPECT_EQ(idOf(r0).magic, idOf(r3).magic);
  Env env2 = kTorchrun;
  env2["TORCHELASTIC_RUN_ID"] = "run-8";
  ASSERT_TRUE(launch(env2, &other).isOk());
  EXPECT_NE(idOf(other).magic, idOf(r3).magic);
}

// One bad variable at a time: the error is invalidArgument and names the variable and its value.
TEST(BootstrapLauncher, BadNumbersNameTheVariable) {
  const std::pair<const char*, const char*> bad[] = {
      {"RANK", "x"},         {"RANK", "-1"},          {"RANK", "1.5"},      {"RANK", " 3"},
      {"RANK", "8"},         {"RANK", "99999999999"}, {"WORLD_SIZE", "0"},  {"WORLD_SIZE", "eight"},
      {"LOCAL_RANK", "abc"}, {"MASTER_PORT", "http"}, {"MASTER_PORT", "0"}, {"MASTER_PORT", "70000"},
  };
  for (const auto& [name, value] : bad) {
    Env env = kTorchrun;
    env[name] = value;
    LaunchInfo info;
    Status st = launch(env, &info);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << name << "=" << value << ": " << st.message();
    EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(value), std::string::npos) << st.message();
  }
}

TEST(BootstrapLauncher, HalfSetLauncherIsAnError) {
  LaunchInfo info;
  Status st = launch({{"OMPI_COMM_WORLD_RANK", "0"}, {"BRAID_COMM_ID", "127.0.0.1:1"}}, &info);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("OMPI_COMM_WORLD_SIZE is not"), std::string::npos) << st.message();
}

// Under mpirun or srun with a PMIx server named and no address: the id is left to PMIx (rank 0
// publishes it), and the job key is the PMIx namespace. torchrun has no PMIx server.
TEST(BootstrapLauncher, MpirunWithoutAnAddressUsesPmix) {
  const Env mpi = {{"OMPI_COMM_WORLD_RANK", "2"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"PMIX_NAMESPACE", "prterun-x-1@1"},
                   {"PMIX_RANK", "2"}};
  LaunchInfo info;
  Status st = launch(mpi, &info);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_TRUE(info.pmix);
  EXPECT_EQ(info.address, "");
  EXPECT_EQ(info.jobKey, "pmix|prterun-x-1@1");
  EXPECT_EQ(info.rank, 2);
  Env withAddress = mpi;
  withAddress["BRAID_COMM_ID"] = "127.0.0.1:4000";
  ASSERT_TRUE(launch(withAddress, &info).isOk());
  EXPECT_FALSE(info.pmix);  // an address set wins
  EXPECT_EQ(info.address, "127.0.0.1:4000");
  Env slurm = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"PMIX_NAMESPACE", "slurm.pmix.7.0"}, {"PMIX_RANK", "0"}};
  ASSERT_TRUE(launch(slurm, &info).isOk());
  EXPECT_TRUE(info.pmix);
  Env torch = kTorchrun;
  torch.erase("MASTER_ADDR");
  torch.erase("MASTER_PORT");
  torch["PMIX_NAMESPACE"] = "x";
  torch["PMIX_RANK"] = "3";
  st = launch(torch, &info);
  EXPECT_EQ(st.code(), Code::kInvalidUsage) << st.message();
}

TEST(BootstrapLauncher, MissingAddressExplainsWhatToSet) {
  LaunchInfo info;
  Status st = launch({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, &info);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("Open MPI"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("no PMIx server is named (PMIX_NAMESPACE, PMIX_RANK)"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("mpirun -x BRAID_COMM_ID="), std::string::npos) << st.message();
  st = launch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "node0"}}, &info);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("MASTER_PORT is not"), std::string::npos) << st.message();
  Env bad = kTorchrun;
  bad["BRAID_COMM_ID"] = "no-port-here";
  st = launch(bad, &info);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("no-port-here"), std::string::npos) << st.message();
}

TEST(BootstrapLauncher, NoLauncherListsWhatWasLookedFor) {
  LaunchInfo info;
  Status st = launch({{"BRAID_COMM_ID", "127.0.0.1:1"}, {"LOCAL_RANK", "0"}, {"RANK", ""}}, &info);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  for (const char* v : {"RANK/WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    EXPECT_NE(st.message().find(v), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace braid::bootstrap
