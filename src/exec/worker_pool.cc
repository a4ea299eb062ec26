#include "exec/worker_pool.h"

namespace braid::exec {

WorkerPool::~WorkerPool() {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
    w->thread.join();
  }
}

void WorkerPool::loop(Worker* w) {
  std::unique_lock<std::mutex> lock(w->mu);
  while (true) {
    w->cv.wait(lock, [w] { return w->stop || w->task != nullptr; });
    if (w->stop) return;
    const std::function<void(int)>* task = w->task;
    int index = w->index;
    lock.unlock();
    (*task)(index);
    lock.lock();
    w->task = nullptr;
    w->done = true;
    w->cv.notify_all();
  }
}

void WorkerPool::runAll(int count, const std::function<void(int)>& task) {
  if (count <= 0) return;
  while (workers_.size() + 1 < static_cast<size_t>(count)) {
    auto w = std::make_unique<Worker>();
    w->thread = std::thread(loop, w.get());
    workers_.push_back(std::move(w));
  }
  for (int i = 1; i < count; ++i) {
    Worker* w = workers_[i - 1].get();
    std::lock_guard<std::mutex> lock(w->mu);
    w->task = &task;
    w->index = i;
    w->done = false;
    w->cv.notify_all();
  }
  task(0);
  for (int i = 1; i < count; ++i) {
    Worker* w = workers_[i - 1].get();
    std::unique_lock<std::mutex> lock(w->mu);
    w->cv.wait(lock, [w] { return w->done; });
  }
}

}  // namespace braid::exec
