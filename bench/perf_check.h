// braid-perf's result check: inputs whose reductions are exact in every type (so the answer does
// not depend on the reduction order), and a count of the output elements that differ from a plain
// loop's answer.
#pragma once

#include <braid/braid.h>

#include <cstddef>

#include "perf_options.h"

namespace braid::perf {

/// Writes rank `rank`'s input of `elems` elements.
void fillInput(void* buf, size_t elems, braidDataType_t type, braidRedOp_t op, int rank, int nranks);

/// Output elements of `rank` that differ from the expected result of `coll` over inputs made by
/// fillInput (count = elements per rank as countFor gives them).
size_t countWrong(const void* out, Coll coll, size_t count, braidDataType_t type, braidRedOp_t op, int root, int rank,
                  int nranks);

}  // namespace braid::perf
