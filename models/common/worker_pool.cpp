#include "models/common/worker_pool.h"

namespace trnsim::models {

void worker_pool::task::wait() {
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

worker_pool::worker_pool(unsigned workers) {
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
}

worker_pool::~worker_pool() {
  {
    std::lock_guard<std::mutex> l(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::shared_ptr<worker_pool::task> worker_pool::submit(std::function<void()> fn) {
  auto t = std::make_shared<task>();
  t->fn_ = std::move(fn);
  if (threads_.empty()) {  // no workers: run it now
    try {
      t->fn_();
    } catch (...) {
      t->error_ = std::current_exception();
    }
    t->done_ = true;
    return t;
  }
  {
    std::lock_guard<std::mutex> l(m_);
    queue_.push_back(t);
  }
  cv_.notify_one();
  return t;
}

void worker_pool::work() {
  for (;;) {
    std::shared_ptr<task> t;
    {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      t = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr err;
    try {
      t->fn_();
    } catch (...) {
      err = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> l(t->m_);
      t->error_ = err;
      t->done_ = true;
    }
    t->cv_.notify_all();
  }
}

unsigned worker_pool::default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

}  // namespace trnsim::models
