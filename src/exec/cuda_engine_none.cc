// This build has no CUDA support (BRAID_ENABLE_CUDA=OFF): no GPU communicator is ever made, so the
// engine only has to say so.
#include "exec/cuda_engine.h"

namespace braid::exec {

struct CudaEngine::State {};

CudaEngine::CudaEngine(std::unique_ptr<State> state) : s_(std::move(state)) {}
CudaEngine::~CudaEngine() = default;

Status CudaEngine::create(const CudaEngineOptions&, std::unique_ptr<CudaEngine>*) {
  return invalidUsage("this braid was built without CUDA support");
}

transport::DeviceOffer CudaEngine::exported() const { return transport::DeviceOffer{}; }
Status CudaEngine::connect(const std::vector<transport::PeerIdentity>&, const std::vector<transport::DeviceOffer>&) {
  return invalidUsage("no CUDA support");
}
Status CudaEngine::runBatch(const CudaCall*, size_t) { return invalidUsage("no CUDA support"); }
Status CudaEngine::runP2p(std::vector<algo::P2pOp>, std::vector<algo::P2pOp>, const void*, void*, void*,
                          const CallNote&) {
  return invalidUsage("no CUDA support");
}
Status CudaEngine::copy(void*, const void*, size_t, void*) { return invalidUsage("no CUDA support"); }
Status CudaEngine::premultiply(const void*, size_t, braidDataType_t, const void*, const void*, void*, void**) {
  return invalidUsage("no CUDA support");
}
Status CudaEngine::stage(const void*, size_t, void*, void**) { return invalidUsage("no CUDA support"); }
Status CudaEngine::releaseScratch(void*, void*) { return invalidUsage("no CUDA support"); }
void CudaEngine::abort() {}
bool CudaEngine::stopped(Status*) const { return false; }
void CudaEngine::watchSample(GpuWatchSample* out) const { *out = GpuWatchSample{}; }
void CudaEngine::connected() {}
bool CudaEngine::peerAccess(int, int) { return false; }
int CudaEngine::channels() const { return 0; }
bool CudaEngine::directCalls() const { return false; }
bool CudaEngine::windowsAcrossProcesses() const { return false; }
int CudaEngine::copyEngineCtas() const { return 0; }
void CudaEngine::limitCopyEngines(int) {}
Status CudaEngine::offerWindow(const void*, WindowOffer*) const { return invalidUsage("no CUDA support"); }
Status CudaEngine::openWindow(const std::vector<WindowOffer>&, std::vector<uint64_t>*) {
  return invalidUsage("no CUDA support");
}
Status CudaEngine::closeWindow(const std::vector<WindowOffer>&) { return invalidUsage("no CUDA support"); }
Status CudaEngine::waitQueued() { return invalidUsage("no CUDA support"); }
Status CudaEngine::importAllocation(const unsigned char*, uint64_t*) { return invalidUsage("no CUDA support"); }
void CudaEngine::releaseAllocation(const unsigned char*) {}

}  // namespace braid::exec
