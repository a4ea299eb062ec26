// ThreadRanks: the ranks of a host communicator as threads of this test process (Gloo's test
// harness idea): made together, driven together, and never left hanging -- each() aborts the
// communicators after a deadline, so a wrong schedule fails its test instead of stalling CI.
#pragma once

#include <braid/braid.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace braid::test {

class ThreadRanks {
 public:
  /// `algorithm` goes to config.algorithm (nullptr: all allowed); `env` is set while the
  /// communicators are made (they read their parameters at init) and unset afterwards.
  explicit ThreadRanks(int n, const char* algorithm = nullptr,
                       const std::vector<std::pair<const char*, const char*>>& env = {})
      : comms_(n, nullptr) {
    for (const auto& kv : env) setenv(kv.first, kv.second, 1);
    braidUniqueId id;
    EXPECT_EQ(braidGetUniqueId(&id), braidSuccess);
    std::vector<braidResult_t> rc(n);
    run([&](int r) {
      braidConfig_t config = BRAID_CONFIG_INITIALIZER;
      config.deviceKind = braidDeviceHost;
      config.algorithm = algorithm;
      rc[r] = braidCommInitRankConfig(&comms_[r], n, id, r, &config);
    });
    for (const auto& kv : env) unsetenv(kv.first);
    for (int r = 0; r < n; ++r) EXPECT_EQ(rc[r], braidSuccess) << "init rank " << r;
  }
  ~ThreadRanks() {
    if (aborted_) return;  // abort freed them
    for (braidComm_t c : comms_) braidCommDestroy(c);
  }
  ThreadRanks(const ThreadRanks&) = delete;
  ThreadRanks& operator=(const ThreadRanks&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  /// The test aborted every communicator itself (braidCommAbort frees them).
  void markAborted() { aborted_ = true; }
  braidComm_t operator[](int r) const { return comms_[r]; }

  /// Runs fn(rank) on one thread per rank and waits for all.
  void run(const std::function<void(int)>& fn) const {
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) threads.emplace_back(fn, r);
    for (auto& t : threads) t.join();
  }

  /// Runs `call` on every rank; returns each rank's result and its last error in `errors`. After
  /// `deadline` the communicators are aborted, which wakes every wait, and the test fails.
  std::vector<braidResult_t> each(const std::function<braidResult_t(int)>& call, std::vector<std::string>* errors,
                                  std::chrono::seconds deadline = std::chrono::seconds(30)) {
    std::vector<braidResult_t> rc(comms_.size());
    errors->assign(comms_.size(), "");
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    std::thread watchdog([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (cv.wait_for(lock, deadline, [&] { return finished; })) return;
      ADD_FAILURE() << "the ranks did not finish in time; aborting the communicators";
      aborted_ = true;
      for (braidComm_t c : comms_) braidCommAbort(c);
    });
    run([&](int r) {
      rc[r] = call(r);
      (*errors)[r] = braidGetLastError();
    });
    {
      std::lock_guard<std::mutex> lock(mu);
      finished = true;
    }
    cv.notify_all();
    watchdog.join();
    return rc;
  }

 private:
  std::vector<braidComm_t> comms_;
  bool aborted_ = false;
};

}  // namespace braid::test
