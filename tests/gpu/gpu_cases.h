// What the gpu tests call and check: a Case (collective, type, op, count, root, in place, offset),
// its buffers on every rank (inputs uploaded, outputs poisoned), the host reference, and a CallSet
// of several cases issued back to back or in groups.
//
// The inputs are small integers (-2..2, as each type stores them), so every sum, product, max and
// min of up to 4 ranks is exact in every type and the reference (exec/host_reduce, rank order) is
// bit-exact whatever order the GPU combined them in; avg then divides an exact sum, correctly rounded
// on both sides.
#pragma once

#include <braid/braid.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/datatype.h"
#include "exec/host_reduce.h"
#include "gpu_world.h"

namespace braid::gputest {

enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
inline const char* collName(Coll c) {
  static const char* names[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter"};
  return names[static_cast<int>(c)];
}

inline constexpr unsigned char kPoison = 0xA5;  // no input or result of these tests has this byte pattern

/// Fills `bytes` at `p` (memory of `device`) with kPoison, in place before the next call is issued.
inline void poison(int device, void* p, size_t bytes) { fillDevice(device, p, kPoison, bytes); }

// Element i of rank r's input, stored as `type`.
inline void fillInput(std::vector<unsigned char>* buf, size_t count, braidDataType_t type, int r, int salt) {
  size_t es = core::typeSize(type);
  buf->assign(count * es, 0);
  for (size_t i = 0; i < count; ++i) {
    double v = static_cast<double>(static_cast<int>((r * 5 + i * 3 + salt) % 5) - 2);
    exec::elementFromDouble(v, buf->data() + i * es, type);
  }
}

struct Case {
  Coll coll = Coll::kAllReduce;
  braidDataType_t type = braidFloat32;
  braidRedOp_t op = braidSum;
  size_t count = 1;
  int root = 0;
  bool inPlace = false;
  size_t offset = 0;  // elements added to every buffer address (unaligned access)
  int salt = 0;
  std::string describe() const {
    std::ostringstream s;
    s << collName(coll) << " " << core::typeName(type) << " " << core::opName(op) << " count " << count << " root "
      << root << (inPlace ? " in-place" : "") << " offset " << offset;
    return s.str();
  }
};

inline size_t inElems(Coll c, size_t count, int n) { return c == Coll::kReduceScatter ? count * n : count; }
inline size_t outElems(Coll c, size_t count, int n) { return c == Coll::kAllGather ? count * n : count; }

// The expected output of rank r (empty: the output is not defined there, e.g. reduce off the root).
inline std::vector<unsigned char> expected(const Case& c, const std::vector<std::vector<unsigned char>>& in, int r,
                                           int n) {
  const size_t es = core::typeSize(c.type), count = c.count;
  auto reduceOver = [&](size_t from) {  // op over ranks of in[q][from .. from + count)
    std::vector<unsigned char> acc(in[0].begin() + from * es, in[0].begin() + (from + count) * es);
    for (int q = 1; q < n; ++q)
      exec::reduceElems(acc.data(), acc.data(), in[q].data() + from * es, count, c.type, c.op);
    if (c.op == braidAvg) exec::divideElems(acc.data(), acc.data(), count, c.type, n);
    return acc;
  };
  switch (c.coll) {
    case Coll::kAllReduce: return reduceOver(0);
    case Coll::kReduce: return r == c.root ? reduceOver(0) : std::vector<unsigned char>{};
    case Coll::kBroadcast: return in[c.root];
    case Coll::kReduceScatter: return reduceOver(static_cast<size_t>(r) * count);
    case Coll::kAllGather: {
      std::vector<unsigned char> out;
      for (int q = 0; q < n; ++q) out.insert(out.end(), in[q].begin(), in[q].end());
      return out;
    }
  }
  return {};
}

// Issues case `c` on rank r, on `stream` (default: the rank's stream).
inline braidResult_t issue(const Case& c, World& w, int r, const void* send, void* recv,
                           cudaStream_t stream = nullptr) {
  braidComm_t comm = w.comms[r];
  braidStream_t s = reinterpret_cast<braidStream_t>(stream != nullptr ? stream : w.streams[r]);
  switch (c.coll) {
    case Coll::kAllReduce: return braidAllReduce(send, recv, c.count, c.type, c.op, comm, s);
    case Coll::kBroadcast: return braidBroadcast(send, recv, c.count, c.type, c.root, comm, s);
    case Coll::kReduce: return braidReduce(send, recv, c.count, c.type, c.op, c.root, comm, s);
    case Coll::kAllGather: return braidAllGather(send, recv, c.count, c.type, comm, s);
    case Coll::kReduceScatter: return braidReduceScatter(send, recv, c.count, c.type, c.op, comm, s);
  }
  return braidInvalidArgument;
}

// The buffers of one case on every rank, inputs uploaded and outputs poisoned.
struct CaseBuffers {
  std::vector<std::vector<unsigned char>> in;
  std::vector<std::unique_ptr<DeviceBuffer>> sendBufs, recvBufs;
  std::vector<const void*> send;
  std::vector<void*> recv;

  CaseBuffers(const Case& c, World& w) {
    const int n = w.size();
    const size_t es = core::typeSize(c.type), pad = c.offset * es;
    const size_t inBytes = inElems(c.coll, c.count, n) * es, outBytes = outElems(c.coll, c.count, n) * es;
    for (int r = 0; r < n; ++r) {
      in.emplace_back();
      fillInput(&in.back(), inElems(c.coll, c.count, n), c.type, r, c.salt);
      if (!w.local(r)) {  // on another host: its input only, for the reference
        sendBufs.emplace_back();
        recvBufs.emplace_back();
        send.push_back(nullptr);
        recv.push_back(nullptr);
        continue;
      }
      // In place: one buffer the size of the larger side; the input sits where the API says.
      sendBufs.push_back(std::make_unique<DeviceBuffer>(w.devices[r], pad + std::max(inBytes, outBytes)));
      char* sb = static_cast<char*>(sendBufs.back()->ptr) + pad;
      char* rb;
      if (c.inPlace) {
        rb = sb;
        if (c.coll == Coll::kAllGather) sb = rb + r * inBytes;
        if (c.coll == Coll::kReduceScatter) rb = sb + r * outBytes;
        recvBufs.emplace_back();
      } else {
        recvBufs.push_back(std::make_unique<DeviceBuffer>(w.devices[r], pad + outBytes));
        rb = static_cast<char*>(recvBufs.back()->ptr) + pad;
      }
      poison(w.devices[r], c.inPlace ? static_cast<char*>(sendBufs.back()->ptr) + pad : rb,
             c.inPlace ? std::max(inBytes, outBytes) : outBytes);
      writeDevice(w.devices[r], sb, in[r].data(), inBytes);
      send.push_back(sb);
      recv.push_back(rb);
    }
  }
  void upload(const Case& c, World& w) {
    const size_t es = core::typeSize(c.type);
    for (int r = 0; r < w.size(); ++r) {
      fillInput(&in[r], inElems(c.coll, c.count, w.size()), c.type, r, c.salt);
      if (!w.local(r)) continue;
      if (!c.inPlace) poison(w.devices[r], recv[r], outElems(c.coll, c.count, w.size()) * es);
      writeDevice(w.devices[r], const_cast<void*>(send[r]), in[r].data(), in[r].size());
    }
  }
  // "" if every rank's output matches the reference, else the first difference.
  std::string check(const Case& c, World& w) {
    const int n = w.size();
    const size_t es = core::typeSize(c.type);
    for (int r = 0; r < n; ++r) {
      std::vector<unsigned char> want = w.local(r) ? expected(c, in, r, n) : std::vector<unsigned char>{};
      if (want.empty()) continue;
      std::vector<unsigned char> got(want.size());
      readDevice(w.devices[r], got.data(), recv[r], got.size());
      if (got == want) continue;
      // The first wrong element, and how many are wrong where: a pattern (one line, one step, the
      // tail) points at the cause.
      const size_t total = want.size() / es;
      size_t first = total, last = 0, wrong = 0;
      for (size_t i = 0; i < total; ++i) {
        if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
          first = std::min(first, i);
          last = i;
          ++wrong;
        }
      }
      std::ostringstream m;
      m << c.describe() << ": rank " << r << " element " << first << " is "
        << exec::elementToDouble(got.data() + first * es, c.type) << ", expected "
        << exec::elementToDouble(want.data() + first * es, c.type) << " (" << wrong << " of " << total
        << " elements wrong, from " << first << " to " << last << ")";
      return m.str();
    }
    return "";
  }
};

// Runs one case on every rank and checks it; "" on success.
inline std::string runCase(const Case& c, World& w) {
  CaseBuffers b(c, w);
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    braidResult_t res = issue(c, w, r, b.send[r], b.recv[r]);
    if (res != braidSuccess) return c.describe() + ": rank " + std::to_string(r) + ": " + braidGetLastError();
  }
  if (!w.sync()) return c.describe() + ": " + w.error;
  return b.check(c, w);
}

// Calls of several shapes, each with its own buffers; the salts number them.
struct CallSet {
  std::vector<Case> cases;
  std::vector<std::unique_ptr<CaseBuffers>> bufs;

  CallSet(World& w, std::initializer_list<std::tuple<Coll, size_t, int>> calls) {
    for (auto [coll, count, root] : calls) {
      Case c;
      c.coll = coll;
      c.count = count;
      c.root = (root % w.size() + w.size()) % w.size();  // -1: the last rank
      c.salt = static_cast<int>(cases.size());
      cases.push_back(c);
      bufs.push_back(std::make_unique<CaseBuffers>(c, w));
    }
  }
  // Rank r's call i; "" or the error.
  std::string issueOne(World& w, size_t i, int r) {
    if (issue(cases[i], w, r, bufs[i]->send[r], bufs[i]->recv[r]) == braidSuccess) return "";
    return cases[i].describe() + ": rank " + std::to_string(r) + ": " + braidGetLastError();
  }
  // Every call for every rank, `rounds` times without waiting (each call on all ranks, then the
  // next); with `grouped`, each rank's calls of a round in one braidGroupStart/End.
  std::string issueAll(World& w, int rounds, bool grouped) {
    for (int round = 0; round < rounds; ++round) {
      if (grouped) {
        for (int r = 0; r < w.size(); ++r) {
          if (!w.local(r)) continue;
          cudaSetDevice(w.devices[r]);
          braidGroupStart();
          for (size_t i = 0; i < cases.size(); ++i) {
            std::string e = issueOne(w, i, r);
            if (!e.empty()) return e;
          }
          if (braidGroupEnd() != braidSuccess) return std::string("braidGroupEnd: ") + braidGetLastError();
        }
        continue;
      }
      for (size_t i = 0; i < cases.size(); ++i) {
        for (int r = 0; r < w.size(); ++r) {
          if (!w.local(r)) continue;
          std::string e = issueOne(w, i, r);
          if (!e.empty()) return e;
        }
      }
    }
    return "";
  }
  // Waits, then checks every call against the reference.
  std::string syncAndCheck(World& w) {
    if (!w.sync()) return w.error;
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string e = bufs[i]->check(cases[i], w);
      if (!e.empty()) return e;
    }
    return "";
  }
};

}  // namespace braid::gputest
