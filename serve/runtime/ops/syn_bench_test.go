package ops

import "testing"

var synSink uint64

// BenchmarkSynWork measures one iteration of SYN's loop (ns/op per
// 1,000 iterations): synItersPerMicrosecond = 1e6 / (ns/op).
func BenchmarkSynWork(b *testing.B) {
	x := uint64(1)
	for b.Loop() {
		x = synWork(x, 1000)
	}
	synSink = x
}
