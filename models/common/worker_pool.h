// A few host threads for work whose result the simulation needs later but whose
// inputs are fixed when it is handed over (a functional matmul's sgemm). Tasks run
// in any order on any worker; whoever needs a result waits for that task, so the
// results, and everything simulated, are the same for every number of workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace trnsim::models {

class worker_pool {
 public:
  // One task handed over: wait() blocks until it has run and rethrows what it threw.
  class task {
   public:
    void wait();

   private:
    friend class worker_pool;
    std::function<void()> fn_;
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
    std::exception_ptr error_;
  };

  explicit worker_pool(unsigned workers);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  unsigned workers() const { return unsigned(threads_.size()); }
  std::shared_ptr<task> submit(std::function<void()> fn);

  // Host threads a run uses by default: the host's cores (at least 1).
  static unsigned default_threads();

 private:
  void work();
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<task>> queue_;
  bool stop_ = false;
};

}  // namespace trnsim::models
