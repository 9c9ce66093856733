package httpbackend

import (
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "less than a minute ago"},
		{59 * time.Second, "less than a minute ago"},
		{time.Minute, "1 min ago"},
		{59*time.Minute + 59*time.Second, "59 min ago"},
		{time.Hour, "1 h ago"},
		{3*time.Hour + 10*time.Minute + 30*time.Second, "3 h 10 min ago"},
		{23*time.Hour + 59*time.Minute, "23 h 59 min ago"},
	} {
		if got := ago(c.d); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
