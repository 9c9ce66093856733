package slo

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// TestParseNamesTheBadValue reads the table of bad objectives the config page's validation
// (src/slo.ts) is tested with too, so that the two cannot drift apart.
func TestParseNamesTheBadValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "bad-objectives.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []struct {
			Name string          `json:"name"`
			SLOs json.RawMessage `json:"slos"`
			Says []string        `json:"says"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) == 0 {
		t.Fatal("no cases in testdata/bad-objectives.json")
	}
	for _, c := range table.Cases {
		t.Run(c.Name, func(t *testing.T) {
			_, err := Parse(c.SLOs)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range c.Says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}
