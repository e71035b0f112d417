package wire

import "fmt"

// ByeReason is why the planner ends a worker's stream (Bye).
type ByeReason uint8

// Bye reasons. A worker acts on each differently (package worker): it
// exits cleanly on ByeDone and ByeLeft, rejoins as a new member on
// ByeDead, and counts ByeRefused as a failed join.
const (
	// ByeDone: the run is over.
	ByeDone ByeReason = iota + 1
	// ByeLeft: the worker was scaled in; it drained and owns nothing.
	ByeLeft
	// ByeDead: the planner declared the worker dead (it missed heartbeats
	// or its stream was cut) and failed its key groups over; nothing it
	// holds counts any more.
	ByeDead
	// ByeRefused: the planner refused the worker's hello (Text says why:
	// a wrong token, an ID that is live, …); the stream had no welcome.
	ByeRefused
	byeMax
)

var byeNames = [...]string{"", "done", "left", "dead", "refused"}

func (r ByeReason) String() string {
	if r > 0 && r < byeMax {
		return byeNames[r]
	}
	return fmt.Sprintf("bye(%d)", uint8(r))
}

// Bye is the planner's last frame on a worker's stream: why the stream
// ends, and a line for the worker's log (Append keeps its first MaxAddr
// bytes). It carries no token: a refused worker is not told the token.
type Bye struct {
	Reason ByeReason
	Text   string
}

// Append appends the frame.
func (m *Bye) Append(b []byte) []byte {
	b, at := begin(b, KindBye)
	b = append(b, byte(m.Reason))
	t := m.Text
	if len(t) > MaxAddr {
		t = t[:MaxAddr]
	}
	b = str(b, t)
	return end(b, at)
}

// DecodeBye parses a bye payload.
func DecodeBye(p []byte) (Bye, error) {
	d := dec{b: p, what: "bye"}
	m := Bye{Reason: ByeReason(d.u8("reason")), Text: d.str("text")}
	if d.err == nil && (m.Reason == 0 || m.Reason >= byeMax) {
		d.fail("reason %d, want 1..%d", m.Reason, byeMax-1)
	}
	return m, d.done()
}
