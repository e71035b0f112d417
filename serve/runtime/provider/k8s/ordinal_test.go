package k8s

import (
	"fmt"
	"strings"
	"testing"
)

func TestOrdinal(t *testing.T) {
	for _, tc := range []struct {
		set, pod string
		ord      int
		ok       bool
	}{
		{"w", "w-0", 0, true},
		{"w", "w-7", 7, true},
		{"w", "w-2147483647", 2147483647, true},
		{"w-x", "w-x-12", 12, true},
		{"w", "w-2147483648", 0, false},
		{"w", "w-99999999999", 0, false},
		{"w", "w-07", 0, false},
		{"w", "w-00", 0, false},
		{"w", "w-", 0, false},
		{"w", "w", 0, false},
		{"w", "w-+1", 0, false},
		{"w", "w--1", 0, false},
		{"w", "w-1a", 0, false},
		{"w", "w-x-1", 0, false},
		{"w", "v-1", 0, false},
		{"w", "W-1", 0, false},
		{"w", "w-١", 0, false}, // a non-ASCII digit
		{"w", "", 0, false},
	} {
		ord, ok := Ordinal(tc.set, tc.pod)
		if ord != tc.ord || ok != tc.ok {
			t.Errorf("Ordinal(%q, %q) = %d, %v; want %d, %v", tc.set, tc.pod, ord, ok, tc.ord, tc.ok)
		}
	}
}

// FuzzOrdinal: Ordinal accepts exactly the names "<set>-<ordinal>" that
// the StatefulSet controller makes (fmt's %d of a non-negative int32), and
// returns that ordinal.
func FuzzOrdinal(f *testing.F) {
	for _, s := range [][2]string{
		{"streamscale-worker", "streamscale-worker-3"}, {"w", "w-07"}, {"w", "w-2147483648"},
		{"w", "w--1"}, {"w-1", "w-1-1"}, {"", "-0"}, {"w", "w-+0"}, {"w", "w-0x1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, set, pod string) {
		ord, ok := Ordinal(set, pod)
		if !ok {
			if ord != 0 {
				t.Fatalf("Ordinal(%q, %q) = %d, false", set, pod, ord)
			}
			if tail, found := strings.CutPrefix(pod, set+"-"); found {
				var n int32
				if _, err := fmt.Sscanf(tail, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == tail {
					t.Fatalf("Ordinal(%q, %q) refused a controller-made name", set, pod)
				}
			}
			return
		}
		if ord < 0 || ord > 1<<31-1 {
			t.Fatalf("Ordinal(%q, %q) = %d out of range", set, pod, ord)
		}
		if got := fmt.Sprintf("%s-%d", set, ord); got != pod {
			t.Fatalf("Ordinal(%q, %q) = %d, but %q is the name of that ordinal", set, pod, ord, got)
		}
	})
}
