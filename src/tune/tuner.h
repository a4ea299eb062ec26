// The tuner: for each call, the algorithm, protocol, channel count and chunk size with the least
// predicted time (cost.h), among what the configuration allows. A pure function of the machine
// summary and the call, so every rank decides the same.
//
// Allowed lists (BRAID_ALGO, BRAID_PROTO, config->algorithm, config->protocol), case-insensitive:
//   ring,tree              only these
//   ^tree                  all but these
//   allreduce:tree,ring;broadcast:ring      per collective (allreduce, broadcast, reduce,
//                          allgather, reducescatter); an entry without a prefix sets every
//                          collective, a prefixed one then replaces it for its collective
// Unknown names are errors when the communicator is made. Environment and config both apply (a
// choice must pass both). When nothing allowed implements a collective it runs the ring (every
// collective has one) and the decision says so.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algo/call.h"
#include "core/status.h"
#include "tune/cost.h"
#include "tune/decision_cache.h"

namespace braid::tune {

constexpr int kNumColls = static_cast<int>(algo::Coll::kNumColls);
constexpr int kNumAlgos = static_cast<int>(algo::Algo::kNumAlgos);
constexpr int kNumProtos = static_cast<int>(Proto::kNumProtos);

/// What is allowed, per collective.
struct Allowed {
  bool algo[kNumColls][kNumAlgos];
  bool proto[kNumColls][kNumProtos];
  Allowed();
};

/// Applies an algorithm list (`what` names its source in errors) on top of `allowed`.
Status restrictAlgorithms(const std::string& text, const char* what, Allowed* allowed);
/// Applies a protocol list on top of `allowed`.
Status restrictProtocols(const std::string& text, const char* what, Allowed* allowed);

struct TunerConfig {
  std::string algorithm;  // config->algorithm
  std::string protocol;   // config->protocol
  int minCTAs = 1;        // config->minCTAs / maxCTAs
  int maxCTAs = 64;
  size_t hostChunkBytes = 128 * 1024;  // BRAID_CHUNK_BYTES (host memory)
};

struct Decision {
  algo::Algo algo = algo::Algo::kRing;
  Proto proto = Proto::kSimple;
  int channels = 1;
  size_t chunkBytes = 0;
  double predictedUs = 0;
  std::string note;  // set when the choice was forced (nothing allowed implements the collective)
};

class Tuner {
 public:
  Tuner() = default;
  /// Reads BRAID_ALGO, BRAID_PROTO, BRAID_MIN_CTAS and BRAID_MAX_CTAS; bad names and ranges are errors.
  static Status create(const Machine& machine, const TunerConfig& config, Tuner* out);

  /// The decision for a call moving `bytes` (the nccl-tests message size). Recent decisions are
  /// kept (DecisionCache), so repeated sizes cost a look-up.
  Decision decide(algo::Coll coll, size_t bytes) const;

  /// Plans `call` in place, once, for both engines: from what it asks (collective, count of
  /// `elemBytes`-byte elements, per rank's block for all-gather and reduce-scatter; root; op, an
  /// average dividing at the end; `direct`), its algorithm, channels, chunk, post-op and protocol.
  /// A direct call (every rank's buffers reached by address: registered, or windows) runs the
  /// direct kernel, Simple, on a CTA per 256 KiB of its count up to the engine's directChannels,
  /// the same on every rank. Returns the model's time for the FIFO plan, in microseconds.
  double plan(algo::Call* call, size_t elemBytes) const;

  /// A table of decisions: one line per size (powers of 4 from 8 B to `maxBytes`) and collective.
  std::string table(size_t maxBytes) const;
  /// Sizes (powers of 2 from 8 B to `maxBytes`) where the chosen algorithm or protocol changes,
  /// as "size: from -> to".
  std::vector<std::string> crossovers(algo::Coll coll, size_t maxBytes) const;

  const Machine& machine() const { return machine_; }
  /// What the executor reserved for the one-shot algorithm (known once its buffers exist): the
  /// largest block and the most CTAs.
  void setOneShot(size_t bytes, int channels) {
    machine_.oneShotBytes = bytes;
    machine_.oneShotChannels = channels;
    cache_.clear();
  }
  /// Whether the executor's LL128 lines arrive whole (not where its FIFOs fell back to host memory).
  void setLl128Capable(bool capable) {
    machine_.ll128Capable = machine_.ll128Capable && capable;
    cache_.clear();
  }
  /// What the GPU executor laid out (known once its FIFOs are sized): the most channels a ring and
  /// the other FIFO algorithms may use (0: the machine's), and each protocol's slot, which is the
  /// chunk every Prims operation moves. Decisions stay within them, so what the tuner decides is
  /// what runs: the executor neither clamps the channels again nor picks the chunk itself.
  struct EngineLimits {
    int ringChannels = 0;
    int channels = 0;
    size_t slotBytes[kNumProtos] = {512 * 1024, 32 * 1024, 64 * 1024};  // by Proto
    int directChannels = 1;  // the most CTAs of a direct call (registered buffers, windows)
    int ceCtas = 0;          // the most CTAs of the copy-engine reducer (setCopyEngine)
  };
  /// The GPU executor's copy-engine path (known once it connected): offered with a reducer of at
  /// most `ctas` CTAs (0: not offered); `forced` (BRAID_CE=1): every
  /// collective it runs takes it, where the allowed lists let it.
  void setCopyEngine(int ctas, bool forced);
  void setEngineLimits(const EngineLimits& limits) {
    limits_ = limits;
    cache_.clear();
  }
  const EngineLimits& engineLimits() const { return limits_; }
  int minChannels() const { return minChannels_; }
  int maxChannels() const { return maxChannels_; }

  /// The channels (algo, proto) gets for `bytes`: the per-channel minimum's count, within what the
  /// machine has and the configured bounds.
  int channelsFor(algo::Algo a, Proto proto, size_t bytes) const;

 private:
  Decision evaluate(algo::Coll coll, size_t bytes) const;  // the cost model, uncached

  Machine machine_;
  Allowed allowed_;
  int minChannels_ = 1;
  int maxChannels_ = 64;
  size_t hostChunkBytes_ = 128 * 1024;
  EngineLimits limits_;
  bool ceForced_ = false;
  mutable DecisionCache cache_;
};

/// "ring/ll 4ch 12.3us" for logs and tables.
std::string describe(const Decision& d);

}  // namespace braid::tune
