package assignment

import "testing"

func TestPositionOrder(t *testing.T) {
	for _, c := range []struct {
		p, q Position
		want int
	}{
		{Position{3, 7}, Position{3, 7}, 0},
		{Position{3, 6}, Position{3, 7}, -1},
		{Position{3, 8}, Position{3, 7}, 1},
		{Position{2, 40}, Position{3, 1}, -1}, // a newer epoch wins whatever its version
		{Position{4, 1}, Position{3, 9}, 1},
	} {
		if got := c.p.Compare(c.q); got != c.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", c.p, c.q, got, c.want)
		}
		if got := c.p.Less(c.q); got != (c.want < 0) {
			t.Errorf("%v.Less(%v) = %v", c.p, c.q, got)
		}
		if got := c.p.AtLeast(c.q); got != (c.want >= 0) {
			t.Errorf("%v.AtLeast(%v) = %v", c.p, c.q, got)
		}
	}
	if PositionOf(nil) != (Position{}) {
		t.Error("PositionOf(nil) is not the zero position")
	}
}
