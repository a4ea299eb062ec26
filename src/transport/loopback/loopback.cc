#include "transport/loopback/loopback.h"

#include <string>

namespace braid::transport {
namespace {

struct Table {
  std::mutex mu;
  std::map<std::pair<uint64_t, int>, std::shared_ptr<LoopbackEndpoint>> endpoints;
};

Table& table() {
  static Table* t = new Table();  // never destroyed: communicators may outlive static destruction
  return *t;
}

}  // namespace

HostFifo* LoopbackEndpoint::incoming(int channel, int connId, int src, size_t slotBytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& fifo = fifos_[{channel, connId, src}];
  if (fifo == nullptr) fifo = std::make_unique<HostFifo>(slots_, slotBytes);
  return fifo.get();
}

LoopbackRegistration::LoopbackRegistration(uint64_t commKey, int rank, std::shared_ptr<LoopbackEndpoint> endpoint)
    : commKey_(commKey), rank_(rank) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.endpoints[{commKey, rank}] = std::move(endpoint);
}

LoopbackRegistration::~LoopbackRegistration() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.endpoints.erase({commKey_, rank_});
}

std::shared_ptr<LoopbackEndpoint> findLoopbackEndpoint(uint64_t commKey, int rank) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.endpoints.find({commKey, rank});
  return it == t.endpoints.end() ? nullptr : it->second;
}

LoopbackLinks::LoopbackLinks(uint64_t commKey, int rank, int slots, size_t slotBytes)
    : commKey_(commKey),
      slotBytes_(slotBytes),
      endpoint_(std::make_shared<LoopbackEndpoint>(slots)),
      registration_(commKey, rank, endpoint_) {}

Status LoopbackLinks::fifo(int channel, int connId, int src, int dst, HostFifo** out) {
  std::shared_ptr<LoopbackEndpoint> endpoint = findLoopbackEndpoint(commKey_, dst);
  if (endpoint == nullptr) {
    return Status(Code::kInternalError, "rank " + std::to_string(dst) +
                                            ", a thread of this process, has no loopback endpoint "
                                            "(its communicator is destroyed)");
  }
  *out = endpoint->incoming(channel, connId, src, slotBytes_);
  std::lock_guard<std::mutex> lock(mu_);
  found_.push_back(std::move(endpoint));
  return Status::ok();
}

}  // namespace braid::transport
