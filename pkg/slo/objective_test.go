package slo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

func TestParseReadsObjectives(t *testing.T) {
	got, err := Parse(json.RawMessage(`[
		{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d", "model": "llama-.*"},
		{"name": "up", "indicator": "availability", "objective": 0.999, "window": "7d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d objectives, want 2", len(got))
	}
	ttft, up := got[0], got[1]
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"name", ttft.Name, "ttft-2s"},
		{"family", ttft.Family, vllm.TimeToFirstToken},
		{"threshold", ttft.Threshold, 2.0},
		{"target", ttft.Target, 0.99},
		{"window in days", ttft.Window, 28 * 24 * time.Hour},
		{"availability has no family", up.Family, ""},
		{"7d", up.Window, 7 * 24 * time.Hour},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParseWithoutObjectives(t *testing.T) {
	for _, raw := range []string{``, `null`, `[]`} {
		if got, err := Parse(json.RawMessage(raw)); err != nil || len(got) != 0 {
			t.Errorf("%q: %v, %v; want no objectives", raw, got, err)
		}
	}
}

func TestObjectiveMatchesModel(t *testing.T) {
	for _, c := range []struct {
		filter, model string
		want          bool
	}{
		{"", "anything", true},
		{"llama-8b", "llama-8b", true},
		{"llama-8b", "llama-70b", false},
		{"llama-.*", "llama-70b", true},
		{"llama", "llama-70b", false}, // a regular expression matches the whole name
	} {
		os, err := Parse(json.RawMessage(`[{"name":"a","indicator":"e2e","threshold":1,"objective":0.9,"window":"1d","model":` + quoteJSON(c.filter) + `}]`))
		if err != nil {
			t.Fatal(err)
		}
		if got := os[0].Matches(c.model); got != c.want {
			t.Errorf("filter %q on %q: %v, want %v", c.filter, c.model, got, c.want)
		}
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestParseNamesTheBadValue(t *testing.T) {
	const ok = `"name": "x", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"`
	for _, c := range []struct {
		name string
		raw  string
		says []string
	}{
		{"not a list", `{"name": "x"}`, []string{"slos", "not a list"}},
		{"objective not an object", `[3]`, []string{"slos[0]", "not an objective"}},
		{"threshold a string", `[{"name": "x", "indicator": "ttft", "threshold": "2s", "objective": 0.99, "window": "28d"}]`, []string{"slos[0]", "not an objective"}},
		{"empty name", `[{"name": "", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`, []string{"slos[0]", "name is empty"}},
		{"unknown indicator", `[{"name": "x", "indicator": "latency", "threshold": 2, "objective": 0.99, "window": "28d"}]`, []string{`"x"`, `indicator "latency"`, "ttft, tpot, itl, e2e, availability"}},
		{"threshold zero", `[{"name": "x", "indicator": "ttft", "threshold": 0, "objective": 0.99, "window": "28d"}]`, []string{"threshold 0", "positive number of seconds"}},
		{"threshold negative", `[{"name": "x", "indicator": "e2e", "threshold": -1, "objective": 0.99, "window": "28d"}]`, []string{"threshold -1", "positive"}},
		{"threshold on availability", `[{"name": "x", "indicator": "availability", "threshold": 2, "objective": 0.99, "window": "28d"}]`, []string{"threshold 2", "availability"}},
		{"objective zero", `[{"name": "x", "indicator": "ttft", "threshold": 2, "objective": 0, "window": "28d"}]`, []string{"objective 0", "between 0 and 1"}},
		{"objective one", `[{"name": "x", "indicator": "ttft", "threshold": 2, "objective": 1, "window": "28d"}]`, []string{"objective 1", "between 0 and 1"}},
		{"objective a percentage", `[{"name": "x", "indicator": "ttft", "threshold": 2, "objective": 99, "window": "28d"}]`, []string{"objective 99", "such as 0.99"}},
		{"window not a duration", `[{"name": "x", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "a month"}]`, []string{`window "a month"`, "28d"}},
		{"window missing", `[{"name": "x", "indicator": "ttft", "threshold": 2, "objective": 0.99}]`, []string{`window ""`, "duration"}},
		{"model not a regular expression", `[{"name": "x", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d", "model": "llama-("}]`, []string{`model "llama-("`, "regular expression"}},
		{"second objective bad", `[{` + ok + `}, {"name": "y", "indicator": "tpot", "threshold": 0.05, "objective": 2, "window": "7d"}]`, []string{"slos[1]", `"y"`, "objective 2"}},
		{"duplicate name", `[{` + ok + `}, {` + ok + `}]`, []string{"slos[1]", "used by an earlier objective"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(c.raw))
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}
