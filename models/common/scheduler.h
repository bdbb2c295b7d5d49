// The chip's own discrete-event scheduler: runs the engine and DMA sequencers
// without the SystemC kernel (no coroutine switch, no kernel event per wake-up),
// which is what bounds the simulator's speed on long programs.
//
// Semantics are SystemC's evaluate/delta/timed phases, with one deterministic
// tie rule where SystemC leaves the order to its implementation:
// - an agent made runnable for time t (resume_at) runs in the first delta at t;
//   agents due at the same time run in the order they were scheduled;
// - an agent woken by an event (wake, e.g. a semaphore reaching its value) runs in
//   the next delta, after every agent of the current delta, in wake order.
// Every model that reads the time calls models::now(), which is this scheduler's
// time while it runs and SystemC's otherwise. Used when no module of the chip needs
// SystemC time to advance (a timed RTL block does: the platform then keeps the
// SystemC threads, which run the same sequencer state machines).
#pragma once

#include <cstdint>
#include <systemc>
#include <vector>

namespace trnsim::models {

class scheduler {
 public:
  // A sequencer the scheduler resumes; resume() runs it until it parks again
  // (waiting for a time, an event, or nothing more to do).
  class agent {
   public:
    virtual ~agent() = default;
    virtual void resume() = 0;

   protected:
    agent() = default;
    // `parked`: waiting for wake() from the start, as a SystemC thread statically
    // sensitive to an event is before it first runs.
    explicit agent(bool parked) : parked_(parked) {}

   private:
    friend class scheduler;
    bool queued_ = false;  // in a delta's run list
    bool parked_ = false;  // waiting for wake()
  };

  const sc_core::sc_time& now() const { return now_; }
  // Resume `a` at absolute time `t` (>= now; now: the next delta).
  void resume_at(agent* a, const sc_core::sc_time& t);
  // Park `a` until wake(a) (an event it waits for).
  void park(agent* a) { a->parked_ = true; }
  // Resume `a` in the next delta if it is parked; otherwise nothing (a stale
  // event: the agent was not waiting for it any more).
  void wake(agent* a);
  // Runs until nothing is scheduled; the time stays where the last event was.
  void run();
  // The scheduler that has the time (nullptr: SystemC's kernel has it): the one
  // running, or the one installed for a device's lifetime.
  static scheduler* active() { return active_; }
  static void install(scheduler* s) { active_ = s; }

 private:
  struct timed {
    uint64_t at, seq;
    agent* a;
  };
  void push_next(agent* a);
  // A function object, not a function pointer: the heap operations inline it.
  struct later_t {
    bool operator()(const timed& x, const timed& y) const {
      return x.at != y.at ? x.at > y.at : x.seq > y.seq;
    }
  };
  static constexpr later_t later{};
  sc_core::sc_time now_ = sc_core::SC_ZERO_TIME;
  uint64_t seq_ = 0;
  std::vector<timed> heap_;  // min-heap on (at, seq)
  std::vector<agent*> current_, next_;
  static inline scheduler* active_ = nullptr;
};

// The simulated time: the running scheduler's, else SystemC's.
inline sc_core::sc_time now() {
  const scheduler* s = scheduler::active();
  return s ? s->now() : sc_core::sc_time_stamp();
}

}  // namespace trnsim::models
