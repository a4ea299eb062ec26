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

  /// Runs task(0) .. task(count - 1) concurrently; returns when all have returned.
  void runAll(int count, const std::function<void(int)>& task);

 private:
  struct Worker {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    const std::function<void(int)>* task = nullptr;
    int index = 0;
    bool done = true;
    bool stop = false;
  };
  static void loop(Worker* w);

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace braid::exec
