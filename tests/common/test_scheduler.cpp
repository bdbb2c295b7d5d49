// The chip's own scheduler (models/common/scheduler.h): the order rules it
// documents, parking and waking, its clock as models::now(), and semaphore watches
// that wake agents.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "models/common/scheduler.h"
#include "models/common/semaphores.h"
#include "models/common/sim_time.h"
#include "tests/common/harness.h"

using namespace trnsim;
using models::scheduler;
using test::ns;

namespace {

// An agent that records "<name>@<time in ns>" when it runs, then does `then`.
struct probe : scheduler::agent {
  std::string name;
  std::vector<std::string>* log;
  std::function<void()> then;
  probe(std::string n, std::vector<std::string>* l) : name(std::move(n)), log(l) {}
  void resume() override {
    log->push_back(name + "@" + std::to_string(int(models::now().to_seconds() * 1e9 + 0.5)));
    if (then) then();
  }
};

}  // namespace

TEST(Scheduler, SameTimeAgentsRunInSchedulingOrderAndTimeAdvancesToTheEarliest) {
  scheduler s;
  std::vector<std::string> log;
  probe a("a", &log), b("b", &log), c("c", &log), d("d", &log);
  s.resume_at(&c, ns(20));
  s.resume_at(&b, ns(10));
  s.resume_at(&d, ns(20));
  s.resume_at(&a, ns(10));
  s.run();
  EXPECT_EQ(log, (std::vector<std::string>{"b@10", "a@10", "c@20", "d@20"}));
  EXPECT_EQ(s.now(), ns(20));  // the time stays at the last event
}

// Times past 2^62 ticks are refused, not wrapped: a conversion from seconds, a sum
// of two in-range times, and an event scheduled there.
TEST(Scheduler, TimesPastTheSimulatedRangeAreRefused) {
  using models::kMaxTicks;
  const sc_core::sc_time last = sc_core::sc_time::from_value(kMaxTicks);
  EXPECT_EQ(models::seconds_to_time(models::max_seconds() / 2).value(), kMaxTicks / 2);
  for (double sec : {models::max_seconds() * 1.01, 1e30, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()})
    EXPECT_THROW(models::seconds_to_time(sec), models::time_overflow) << sec;
  EXPECT_EQ(models::checked_time(last), last);
  EXPECT_THROW(models::checked_time(last + last), models::time_overflow);
  try {
    models::seconds_to_time(1e10);
    ADD_FAILURE() << "no throw";
  } catch (const models::time_overflow& e) {
    EXPECT_NE(std::string(e.what()).find("a duration of 1e+10 s is past the simulated time range"),
              std::string::npos)
        << e.what();
  }
  scheduler s;
  std::vector<std::string> log;
  probe a("a", &log);
  EXPECT_THROW(s.resume_at(&a, last + ns(1)), models::time_overflow);
  s.resume_at(&a, last);  // the last representable time is fine
  s.run();
  EXPECT_EQ(s.now(), last);
  EXPECT_EQ(log.size(), 1u);
}

TEST(Scheduler, WokenAgentsRunInTheNextDeltaAfterEveryAgentOfTheCurrentOne) {
  scheduler s;
  std::vector<std::string> log;
  probe a("a", &log), b("b", &log), w("w", &log), z("z", &log);
  s.park(&w);
  a.then = [&] {
    s.wake(&w);
    s.resume_at(&z, s.now());  // now: also the next delta, after w
  };
  s.resume_at(&a, ns(5));
  s.resume_at(&b, ns(5));
  s.run();
  EXPECT_EQ(log, (std::vector<std::string>{"a@5", "b@5", "w@5", "z@5"}));
}

TEST(Scheduler, WakeOnlyResumesAParkedAgentAndOnlyOnce) {
  scheduler s;
  std::vector<std::string> log;
  probe t("t", &log), p("p", &log), k("k", &log);
  s.park(&p);
  k.then = [&] {
    s.wake(&t);  // t waits for time, not for an event: a stale wake-up is ignored
    s.wake(&p);
    s.wake(&p);  // already queued
  };
  s.resume_at(&t, ns(30));
  s.resume_at(&k, ns(10));
  s.run();
  EXPECT_EQ(log, (std::vector<std::string>{"k@10", "p@10", "t@30"}));
}

TEST(Scheduler, NowIsTheSchedulersClockWhileItRunsOrIsInstalled) {
  scheduler s;
  std::vector<std::string> log;
  probe a("a", &log);
  sc_core::sc_time seen;
  a.then = [&] { seen = models::now(); };
  s.resume_at(&a, ns(7));
  EXPECT_EQ(scheduler::active(), nullptr);
  s.run();
  EXPECT_EQ(seen, ns(7));
  EXPECT_EQ(scheduler::active(), nullptr);  // SystemC's clock again
  EXPECT_EQ(models::now(), sc_core::SC_ZERO_TIME);
  scheduler::install(&s);
  EXPECT_EQ(models::now(), ns(7));
  scheduler::install(nullptr);
}

TEST(Scheduler, SemaphoreWatchWakesTheAgentOnceTheValueIsReached) {
  models::semaphores sems("sems", models::semaphores_params{4});
  scheduler s;
  std::vector<std::string> log;
  probe waiter("waiter", &log), inc1("inc1", &log), inc2("inc2", &log);
  s.park(&waiter);
  EXPECT_TRUE(sems.wake_when_ge(2, 2, &waiter));
  EXPECT_TRUE(sems.wake_when_ge(2, 2, &waiter));  // the same watch, not a second one
  inc1.then = [&] { sems.increment(2, 1); };      // 1 < 2: no wake-up
  inc2.then = [&] { sems.increment(2, 1); };
  s.resume_at(&inc1, ns(3));
  s.resume_at(&inc2, ns(8));
  s.run();
  EXPECT_EQ(log, (std::vector<std::string>{"inc1@3", "inc2@8", "waiter@8"}));
  EXPECT_FALSE(sems.wake_when_ge(2, 2, &waiter));  // reached: nothing registered
}
