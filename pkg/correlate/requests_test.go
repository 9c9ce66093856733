package correlate

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/traces"
)

func TestWithMetrics(t *testing.T) {
	set := grid(80, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.TTFTP50: func(int) float64 { return 0.2 }},
	})
	set.Absent = map[series.Signal]string{series.SpecAcceptanceRate: "speculative decoding is off"}
	findings := []diagnosis.Finding{{Rule: diagnosis.KVCacheSaturated, Key: keyA}}
	cases := []struct {
		name    string
		err     error
		notices []string
		joined  bool
	}{
		{name: "the metrics' side, with a notice per joined signal the set lacks", joined: true,
			notices: []string{"spec_acceptance_rate is not joined: speculative decoding is off"}},
		{name: "metrics that could not be read leave the side empty", err: errors.New("prometheus: 503"),
			notices: []string{"The metrics could not be read, so requests are shown without their metric state, findings and ranking: prometheus: 503"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{From: at(0), To: at(79)}
			got := in.WithMetrics(set, findings, c.err)
			if !slices.Equal(got, c.notices) {
				t.Errorf("notices %q, want %q", got, c.notices)
			}
			if joined := in.Set != nil && len(in.Findings) == 1 && in.Typical[keyA.Instance] == 0.2; joined != c.joined {
				t.Errorf("metric side set %v (set %v, findings %d, typical %v), want %v", joined, in.Set != nil, len(in.Findings), in.Typical, c.joined)
			}
		})
	}
}

// TestRequestsSelectsRanksAndLimits shows what a requests answer keeps of its join, one
// behaviour per case.
func TestRequestsSelectsRanksAndLimits(t *testing.T) {
	// keyA serves one model in the metrics, so its spans without a model take it; its typical
	// TTFT is 0.1 s. request's TTFT is 0.3 × its duration.
	set := grid(80, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.TTFTP50: func(int) float64 { return 0.1 }},
	})
	typical := map[string]float64{keyA.Instance: 0.1, keyB.Instance: 0.1}
	req := func(id string, k series.Key, i int, seconds float64) traces.Request {
		r := request(k, at(i), at(i).Add(time.Duration(seconds*float64(time.Second))))
		r.SpanID = id
		return r
	}
	noModel := func(r traces.Request) traces.Request { r.Model = ""; return r }
	const limitNotice = "3 requests were examined; the 2 that stand out most from their instance's typical TTFT are shown."
	cases := []struct {
		name  string
		reqs  []traces.Request
		sel   Selection
		want  []string
		limit string
	}{
		{name: "every row, ranked by how far it stands out",
			reqs: []traces.Request{req("slow", keyA, 1, 10), req("fast", keyA, 2, 0.1), req("slower", keyB, 3, 20)},
			want: []string{"slower", "slow", "fast"}},
		{name: "the model filter applies to a model the join filled from the metrics",
			reqs: []traces.Request{noModel(req("filled", keyA, 1, 10)), req("qwen", keyB, 2, 10)},
			sel:  Selection{Model: func(m string) bool { return m == keyB.Model }},
			want: []string{"qwen"}},
		{name: "a row whose model stays unknown passes the model filter",
			reqs: []traces.Request{noModel(req("unknown", keyB, 1, 10)), req("llama", keyA, 2, 10)},
			sel:  Selection{Model: func(m string) bool { return m == "mistral" }},
			want: []string{"unknown"}},
		{name: "anomalous only keeps the rows with a reason",
			reqs: []traces.Request{req("slow", keyA, 1, 10), req("fast", keyA, 2, 0.1)},
			sel:  Selection{AnomalousOnly: true},
			want: []string{"slow"}},
		{name: "the limit keeps those that stand out most, and says so",
			reqs:  []traces.Request{req("slow", keyA, 1, 10), req("fast", keyA, 2, 0.1), req("slower", keyB, 3, 20)},
			sel:   Selection{Limit: 2},
			want:  []string{"slower", "slow"},
			limit: limitNotice},
		{name: "a limit the rows do not reach says nothing",
			reqs: []traces.Request{req("slow", keyA, 1, 10), req("fast", keyA, 2, 0.1)},
			sel:  Selection{Limit: 2},
			want: []string{"slow", "fast"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Requests: c.reqs, Set: set, Typical: typical, From: at(0), To: at(79)}
			rows, notices := Requests(in, c.sel, nil)
			var got []string
			for _, r := range rows {
				got = append(got, r.SpanID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("rows %q, want %q", got, c.want)
			}
			if last := notices[len(notices)-1]; (last == limitNotice) != (c.limit != "") {
				t.Errorf("last notice %q, want the limit's: %v", last, c.limit != "")
			}
		})
	}
}

// TestRequestsNotices shows the coverage notice and where the caller's notices go.
func TestRequestsNotices(t *testing.T) {
	const rate = 2.0
	set := grid(80, map[series.Key]map[series.Signal]func(int) float64{
		keyA: {series.RequestRate: func(int) float64 { return rate }},
		keyB: {series.RequestRate: func(int) float64 { return rate }},
	})
	var even []traces.Request // 6 spans of each instance
	for i := range 12 {
		k := keyA
		if i%2 == 1 {
			k = keyB
		}
		even = append(even, request(k, at(20+i), at(21+i)))
	}
	var onlyA []traces.Request
	for i := range 12 {
		onlyA = append(onlyA, request(keyA, at(20+i), at(21+i)))
	}
	const sampled = "12 of 2,400 requests that finished in this range (per vllm:request_success_total) have a span: traces are sampled, so percentiles taken from spans are biased; use the metrics for rates and quantiles"
	cases := []struct {
		name string
		in   Input
		sel  Selection
		want string
	}{
		{name: "the coverage, each instance's share alike", in: Input{Requests: even, Set: set}, want: sampled},
		{name: "the TTFT the searches asked for", in: Input{Requests: even, Set: set}, sel: Selection{MinTTFT: 0.5},
			want: sampled + " (only spans with TTFT ≥ 0.5 s were asked for)"},
		{name: "an instance whose share differs by more than twice", in: Input{Requests: onlyA, Set: set},
			want: sampled + "; 0.5% of the range's requests were examined overall; where it differs, per instance: 10.0.0.2:8000 0.0% (0 of 1200)"},
		{name: "without metrics the finished count is unknown", in: Input{Requests: even}, sel: Selection{MinTTFT: 2},
			want: "12 request span(s) found; the metrics have no vllm:request_success_total in this range, so how many requests finished is unknown (only spans with TTFT ≥ 2 s were asked for)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.From, c.in.To = at(20), at(60)
			_, notices := Requests(c.in, c.sel, []string{"the caller's"})
			if len(notices) < 2 || notices[0] != c.want || notices[1] != "the caller's" {
				t.Fatalf("notices %q, want the coverage %q first, then the caller's", notices, c.want)
			}
			// The join's own notices (too few requests for the window's statistics) follow.
			if !strings.Contains(strings.Join(notices[2:], "\n"), "at least 20 are needed") {
				t.Errorf("notices %q lack the join's after the caller's", notices)
			}
		})
	}
}
