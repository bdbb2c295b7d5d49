// Hardware semaphores (models/common/semaphores.*): wait_ge blocks until the
// increments reach the value, resumes in the same simulated instant, reset.
#include "models/common/semaphores.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "tests/common/harness.h"

namespace trnsim::models {
namespace {

using sc_core::sc_time;
using test::ns;

// Two SC_THREADs: a producer incrementing s2 at 10, 20 and 35 ns, and a consumer
// waiting for increasing values; plus observers spawned by the tests.
class sem_harness : public sc_core::sc_module {
 public:
  semaphores sems;
  std::vector<sc_time> consumer_resumed;
  std::vector<uint32_t> consumer_saw;

  explicit sem_harness(const sc_core::sc_module_name& n)
      : sc_module(n), sems("sems", semaphores_params{8}) {
    SC_HAS_PROCESS(sem_harness);
    SC_THREAD(producer);
    SC_THREAD(consumer);
  }

 private:
  void producer() {
    sc_core::wait(ns(10));
    sems.increment(2, 1);  // s2 = 1 at 10 ns
    sc_core::wait(ns(10));
    sems.increment(2, 1);  // s2 = 2 at 20 ns
    sc_core::wait(ns(15));
    sems.increment(2, 2);  // s2 = 4 at 35 ns
  }
  void consumer() {
    for (uint32_t v : {1u, 2u, 3u, 4u}) {
      sems.wait_ge(2, v);
      consumer_resumed.push_back(sc_core::sc_time_stamp());
      consumer_saw.push_back(sems.value(2));
    }
  }
};

TEST(Semaphores, WaitGeBlocksUntilIncrementsReachValue) {
  sem_harness h("h");
  sc_time late_waiter, zero_waiter = ns(999);  // sentinels
  // Waits for 3 from 25 ns: 2 < 3 at 25 ns, reached by the +2 at 35 ns.
  sc_core::sc_spawn(
      [&] {
        sc_core::wait(ns(25));
        h.sems.wait_ge(2, 3);
        late_waiter = sc_core::sc_time_stamp();
      },
      "late_waiter");
  // A wait already satisfied (>= 0) returns at once, without waiting.
  sc_core::sc_spawn(
      [&] {
        h.sems.wait_ge(5, 0);
        zero_waiter = sc_core::sc_time_stamp();
      },
      "zero_waiter");
  sc_core::sc_start();
  // Value 1 at 10 ns, 2 at 20 ns, 3 and 4 both at 35 ns (one +2 increment); the
  // consumer resumes in the same instant as the increment.
  EXPECT_EQ(h.consumer_resumed, test::times_ns({10, 20, 35, 35}));
  EXPECT_EQ(h.consumer_saw, (std::vector<uint32_t>{1, 2, 4, 4}));
  EXPECT_EQ(late_waiter, ns(35));
  EXPECT_EQ(zero_waiter, ns(0));
  EXPECT_EQ(h.sems.value(2), 4u);
  EXPECT_EQ(h.sems.value(5), 0u);
  EXPECT_EQ(sc_core::sc_time_stamp(), ns(35));  // nothing left to do after the last increment
}

TEST(Semaphores, WaitersOnOtherSemaphoresAreNotWoken) {
  semaphores s("sems", semaphores_params{4});
  sc_time woke = ns(0);
  bool done = false;
  sc_core::sc_spawn(
      [&] {
        s.wait_ge(1, 1);
        woke = sc_core::sc_time_stamp();
        done = true;
      },
      "waiter");
  test::increment_at(s, 0, 5, ns(10));  // other semaphore: must not release the waiter
  test::increment_at(s, 1, 1, ns(40));
  sc_core::sc_start(ns(30));
  EXPECT_FALSE(done);
  sc_core::sc_start();
  EXPECT_TRUE(done);
  EXPECT_EQ(woke, ns(40));
}

TEST(Semaphores, ResetZeroesEveryCounter) {
  semaphores s("sems", semaphores_params{16});
  EXPECT_EQ(s.count(), 16u);
  sc_time resumed = ns(0);
  sc_core::sc_spawn(
      [&] {
        sc_core::wait(ns(5));
        s.increment(0, 2);  // s0 = 2 at 5 ns
        s.increment(15, 7);
        sc_core::wait(ns(5));
        s.reset();  // s0 = 0 at 10 ns
        sc_core::wait(ns(10));
        s.increment(0, 1);  // s0 = 1 at 20 ns
        sc_core::wait(ns(10));
        s.increment(0, 1);  // s0 = 2 at 30 ns
      },
      "driver");
  sc_core::sc_spawn(
      [&] {
        sc_core::wait(ns(12));  // after the reset: s0 = 0 < 2
        s.wait_ge(0, 2);
        resumed = sc_core::sc_time_stamp();
      },
      "waiter");
  sc_core::sc_start(ns(7));
  EXPECT_EQ(s.value(0), 2u);
  EXPECT_EQ(s.value(15), 7u);
  sc_core::sc_start(ns(4));  // now 11 ns
  for (uint32_t i = 0; i < s.count(); ++i) EXPECT_EQ(s.value(uint16_t(i)), 0u) << "s" << i;
  sc_core::sc_start();
  // Reached 2 again only by the second post-reset increment at 30 ns.
  EXPECT_EQ(resumed, ns(30));
  EXPECT_EQ(s.value(0), 2u);
}

TEST(Semaphores, WatchFiresOnceWhenTheValueIsReached) {
  semaphores s("sems", semaphores_params{8});
  std::vector<sc_time> fired;
  bool again = true;
  sc_time other_resumed;
  sc_core::sc_spawn(
      [&] {
        sc_core::sc_event ev;
        EXPECT_TRUE(s.notify_when_ge(3, 2, ev));
        sc_core::wait(ev);
        fired.push_back(sc_core::sc_time_stamp());
        again = s.notify_when_ge(3, 2, ev);  // already reached: nothing registered
      },
      "observer");
  sc_core::sc_spawn(
      [&] {
        // s6 only reaches 2: the watch for 5 never fires, the timeout ends the wait.
        sc_core::sc_event ev;
        EXPECT_TRUE(s.notify_when_ge(6, 5, ev));
        sc_core::wait(ns(50), ev);
        other_resumed = sc_core::sc_time_stamp();
      },
      "other");
  test::increment_at(s, 3, 1, ns(7));   // s3 = 1: below the watch
  test::increment_at(s, 6, 2, ns(12));  // another semaphore
  test::increment_at(s, 3, 1, ns(19));  // s3 = 2: fires, in the same instant
  sc_core::sc_start();
  EXPECT_EQ(fired, test::times_ns({19}));
  EXPECT_FALSE(again);
  EXPECT_EQ(other_resumed, ns(50));
}

// keep_history: the last kHistory (64) increment times in a ring; reached_at finds
// the oldest stamp at or above the value, or the oldest kept one.
TEST(Semaphores, ReachedAtKeepsTheLastIncrements) {
  semaphores s("sems", semaphores_params{8});
  s.keep_history(true);
  ASSERT_EQ(semaphores::kHistory, 64u);
  sc_core::sc_spawn(
      [&] {
        for (int k = 1; k <= 100; ++k) {  // s1 = k at k ns; s2 = 2k at k ns
          sc_core::wait(ns(1));
          s.increment(1, 1);
          s.increment(2, 2);
          if (k == 50) s.increment(2, 0);  // a repeated value: the first stamp counts
        }
      },
      "driver");
  sc_core::sc_start();
  EXPECT_EQ(s.reached_at(1, 0), sc_core::SC_ZERO_TIME);
  EXPECT_EQ(s.reached_at(5, 1), sc_core::SC_ZERO_TIME);  // never incremented
  // s1 keeps 37..100 (the last 64): exact there, the oldest kept (37 ns) before.
  for (uint32_t v = 37; v <= 100; ++v) EXPECT_EQ(s.reached_at(1, v), ns(v)) << "v " << v;
  EXPECT_EQ(s.reached_at(1, 1), ns(37));
  EXPECT_EQ(s.reached_at(1, 36), ns(37));
  // s2: 101 stamps (the +0 one more); kept: 2k for k = 38..100 and the +0 at 50 ns.
  EXPECT_EQ(s.reached_at(2, 99), ns(50));   // 100 first at 50 ns (the +0 repeats it)
  EXPECT_EQ(s.reached_at(2, 101), ns(51));  // 102 at 51 ns
  EXPECT_EQ(s.reached_at(2, 200), ns(100));
  EXPECT_EQ(s.reached_at(2, 1), ns(38));
  s.reset();
  EXPECT_EQ(s.reached_at(1, 50), sc_core::SC_ZERO_TIME);
}

// A 32-bit counter that wraps leaves its stamps out of order: reached_at still
// returns the oldest stamp at or above the value.
TEST(Semaphores, ReachedAtAfterTheCounterWraps) {
  semaphores s("sems", semaphores_params{8});
  s.keep_history(true);
  sc_core::sc_spawn(
      [&] {
        for (uint32_t inc : {10u, 0xFFFFFFF5u, 4u, 1u, 1u}) {  // 10, 2^32-1, 3, 4, 5
          sc_core::wait(ns(1));
          s.increment(4, inc);
        }
      },
      "driver");
  sc_core::sc_start();
  EXPECT_EQ(s.value(4), 5u);
  EXPECT_EQ(s.reached_at(4, 8), ns(1));   // 10 at 1 ns
  EXPECT_EQ(s.reached_at(4, 11), ns(2));  // 2^32-1 at 2 ns
}

TEST(Semaphores, OutOfRangeIdThrows) {
  semaphores s("sems", semaphores_params{8});
  EXPECT_THROW(s.value(8), std::out_of_range);
  EXPECT_THROW(s.increment(8, 1), std::out_of_range);
  EXPECT_NO_THROW(s.increment(7, 1));
  EXPECT_EQ(s.value(7), 1u);
}

}  // namespace
}  // namespace trnsim::models
