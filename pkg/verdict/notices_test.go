package verdict

import (
	"slices"
	"testing"
)

func TestNotices(t *testing.T) {
	for _, c := range []struct {
		name              string
		baseline, current []string
		want              []string
	}{
		{name: "none", want: []string{}},
		{name: "baseline only", baseline: []string{"ttft_p99: no data"}, want: []string{"baseline window: ttft_p99: no data"}},
		{name: "current only", current: []string{"kv_usage: no data"}, want: []string{"current window: kv_usage: no data"}},
		{name: "shared once, named both", baseline: []string{"a"}, current: []string{"a"}, want: []string{"both windows: a"}},
		{name: "a repeat within one window is one notice", baseline: []string{"a", "a"}, want: []string{"baseline window: a"}},
		{
			name:     "in the order they first appear",
			baseline: []string{"spec_acceptance_rate: not applicable", "ttft_p99: no data"},
			current:  []string{"kv_usage: no data", "spec_acceptance_rate: not applicable"},
			want:     []string{"both windows: spec_acceptance_rate: not applicable", "baseline window: ttft_p99: no data", "current window: kv_usage: no data"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Notices(c.baseline, c.current); !slices.Equal(got, c.want) {
				t.Errorf("Notices(%q, %q) = %q, want %q", c.baseline, c.current, got, c.want)
			}
		})
	}
}
