package traces

import (
	"slices"
	"testing"
)

func TestSearchInfoNotices(t *testing.T) {
	for _, tc := range []struct {
		name            string
		info            SearchInfo
		searches, limit int
		want            []string
	}{
		{name: "complete answer", info: SearchInfo{Traces: 40}, searches: 3, limit: 100},
		{name: "truncated", info: SearchInfo{Truncated: true}, searches: 6, limit: 3,
			want: []string{"Some of the 6 trace searches stopped at their limit of 3 traces: requests of those instances and sub-windows may be missing; narrow the range or raise the limit."}},
		{name: "incomplete spans", info: SearchInfo{Incomplete: 2},
			want: []string{"2 span(s) lack latency attributes (an older vLLM, or a span that is not vLLM's): they are shown with what they carry, and their missing stages are empty."}},
		{name: "spans skipped", info: SearchInfo{SpansSkipped: 7},
			want: []string{"7 span(s) of very large traces were not read."}},
		{name: "all three in order", info: SearchInfo{Truncated: true, Incomplete: 1, SpansSkipped: 4}, searches: 1, limit: 20,
			want: []string{
				"Some of the 1 trace searches stopped at their limit of 20 traces: requests of those instances and sub-windows may be missing; narrow the range or raise the limit.",
				"1 span(s) lack latency attributes (an older vLLM, or a span that is not vLLM's): they are shown with what they carry, and their missing stages are empty.",
				"4 span(s) of very large traces were not read.",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.info.Notices(tc.searches, tc.limit); !slices.Equal(got, tc.want) {
				t.Fatalf("Notices(%d, %d) = %q, want %q", tc.searches, tc.limit, got, tc.want)
			}
		})
	}
}
