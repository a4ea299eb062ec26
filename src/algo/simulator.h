// Simulator: executes every (rank, channel, lane) program of a call together, over FIFOs of a
// given depth, on modelled values. The Value policy decides what an element is: a set of
// contributions (symbolic.h) or a dependency depth (trace.h).
//
// The scheduler repeatedly runs any program whose next operation can complete (every FIFO it
// receives from holds a slot, every FIFO it sends to has room). When none can and some are not
// finished, the order is unfinishable with that FIFO depth: the error names every stuck program,
// its step and what it waits for.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algo/geometry.h"
#include "algo/recorder.h"

namespace braid::algo {

struct Program {
  int rank;
  int channel;
  int lane;
  std::vector<Op> ops;
};

/// Link statistics every simulation collects (bytes in elements; multiply by the element size).
struct LinkLoad {
  std::map<std::pair<int, int>, size_t> elems;  // (src rank, dst rank) -> elements sent
  size_t maxElems() const {
    size_t m = 0;
    for (const auto& kv : elems) m = kv.second > m ? kv.second : m;
    return m;
  }
};

template <class Value>
class Simulator {
 public:
  using Buffer = std::vector<Value>;

  /// `inputs`/`outputs` hold each rank's buffers (already initialised by the caller).
  Simulator(std::vector<Program> programs, int fifoSlots, std::vector<Buffer>* inputs, std::vector<Buffer>* outputs)
      : programs_(std::move(programs)), slots_(fifoSlots), inputs_(inputs), outputs_(outputs) {
    // Resolve every operation's connections to FIFO indices once; the run then does no lookups.
    std::map<Key, int> ids;
    auto idOf = [&](const Key& k) {
      auto it = ids.find(k);
      if (it != ids.end()) return it->second;
      int id = static_cast<int>(fifoKeys_.size());
      ids.emplace(k, id);
      fifoKeys_.push_back(k);
      return id;
    };
    ends_.resize(programs_.size());
    for (size_t i = 0; i < programs_.size(); ++i) {
      const Program& p = programs_[i];
      for (const Op& op : p.ops) {
        Ends e;
        for (int k = 0; k < op.nRecv && op.receives(); ++k)
          e.recv[k] = idOf(Key{p.channel, op.recvConns[k], op.recvPeers[k], p.rank});
        for (int k = 0; k < op.nSend && op.sends(); ++k)
          e.send[k] = idOf(Key{p.channel, op.conn, p.rank, op.sendPeers[k]});
        ends_[i].push_back(e);
      }
    }
    fifos_.assign(fifoKeys_.size(), Fifo(slots_));
  }

  /// Runs to the end; false with error() set on deadlock or a malformed operation.
  bool run() {
    std::vector<size_t> pc(programs_.size(), 0);
    size_t remaining = 0;
    for (const Program& p : programs_) remaining += p.ops.size();
    while (remaining > 0) {
      bool progress = false;
      for (size_t i = 0; i < programs_.size(); ++i) {
        // Run each program as far as it can go before moving on (keeps the scan count low).
        while (pc[i] < programs_[i].ops.size() && ready(programs_[i].ops[pc[i]], ends_[i][pc[i]])) {
          if (!execute(programs_[i], programs_[i].ops[pc[i]], ends_[i][pc[i]], pc[i])) return false;
          ++pc[i];
          --remaining;
          progress = true;
        }
      }
      if (!progress) {
        error_ = deadlockReport(pc);
        return false;
      }
    }
    for (size_t f = 0; f < fifos_.size(); ++f) {
      if (fifos_[f].size != 0) {
        error_ = "slot(s) left unreceived on " + fifoName(fifoKeys_[f]);
        return false;
      }
    }
    return true;
  }

  const std::string& error() const { return error_; }
  /// Elements sent over each (src, dst) link, all channels and connections together.
  LinkLoad links() const {
    LinkLoad l;
    for (size_t f = 0; f < fifos_.size(); ++f) {
      if (fifos_[f].sentElems > 0)
        l.elems[{std::get<2>(fifoKeys_[f]), std::get<3>(fifoKeys_[f])}] += fifos_[f].sentElems;
    }
    return l;
  }

 private:
  using Key = std::tuple<int, int, int, int>;  // channel, conn, src, dst

  static std::string fifoName(const Key& k) {
    return "connection " + std::to_string(std::get<2>(k)) + "->" + std::to_string(std::get<3>(k)) + " (channel " +
           std::to_string(std::get<0>(k)) + ", conn " + std::to_string(std::get<1>(k)) + ")";
  }

  // FIFO indices of one operation's receive and send connections (-1: unused).
  struct Ends {
    int recv[kMaxPeers] = {-1, -1};
    int send[kMaxPeers] = {-1, -1};
  };

  bool ready(const Op& op, const Ends& e) const {
    for (int f : e.recv) {
      if (f >= 0 && fifos_[f].size == 0) return false;
    }
    for (int f : e.send) {
      if (f >= 0 && fifos_[f].size >= slots_) return false;
    }
    return true;
  }

  std::string where(const Program& p, size_t step) const {
    return "rank " + std::to_string(p.rank) + " channel " + std::to_string(p.channel) + " lane " +
           std::to_string(p.lane) + " step " + std::to_string(step) + " (" + opKindName(p.ops[step].kind) + ")";
  }

  bool fail(const Program& p, size_t step, const std::string& what) {
    error_ = where(p, step) + ": " + what;
    return false;
  }

  bool execute(const Program& p, const Op& op, const Ends& ends, size_t step) {
    Buffer& in = (*inputs_)[p.rank];
    Buffer& out = (*outputs_)[p.rank];
    if (op.readsInput() && op.in + op.n > in.size()) return fail(p, step, "reads input past its end");
    if ((op.writesOutput() || op.readsOutput()) && op.out + op.n > out.size()) {
      return fail(p, step, "touches output past its end");
    }
    Buffer& data = scratch_;  // reused: the simulation allocates only while buffers grow
    if (op.receives()) {
      if (op.nRecv < 1 || (!op.reduces() && !op.combinesOutput() && op.nRecv != 1)) {
        return fail(p, step, "needs exactly one recv peer");
      }
      for (int i = 0; i < op.nRecv; ++i) {
        Fifo& fifo = fifos_[ends.recv[i]];
        Buffer& slot = fifo.front();
        if (slot.size() != op.n) {
          return fail(p, step,
                      "expects " + std::to_string(op.n) + " elements from rank " + std::to_string(op.recvPeers[i]) +
                          ", which sent " + std::to_string(slot.size()));
        }
        if (i == 0) {
          data.assign(slot.begin(), slot.end());
        } else {
          for (size_t e = 0; e < op.n; ++e) data[e] = Value::reduce(data[e], slot[e]);
        }
        fifo.pop();
      }
      if (op.reduces()) {
        for (size_t e = 0; e < op.n; ++e) data[e] = Value::reduce(data[e], in[op.in + e]);
      }
      if (op.combinesOutput()) {
        for (size_t e = 0; e < op.n; ++e) data[e] = Value::reduce(data[e], out[op.out + e]);
      }
    } else if (op.readsInput()) {
      data.assign(in.begin() + op.in, in.begin() + op.in + op.n);
    } else if (op.readsOutput()) {
      data.assign(out.begin() + op.out, out.begin() + op.out + op.n);
    } else {
      data.clear();
    }
    if (op.post) {
      for (Value& v : data) v = Value::post(v);
    }
    if (op.replacesOutput()) {
      for (size_t e = 0; e < op.n; ++e) out[op.out + e] = data[e];  // replaces the partial result there
    } else if (op.writesOutput()) {
      for (size_t e = 0; e < op.n; ++e) out[op.out + e] = Value::store(out[op.out + e], data[e]);
    }
    if (op.sends()) {
      for (int i = 0; i < op.nSend; ++i) {
        Buffer& sent = fifos_[ends.send[i]].push();
        sent.resize(op.n);
        for (size_t e = 0; e < op.n; ++e) sent[e] = Value::hop(data[e]);
        fifos_[ends.send[i]].sentElems += op.n;
      }
    }
    return true;
  }

  std::string deadlockReport(const std::vector<size_t>& pc) const {
    std::string report = "no program can progress with " + std::to_string(slots_) + " FIFO slot(s); stuck:";
    int shown = 0;
    for (size_t i = 0; i < programs_.size(); ++i) {
      if (pc[i] >= programs_[i].ops.size()) continue;
      if (++shown > 16) {
        report += " ...";
        break;
      }
      report += "\n  " + where(programs_[i], pc[i]);
    }
    return report;
  }

  std::vector<Program> programs_;
  int slots_;
  std::vector<Buffer>* inputs_;
  std::vector<Buffer>* outputs_;
  // A FIFO of `slots` reusable slot buffers.
  struct Fifo {
    explicit Fifo(int slots) : ring(slots > 0 ? slots : 1) {}
    Buffer& front() { return ring[head]; }
    void pop() {
      head = (head + 1) % ring.size();
      --size;
    }
    Buffer& push() { return ring[(head + size++) % ring.size()]; }
    std::vector<Buffer> ring;
    size_t head = 0;
    int size = 0;
    size_t sentElems = 0;
  };

  std::vector<std::vector<Ends>> ends_;  // per program, per operation
  Buffer scratch_;
  std::vector<Key> fifoKeys_;
  std::vector<Fifo> fifos_;
  std::string error_;
};

/// Records the programs of every rank, channel and lane of one call.
std::vector<Program> recordCall(const Geometry& g, const CallShape& call);

}  // namespace braid::algo
