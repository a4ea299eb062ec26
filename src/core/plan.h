// A GPU communicator's plan at init: the machine (every rank's host topology, gathered), where each
// rank runs, the rings of the search and the tuner made for them. Rank 0 logs it at INFO: the
// machine graph (GRAPH), each ring and tree, and the tuner's table (TUNE); with
// BRAID_DEBUG_SUBSYS=GRAPH also the reason for each choice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/config.h"
#include "core/status.h"
#include "topology/search.h"
#include "transport/transport.h"
#include "tune/tuner.h"

namespace braid::core {

struct CommPlan {
  topology::System system;
  std::vector<topology::RankPlace> places;
  topology::SearchResult search;
  tune::Tuner tuner;
};

/// Gathers the topology and every rank's (host, CUDA device), searches the rings and makes the
/// tuner. `cudaDevice` is this rank's device.
Status makeGpuPlan(bootstrap::Bootstrap& bootstrap, int cudaDevice, const CommConfig& config, CommPlan* out);

/// What every rank's GPU buffers are laid out from. Each rank computes where its slots sit in a
/// peer's arena from its own copy, so all ranks must hold the same values (they come from the
/// environment of each process).
struct GpuLayoutSettings {
  int64_t simpleSlotBytes = 0;  // BRAID_GPU_SIMPLE_BYTES
  int64_t llSlotBytes = 0;      // BRAID_GPU_LL_BYTES
  int64_t ll128SlotBytes = 0;   // BRAID_GPU_LL128_BYTES
  int64_t oneShotBytes = 0;     // BRAID_GPU_ONESHOT_BYTES
  int32_t channels = 0;         // ring channels: from the search, BRAID_MIN_CTAS / BRAID_MAX_CTAS
  int32_t fullChannels = 0;     // channels with every algorithm's FIFOs: the same
  int64_t ceSlotBytes = 0;      // BRAID_CE, BRAID_CE_SLOT_BYTES
};

/// The copy-engine path's slot bytes from BRAID_CE (`ce`: 0, 1 or auto, else an error) and
/// BRAID_CE_SLOT_BYTES (`slotBytes`), for ranks that reach each other's GPU memory on one host
/// (`reach`); 0 (no path) for BRAID_CE=0, without reach, or where two ranks of one process share a
/// GPU: a side stream waiting for a word holds its hardware queue, and the driver deals a context's
/// queues to its streams in turn, so the other rank's kernel may queue behind a wait for that very
/// kernel, a hang (docs/gpu.md); `*why` then says which ranks. The same on every rank, from the
/// same identities, as the arena layout requires.
Status copyEngineSlots(const std::string& ce, int64_t slotBytes, const std::vector<transport::PeerIdentity>& ids,
                       bool reach, size_t* bytes, std::string* why);

/// Ok when every rank's settings equal rank 0's; otherwise an invalid-usage error naming the first
/// rank and setting that differ.
Status checkLayoutAgreement(const std::vector<GpuLayoutSettings>& all);

/// Per rank: parent and children in the two trees of the double binary tree over `ringOrder`
/// ("3<-1[2,4]": rank 3's parent is 1, its children 2 and 4; the root has no "<-").
std::string describeTrees(const std::vector<int>& ringOrder);

/// Rank 0's INFO report of a plan.
void logPlan(const CommPlan& plan);

}  // namespace braid::core
