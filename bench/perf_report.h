// What braid-perf's host and GPU sweeps share: the rows of the table, one rank's results, one call of
// the collective, where its input and output lie, and the report that combines every rank's results
// and prints them on global rank 0.
#pragma once

#include <braid/braid.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "perf_options.h"

namespace braid::perf {

bool reduces(Coll c);

// One row of the table: a size and an op.
struct Row {
  size_t bytes, count;
  braidRedOp_t op;
};

std::vector<Row> rowsFor(const Options& o, int n);

// One rank's sweep: per row the time of out-of-place and in-place calls and #wrong, or an error.
struct RankResult {
  int rank = 0;               // global rank
  std::vector<double> us;     // 2 per row; -1: not applicable
  std::vector<double> wrong;  // 2 per row
  // With --compare nccl, NCCL's out-of-place time and #wrong, 1 per row (empty otherwise).
  std::vector<double> ncclUs, ncclWrong;
  // With --percentiles, per row and place (out of place, then in place) the median, 99th percentile
  // and slowest of the timed calls, in us: 6 per row (empty otherwise).
  std::vector<double> tail;
  std::string error;
};

/// Elements of a rank's input and output for a call of `count` (as countFor gives it).
size_t inElems(Coll c, size_t count, int n);
size_t outElems(Coll c, size_t count, int n);

/// Input and output of a call in `send` and `recv`: out of place (place 0) send -> recv; in place (1)
/// both in recv, where all-gather's input is its slot of the output and reduce-scatter's output its
/// slot of the input.
void placeBuffers(Coll c, int place, char* send, char* recv, int rank, size_t count, size_t typeSize, char** in,
                  char** out);

/// The median, 99th percentile and largest of `us` (one time per call), appended to `tail`.
void appendPercentiles(std::vector<double> us, std::vector<double>* tail);

/// One call of the collective; `stream` is ignored by host communicators.
braidResult_t runOnce(Coll c, void* send, void* recv, size_t count, braidDataType_t t, braidRedOp_t op, int root,
                      int rank, int n, braidComm_t comm, braidStream_t stream);

/// Reduces `k` doubles with `op` over all ranks, in place, for each of the calling thread's ranks
/// (vals[j]: its j-th rank's array). Host communicators all-reduce host memory; GPU ones stage through
/// device memory. False (and a message on stderr) when it failed.
using Combine = std::function<bool(const std::vector<double*>& vals, size_t k, braidRedOp_t op)>;

/// The header: `how` the ranks run, `where` (host memory, or the GPUs and the timing mode), then one
/// comment line per note.
void printHeader(const Options& o, int n, const char* how, const std::string& where,
                 const std::vector<std::string>& notes = {});

/// Combines the results of the calling thread's ranks (`mine`, one per rank it drives) with every
/// other rank's; the thread that holds global rank 0 prints the table (and writes the JSON file).
/// False when combining failed.
bool report(const Options& o, const std::vector<Row>& rows, const std::vector<RankResult>& mine, const Combine& combine,
            int n);

}  // namespace braid::perf
