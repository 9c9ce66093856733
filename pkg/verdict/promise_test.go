package verdict

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// window is a window's Stats with every promised signal known: 300 requests, no preemption.
func window() Stats {
	return Stats{Requests: 300, TTFTP50: Interval{Value: 0.18, Lower: 0.1, Upper: 0.25}, TTFTP99: Interval{Value: 1.8, Lower: 1, Upper: 2.5},
		HitRate: 0.02, Acceptance: 0.4, TPOT: 0.02, PreemptionRate: 0, QueueTime: 0.5, WaitingRatio: 0.3, AbortRatio: 0.1,
		LengthRatio: 0.05, StepRate: 40}
}

func TestCheckPromise(t *testing.T) {
	down := func(s series.Signal) series.Promise {
		return series.Promise{Signal: s, Direction: series.Down, Sentence: "it falls"}
	}
	up := func(s series.Signal) series.Promise {
		return series.Promise{Signal: s, Direction: series.Up, Sentence: "it rises"}
	}
	cases := []struct {
		name          string
		promise       series.Promise
		before, after func(*Stats)
		want          Outcome
		// says is a phrase the sentence must hold.
		says string
	}{
		{"preemptions gone: moved", down(series.PreemptionRate), func(s *Stats) { s.PreemptionRate = 1.2 }, nil, Moved, "-100%"},
		{"preemptions 5% fewer: did not move", down(series.PreemptionRate), func(s *Stats) { s.PreemptionRate = 1 }, func(s *Stats) { s.PreemptionRate = 0.95 }, DidNotMove, "less than 10%"},
		{"preemptions from none to some: got worse", down(series.PreemptionRate), nil, func(s *Stats) { s.PreemptionRate = 0.3 }, GotWorse, "from 0"},
		{"none before and after: did not move", down(series.PreemptionRate), nil, nil, DidNotMove, "less than 10%"},
		{"hit rate up: moved", up(series.PrefixCacheHitRate), nil, func(s *Stats) { s.HitRate = 0.9 }, Moved, "up as promised"},
		{"hit rate down: got worse", up(series.PrefixCacheHitRate), func(s *Stats) { s.HitRate = 0.9 }, nil, GotWorse, "down where up was promised"},
		{"hit rate near 0 down by 70%: less than a point, did not move", up(series.PrefixCacheHitRate), func(s *Stats) { s.HitRate = 0.0025 },
			func(s *Stats) { s.HitRate = 0.00076 }, DidNotMove, "by less than 0.01 in absolute terms"},
		{"steps resume after a stall: moved", up(series.EngineStepRate), func(s *Stats) { s.StepRate = 0 }, nil, Moved, "from 0"},
		{"decode 12% faster: moved", down(series.TPOTMean), nil, func(s *Stats) { s.TPOT = 0.0176 }, Moved, "-12%"},
		{"queue time 8% longer: did not move", down(series.QueueTimeMean), nil, func(s *Stats) { s.QueueTime = 0.54 }, DidNotMove, "+8%"},
		{"waiting share halved: moved", down(series.WaitingRatio), nil, func(s *Stats) { s.WaitingRatio = 0.15 }, Moved, "30% to 15%"},
		{"aborts doubled: got worse", down(series.AbortRatio), nil, func(s *Stats) { s.AbortRatio = 0.2 }, GotWorse, "+100%"},
		{"truncations unknown now: not enough data", down(series.LengthRatio), nil, func(s *Stats) { s.LengthRatio = math.NaN() }, NotEnoughData, "current window"},
		{"TTFT p99 leaves its bucket: moved", down(series.TTFTP99), nil,
			func(s *Stats) { s.TTFTP99 = Interval{Value: 0.4, Lower: 0.25, Upper: 0.5} }, Moved, "0.25–0.5 s"},
		{"TTFT p99 20% lower in the same bucket: did not move, within bucket resolution", down(series.TTFTP99), nil,
			func(s *Stats) { s.TTFTP99.Value = 1.44 }, DidNotMove, "bucket resolution"},
		{"TTFT p50 certainly higher: got worse", down(series.TTFTP50), nil,
			func(s *Stats) { s.TTFTP50 = Interval{Value: 0.4, Lower: 0.25, Upper: 0.5} }, GotWorse, "up where down was promised"},
		{"TTFT p99/p50 toward 1: moved", down(series.TTFTRatio),
			func(s *Stats) { s.TTFTP50 = Interval{Value: 0.05, Lower: 0.04, Upper: 0.06} },
			func(s *Stats) {
				s.TTFTP50 = Interval{Value: 0.05, Lower: 0.04, Upper: 0.06}
				s.TTFTP99 = Interval{Value: 0.3, Lower: 0.25, Upper: 0.5}
			}, Moved, "TTFT p99/p50"},
		{"a quantile with 12 requests before: not enough data, with the counts", down(series.TTFTP99), func(s *Stats) { s.Requests = 12 },
			func(s *Stats) { s.TTFTP99 = Interval{Value: 0.4, Lower: 0.25, Upper: 0.5} }, NotEnoughData, "the baseline has 12, the current window 300"},
		{"a rate needs no request count", down(series.PreemptionRate), func(s *Stats) { s.Requests, s.PreemptionRate = 5, 1 }, func(s *Stats) { s.Requests = 5 }, Moved, "-100%"},
		{"a signal no verdict reads: not enough data", down(series.KVUsage), nil, nil, NotEnoughData, "cannot read kv_usage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, after := window(), window()
			if c.before != nil {
				c.before(&before)
			}
			if c.after != nil {
				c.after(&after)
			}
			got := CheckPromise(before, after, c.promise)
			if got.Outcome != c.want {
				t.Fatalf("outcome %q, want %q: %s", got.Outcome, c.want, got.Sentence)
			}
			if !strings.Contains(got.Sentence, c.says) {
				t.Errorf("sentence %q does not say %q", got.Sentence, c.says)
			}
		})
	}
}

// Every rule's promise names a signal a verdict reads, and the verdict's fetch carries it.
func TestEveryRulesPromiseIsCheckable(t *testing.T) {
	rules, err := diagnosis.Rules(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if !Checkable(r.Promise) {
			t.Errorf("%s promises %s %s, which CheckPromise cannot read", r.ID, r.Promise.Signal, r.Promise.Direction)
			continue
		}
		fetched := PromiseSignals(r.Promise)
		for _, s := range measures[r.Promise.Signal].reads {
			if !slices.Contains(fetched, s) {
				t.Errorf("%s: the fetch lacks %s, which its promise reads", r.ID, s)
			}
		}
		if measures[r.Promise.Signal].interval == nil && !slices.Contains(fetched, r.Promise.Signal) {
			t.Errorf("%s: the fetch lacks %s", r.ID, r.Promise.Signal)
		}
	}
}
