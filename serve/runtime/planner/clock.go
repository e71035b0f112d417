package planner

import "time"

// Clock is the shell's source of time: the load generator's intended
// times, the core's ticks and the drain all read it. The core never does;
// it gets the time as a value with every event. Real is the wall clock.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
	NewTimer(d time.Duration) Timer
}

// Ticker delivers ticks on C every interval until Stop.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Timer delivers one time on C after its duration, unless stopped.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the wall clock (package time).
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                   { return time.Now() }
func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }
func (realClock) NewTimer(d time.Duration) Timer   { return realTimer{time.NewTimer(d)} }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }
