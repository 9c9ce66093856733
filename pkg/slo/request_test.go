package slo

import (
	"encoding/json"
	"math"
	"testing"
)

func TestJudge(t *testing.T) {
	objectives, err := Parse(json.RawMessage(`[
		{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"},
		{"name": "tpot-50ms", "indicator": "tpot", "threshold": 0.05, "objective": 0.99, "window": "28d"},
		{"name": "itl-50ms", "indicator": "itl", "threshold": 0.05, "objective": 0.99, "window": "28d"},
		{"name": "e2e-llama", "indicator": "e2e", "threshold": 30, "objective": 0.99, "window": "28d", "model": "llama-.*"},
		{"name": "up", "indicator": "availability", "objective": 0.999, "window": "28d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	cases := []struct {
		name string
		req  Request
		want map[string]Outcome // objective → outcome; an objective absent is not judged
	}{
		{"a fast request of another model meets all but ITL, and e2e-llama does not apply",
			Request{Model: "qwen", TTFT: 0.4, TPOT: 0.02, E2E: 3, FinishReasons: "stop"},
			map[string]Outcome{"ttft-1s": Met, "tpot-50ms": Met, "itl-50ms": Unknown, "up": Met}},
		{"a threshold is good at equality, as the histogram's le bucket counts it",
			Request{Model: "llama-3", TTFT: 1, TPOT: 0.05, E2E: 30, FinishReasons: "length"},
			map[string]Outcome{"ttft-1s": Met, "tpot-50ms": Met, "itl-50ms": Unknown, "e2e-llama": Met, "up": Met}},
		{"a slow first token misses its objective only",
			Request{Model: "llama-3", TTFT: 1.84, TPOT: 0.02, E2E: 12, FinishReasons: "stop"},
			map[string]Outcome{"ttft-1s": Missed, "tpot-50ms": Met, "itl-50ms": Unknown, "e2e-llama": Met, "up": Met}},
		{"an aborted request misses availability",
			Request{Model: "llama-3", TTFT: 0.2, TPOT: 0.01, E2E: 2, FinishReasons: "stop, abort"},
			map[string]Outcome{"ttft-1s": Met, "tpot-50ms": Met, "itl-50ms": Unknown, "e2e-llama": Met, "up": Missed}},
		{"an errored request misses availability",
			Request{Model: "qwen", TTFT: 0.2, TPOT: 0.01, E2E: 2, FinishReasons: "error"},
			map[string]Outcome{"ttft-1s": Met, "tpot-50ms": Met, "itl-50ms": Unknown, "up": Missed}},
		{"a value the span lacks is unknown, not met",
			Request{Model: "qwen", TTFT: nan, TPOT: nan, E2E: nan},
			map[string]Outcome{"ttft-1s": Unknown, "tpot-50ms": Unknown, "itl-50ms": Unknown, "up": Met}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]Outcome{}
			for _, j := range Judge(objectives, c.req) {
				got[j.Objective.Name] = j.Outcome
				if (j.Outcome == Unknown) != (j.Why != "") {
					t.Errorf("%s: outcome %s with why %q", j.Objective.Name, j.Outcome, j.Why)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("judged %v, want %v", got, c.want)
			}
			for name, want := range c.want {
				if got[name] != want {
					t.Errorf("%s: %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

func TestJudgementReads(t *testing.T) {
	objectives, err := Parse(json.RawMessage(`[
		{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"},
		{"name": "up", "indicator": "availability", "objective": 0.999, "window": "28d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		req  Request
		want []string
	}{
		{Request{TTFT: 1.84, FinishReasons: "abort"}, []string{"ttft-1s missed (1.84 s > 1 s)", "up missed"}},
		{Request{TTFT: 0.25}, []string{"ttft-1s met (0.25 s ≤ 1 s)", "up met"}},
		{Request{TTFT: math.NaN()}, []string{"ttft-1s unknown (the span has no ttft)", "up met"}},
	}
	for _, c := range cases {
		js := Judge(objectives, c.req)
		for i, want := range c.want {
			if got := js[i].String(); got != want {
				t.Errorf("%q, want %q", got, want)
			}
		}
	}
}
