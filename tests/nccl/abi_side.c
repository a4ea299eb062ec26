/* Compiled twice: once against braid's nccl.h (ABI_SIDE=braid) and once against the NCCL header
 * of the CUDA toolkit (ABI_SIDE=system). Each copy reports the values, sizes and offsets of its
 * header through functions named after its side; abi_main.c compares them. */
#include <nccl.h>
#include <stddef.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(ABI_SIDE, CAT(_, name))

/* Fills `out` with every fact compared; returns how many. */
int FN(facts)(long* out) {
  int n = 0;
  /* results */
  out[n++] = ncclSuccess, out[n++] = ncclUnhandledCudaError, out[n++] = ncclSystemError, out[n++] = ncclInternalError;
  out[n++] = ncclInvalidArgument, out[n++] = ncclInvalidUsage, out[n++] = ncclRemoteError, out[n++] = ncclInProgress;
  out[n++] = ncclNumResults;
  /* types */
  out[n++] = ncclInt8, out[n++] = ncclChar, out[n++] = ncclUint8, out[n++] = ncclInt32, out[n++] = ncclInt;
  out[n++] = ncclUint32, out[n++] = ncclInt64, out[n++] = ncclUint64, out[n++] = ncclFloat16, out[n++] = ncclHalf;
  out[n++] = ncclFloat32, out[n++] = ncclFloat, out[n++] = ncclFloat64, out[n++] = ncclDouble;
  out[n++] = ncclBfloat16, out[n++] = ncclFloat8e4m3, out[n++] = ncclFloat8e5m2, out[n++] = ncclNumTypes;
  /* ops */
  out[n++] = ncclSum, out[n++] = ncclProd, out[n++] = ncclMax, out[n++] = ncclMin, out[n++] = ncclAvg;
  out[n++] = ncclNumOps, out[n++] = ncclMaxRedOp, out[n++] = sizeof(ncclRedOp_t);
  out[n++] = ncclScalarDevice, out[n++] = ncclScalarHostImmediate;
  /* version and constants */
  out[n++] = NCCL_MAJOR, out[n++] = NCCL_MINOR, out[n++] = NCCL_PATCH, out[n++] = NCCL_VERSION_CODE;
  out[n++] = NCCL_VERSION(2, 28, 9), out[n++] = NCCL_VERSION(2, 8, 4), out[n++] = NCCL_UNIQUE_ID_BYTES;
  out[n++] = NCCL_CONFIG_UNDEF_INT, out[n++] = NCCL_SPLIT_NOCOLOR, out[n++] = NCCL_WIN_COLL_SYMMETRIC;
  out[n++] = NCCL_WIN_REQUIRED_ALIGNMENT, out[n++] = NCCL_CTA_POLICY_ZERO, out[n++] = NCCL_SHRINK_ABORT;
  /* structs */
  out[n++] = sizeof(ncclUniqueId), out[n++] = sizeof(ncclConfig_t), out[n++] = sizeof(ncclSimInfo_t);
  out[n++] = offsetof(ncclConfig_t, size), out[n++] = offsetof(ncclConfig_t, magic);
  out[n++] = offsetof(ncclConfig_t, version), out[n++] = offsetof(ncclConfig_t, blocking);
  out[n++] = offsetof(ncclConfig_t, cgaClusterSize), out[n++] = offsetof(ncclConfig_t, minCTAs);
  out[n++] = offsetof(ncclConfig_t, maxCTAs), out[n++] = offsetof(ncclConfig_t, netName);
  out[n++] = offsetof(ncclConfig_t, splitShare), out[n++] = offsetof(ncclConfig_t, trafficClass);
  out[n++] = offsetof(ncclConfig_t, commName), out[n++] = offsetof(ncclConfig_t, collnetEnable);
  out[n++] = offsetof(ncclConfig_t, CTAPolicy), out[n++] = offsetof(ncclConfig_t, shrinkShare);
  out[n++] = offsetof(ncclConfig_t, nvlsCTAs), out[n++] = offsetof(ncclConfig_t, nChannelsPerNetPeer);
  out[n++] = offsetof(ncclConfig_t, nvlinkCentricSched), out[n++] = offsetof(ncclSimInfo_t, estimatedTime);
  {
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
    out[n++] = (long)c.size, out[n++] = c.magic, out[n++] = c.version, out[n++] = c.blocking, out[n++] = c.maxCTAs;
    out[n++] = c.nvlinkCentricSched, out[n++] = (long)s.size, out[n++] = s.magic, out[n++] = s.version;
    out[n++] = (long)(s.estimatedTime * 1000);
  }
  return n;
}
