// WorkerPool: the threads a host communicator runs its channel lanes on. Every lane of a call must
// run at the same time (lanes wait on each other through FIFOs), so a call with k tasks gets k
// threads: the caller's own thread runs task 0, and k-1 workers, created on first need and kept
// for later calls, run the rest.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace braid::exec {

class WorkerPool {
 public:
  WorkerPool() = default;
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs every task concurrently; returns when all have returned.
  void runAll(const std::vector<std::function<void()>>& tasks);

 private:
  struct Worker {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    const std::function<void()>* task = nullptr;
    bool done = true;
    bool stop = false;
  };
  static void loop(Worker* w);

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace braid::exec
