package dag

import (
	"slices"
	"testing"
)

func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		edges [][2]int
		want  []int
		cycle int
	}{
		{"empty", 0, nil, []int{}, -1},
		{"chain backwards", 3, [][2]int{{2, 1}, {1, 0}}, []int{2, 1, 0}, -1},
		{"diamond, lowest ready first", 4, [][2]int{{0, 2}, {0, 1}, {1, 3}, {2, 3}}, []int{0, 1, 2, 3}, -1},
		{"independent nodes in index order", 3, nil, []int{0, 1, 2}, -1},
		{"cycle", 3, [][2]int{{0, 1}, {1, 2}, {2, 1}}, nil, 1},
	} {
		order, cycle := Order(tc.n, tc.edges)
		if !slices.Equal(order, tc.want) || cycle != tc.cycle {
			t.Errorf("%s: order %v cycle %d, want %v %d", tc.name, order, cycle, tc.want, tc.cycle)
		}
	}
}
