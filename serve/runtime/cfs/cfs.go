package cfs

import (
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPeriod is the kernel's default cpu.cfs_period_us (100 ms).
const DefaultPeriod = 100 * time.Millisecond

// MinMillicores and MaxMillicores bound an allocation: New and Set clamp
// millicores into [MinMillicores, MaxMillicores]. A task is never given
// zero CPU (the kernel's smallest cpu.max quota is 1 ms per period, here 1
// millicore is 0.1 ms per default period), and the upper bound keeps
// quota·period far from overflow (a million millicores is a thousand cores).
const (
	MinMillicores = 1
	MaxMillicores = 1_000_000
)

// Quota is one task's CPU bandwidth: c millicores give a quota of
// c/1000 × period of CPU time per period (c above 1000 means several
// threads run the task's work at once and share the quota). It is safe for
// concurrent use by the worker's executor slots.
//
// Accounting follows the kernel's (Documentation/scheduler/sched-bwc.rst):
// Run admits a caller while the current period's quota is not spent; the
// CPU time f then uses is charged when f returns, so the last executions of
// a period may overdraw it. The overdraft is a debt paid from the next
// periods' quotas: at each period boundary the CPU charged against the
// quota drops by one quota, never below zero (no burst credit), so a task
// that overdrew by more than a quota sits out whole periods. Periods are
// aligned on the instant New was called, so given the clocks the schedule
// is deterministic.
type Quota struct {
	// Clocks, injectable for tests: now is the monotonic time since the
	// origin, sleep waits, threadCPU reads the calling thread's CPU clock.
	now       func() time.Duration
	sleep     func(time.Duration)
	threadCPU func() time.Duration

	mu         sync.Mutex
	period     time.Duration
	millicores int
	quota      time.Duration // millicores/1000 × period
	p          int64         // index of the period the accounting is in
	charged    time.Duration // CPU charged against period p (may exceed quota: debt)
	active     int64         // last period counted in stats.Periods (-1: none)
	throttled  int64         // last period counted in stats.Throttled (-1: none)
	since      time.Duration // when the running throttle began (valid if isThrot)
	isThrot    bool          // the quota is spent and a caller is waiting
	// First come, first served for a shared quota (admitInTurn): the
	// next ticket to hand out, the ticket whose turn it is, and the
	// condition the others wait on (nil until first used).
	ticket, serving uint64
	turn            *sync.Cond
	stats           Stats
}

// New returns a quota of millicores per period. A period ≤ 0 means
// DefaultPeriod; millicores are clamped into [MinMillicores,
// MaxMillicores].
func New(period time.Duration, millicores int) *Quota {
	origin := time.Now()
	return newQuota(period, millicores,
		func() time.Duration { return time.Since(origin) },
		time.Sleep, threadCPUTime)
}

func newQuota(period time.Duration, millicores int, now func() time.Duration, sleep func(time.Duration), cpu func() time.Duration) *Quota {
	if period <= 0 {
		period = DefaultPeriod
	}
	q := &Quota{now: now, sleep: sleep, threadCPU: cpu, period: period, active: -1, throttled: -1}
	q.setLocked(millicores)
	return q
}

func clamp(m int) int { return min(max(m, MinMillicores), MaxMillicores) }

func (q *Quota) setLocked(millicores int) {
	q.millicores = clamp(millicores)
	q.quota = time.Duration(int64(q.period) * int64(q.millicores) / 1000)
}

// Set changes the allocation (clamped as in New). It takes effect in the
// current period: the CPU already charged in it counts against the new
// quota, and if the new quota is not spent, waiting callers are admitted
// within a tenth of a period (they re-check at that interval).
func (q *Quota) Set(millicores int) {
	q.mu.Lock()
	q.advance(q.now())
	q.setLocked(millicores)
	q.mu.Unlock()
}

// Millicores returns the current allocation.
func (q *Quota) Millicores() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.millicores
}

// Period returns the accounting period.
func (q *Quota) Period() time.Duration { return q.period }

// advance moves the accounting to the period containing t, paying the
// debt from each elapsed period's quota and closing a throttle that a
// refill ended. Called with mu held.
func (q *Quota) advance(t time.Duration) {
	p := int64(t / q.period)
	if p <= q.p {
		if q.isThrot && q.charged < q.quota { // Set raised the quota
			q.stats.ThrottledTime += t - q.since
			q.isThrot = false
		}
		return
	}
	for ; q.p < p && q.charged > 0; q.p++ {
		q.charged = max(q.charged-q.quota, 0)
		if q.isThrot && q.charged < q.quota {
			q.stats.ThrottledTime += time.Duration(q.p+1)*q.period - q.since
			q.isThrot = false
		}
	}
	q.p = p
	if q.isThrot && q.charged < q.quota {
		q.stats.ThrottledTime += t - q.since
		q.isThrot = false
	}
}

// Run waits until the task has quota left in the current period, runs f on
// a locked OS thread, measures the thread CPU time f used and charges it.
// Each call reads the thread CPU clock twice (two system calls, about a
// microsecond): wrap a batch of records in one Run, not each record.
//
// The charge covers the thread's CPU from admission to f's return, not the
// wait before it: a throttled cgroup's threads are dequeued and burn no
// quota until the refill, while this wait polls (admit wakes every tenth
// of a period so that a Set can admit it early). Each of those wake-ups
// costs tens of microseconds of thread CPU; charging them, as an earlier
// version did, spent about 3 of the 5 ms per second a 5-millicore task
// is allotted on waiting, and the task did 40% of the work its quota
// allows.
func (q *Quota) Run(f func()) { q.RunIn(nil, f) }

// RunIn runs f as Run does, under q and under parent, a budget q shares
// with other tasks (a worker's CPU budget over its tasks): f is admitted
// when both have quota left in their current periods, and the thread CPU
// it uses is charged to both. This is the kernel's hierarchy of CPU
// cgroups, where a task is throttled when its own quota or an ancestor's
// is spent (Documentation/scheduler/sched-bwc.rst, "Hierarchical
// considerations"). parent nil is Run. q is admitted first: a task runs
// on one executor slot at a time, so while it waits for parent nothing
// spends q and q stays admitted; the wait for either is charged to
// neither.
func (q *Quota) RunIn(parent *Quota, f func()) {
	q.admit()
	if parent != nil {
		parent.admitInTurn()
	}
	runtime.LockOSThread()
	start := q.threadCPU()
	f()
	used := q.threadCPU() - start
	runtime.UnlockOSThread()
	q.charge(used)
	if parent != nil {
		parent.charge(used)
	}
}

// charge adds used to the current period's charge and the counters.
func (q *Quota) charge(used time.Duration) {
	q.mu.Lock()
	q.advance(q.now())
	q.charged += used
	q.stats.Used += used
	q.mu.Unlock()
}

// admit blocks until the current period's quota is not spent.
func (q *Quota) admit() {
	q.mu.Lock()
	q.await()
	q.mu.Unlock()
}

// admitInTurn is admit for a quota several tasks share (RunIn's parent):
// callers are admitted first come, first served, so a task whose slot asks
// again right after its execution queues behind the tasks already waiting
// instead of winning every refill. The kernel shares a parent's quota
// among its children's runnable threads by their weights; without the
// queue whichever waiting slot polled first after a refill won it, so
// the share of a busy task depended on its polling phase.
func (q *Quota) admitInTurn() {
	q.mu.Lock()
	if q.turn == nil {
		q.turn = sync.NewCond(&q.mu)
	}
	me := q.ticket
	q.ticket++
	for q.serving != me {
		q.turn.Wait()
	}
	q.await()
	q.serving++
	q.turn.Broadcast()
	q.mu.Unlock()
}

// await waits (mu held; released while sleeping) until the current
// period's quota is not spent.
func (q *Quota) await() {
	for {
		t := q.now()
		q.advance(t)
		if q.active != q.p {
			q.active = q.p
			q.stats.Periods++
		}
		if q.charged < q.quota {
			return
		}
		if q.throttled != q.p {
			q.throttled = q.p
			q.stats.Throttled++
		}
		if !q.isThrot {
			q.isThrot = true
			q.since = t
		}
		// Sleep to the boundary in steps of a tenth of a period, so
		// that a Set raising the quota admits waiters within the period.
		wait := min(time.Duration(q.p+1)*q.period-t, q.period/10)
		q.mu.Unlock()
		q.sleep(wait)
		q.mu.Lock()
	}
}

// Stats are cumulative counters since New.
type Stats struct {
	Used          time.Duration // CPU time charged
	Periods       int64         // periods elapsed in which the task ran or waited to run
	Throttled     int64         // periods in which the quota ran out and a caller waited
	ThrottledTime time.Duration // wall time during which the quota was spent and a caller waited
}

// Stats returns the counters. A throttle still running is counted up to
// now.
func (q *Quota) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.now()
	q.advance(t)
	s := q.stats
	if q.isThrot {
		s.ThrottledTime += t - q.since
	}
	return s
}

// threadCPUTime reads the calling thread's CPU clock.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		// CLOCK_THREAD_CPUTIME_ID exists on every Linux since 2.6.12;
		// failing here means the platform cannot enforce anything.
		panic("cfs: clock_gettime(CLOCK_THREAD_CPUTIME_ID): " + err.Error())
	}
	return time.Duration(ts.Nano())
}
