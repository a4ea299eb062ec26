#include "perf_check.h"

#include <cmath>

#include "core/datatype.h"
#include "exec/host_reduce.h"

namespace braid::perf {
namespace {

double decode(const char* p, braidDataType_t t) { return exec::elementToDouble(p, t); }
void encode(double v, char* p, braidDataType_t t) { exec::elementFromDouble(v, p, t); }

// Small non-negative integers: sums stay exact in every type for a handful of ranks; a product is
// 2 at most (one rank contributes 2, the others 1).
double value(size_t i, braidRedOp_t op, int rank, int nranks) {
  if (op == braidProd) return static_cast<int>(i % nranks) == rank ? 2 : 1;
  if (op == braidMax || op == braidMin) return static_cast<double>((rank * 7 + i) % 16);
  return static_cast<double>((rank + i) % 4);
}

double reduceAll(size_t i, braidRedOp_t op, int nranks, braidDataType_t t) {
  double r = value(i, op, 0, nranks);
  for (int q = 1; q < nranks; ++q) {
    double x = value(i, op, q, nranks);
    if (op == braidSum || op == braidAvg) r += x;
    if (op == braidProd) r *= x;
    if (op == braidMax) r = std::max(r, x);
    if (op == braidMin) r = std::min(r, x);
  }
  if (op == braidAvg) r = core::typeSize(t) && t <= braidUint64 ? std::trunc(r / nranks) : r / nranks;
  return r;
}

}  // namespace

void fillInput(void* buf, size_t elems, braidDataType_t type, braidRedOp_t op, int rank, int nranks) {
  size_t es = core::typeSize(type);
  for (size_t i = 0; i < elems; ++i) encode(value(i, op, rank, nranks), static_cast<char*>(buf) + i * es, type);
}

size_t countWrong(const void* out, Coll coll, size_t count, braidDataType_t type, braidRedOp_t op, int root, int rank,
                  int nranks) {
  size_t es = core::typeSize(type);
  size_t elems = (coll == Coll::kAllGather || coll == Coll::kAllToAll) ? count * nranks : count;
  if (coll == Coll::kReduce && rank != root) return 0;
  size_t wrong = 0;
  char typed[8];
  for (size_t e = 0; e < elems; ++e) {
    double want = 0;
    switch (coll) {
      case Coll::kBroadcast: want = value(e, op, root, nranks); break;
      case Coll::kAllGather: want = value(e % count, op, static_cast<int>(e / count), nranks); break;
      case Coll::kAllToAll: want = value(rank * count + e % count, op, static_cast<int>(e / count), nranks); break;
      case Coll::kSendRecv: want = value(e, op, (rank + nranks - 1) % nranks, nranks); break;
      case Coll::kReduceScatter: want = reduceAll(rank * count + e, op, nranks, type); break;
      default: want = reduceAll(e, op, nranks, type);
    }
    encode(want, typed, type);  // the answer as the type can hold it
    double w = decode(typed, type), got = decode(static_cast<const char*>(out) + e * es, type);
    // avg rounds a division; fp8 sums round at every hop (their integers are exact only up to 8 or 16).
    double tol = op == braidAvg ? std::fabs(w) * 0.01 : 0;
    if (type == braidFloat8e4m3 || type == braidFloat8e5m2) tol += std::fabs(w) * 0.25 * nranks;
    if (!(std::fabs(got - w) <= tol)) ++wrong;
  }
  return wrong;
}

}  // namespace braid::perf
