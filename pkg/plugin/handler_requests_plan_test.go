package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// TestPlanSearches shows what a requests query will search, in order, without a backend: the
// intervals where findings fire first, for their instance, then the sub-windows.
func TestPlanSearches(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour) // two sub-windows of 30 minutes
	at := func(m int) time.Time { return from.Add(time.Duration(m) * time.Minute) }
	set := series.NewSet(series.NewGrid(from, to, 15*time.Second))
	for _, inst := range []string{"vllm-01:8000", "vllm-02:8000", "vllm-03:8000"} {
		set.Put(series.NewSeries(series.TTFTP50, series.Key{Instance: inst, Model: "m"}, set.Grid.Len))
	}
	typical := map[string]float64{"vllm-01:8000": 0.1, "vllm-02:8000": 0.2, "vllm-03:8000": 0.1}
	finding := func(inst string, sev diagnosis.Severity, start, end int) diagnosis.Finding {
		return diagnosis.Finding{Rule: diagnosis.KVCacheSaturated, Key: series.Key{Instance: inst, Model: "m"}, Severity: sev, Start: at(start), End: at(end)}
	}
	many := make([]diagnosis.Finding, maxFindingSearches+2)
	for i := range many {
		many[i] = finding("vllm-01:8000", diagnosis.Warning, 2*i, 2*i+1)
	}
	// Each search reads "instance [from, to] minutes after from, TTFT ≥ x"; "*" is the fleet.
	cases := []struct {
		name     string
		query    Query
		findings []diagnosis.Finding
		want     []string
		notice   string
	}{
		{
			name:     "without filters: the finding's interval for its instance, then the fleet and the thresholds per sub-window",
			findings: []diagnosis.Finding{finding("vllm-03:8000", diagnosis.Warning, 10, 20)},
			want: []string{
				"vllm-03:8000 [10,20]",
				"* [0,30]", "vllm-01:8000 [0,30] ≥0.3", "vllm-02:8000 [0,30] ≥0.6", "vllm-03:8000 [0,30] ≥0.3",
				"* [30,60]", "vllm-01:8000 [30,60] ≥0.3", "vllm-02:8000 [30,60] ≥0.6", "vllm-03:8000 [30,60] ≥0.3",
			},
		},
		{
			name:     "a regex filter searches its instances only, and only their findings",
			query:    Query{Instance: "vllm-0[12]:8000"},
			findings: []diagnosis.Finding{finding("vllm-03:8000", diagnosis.Critical, 10, 20), finding("vllm-02:8000", diagnosis.Warning, 40, 45)},
			want: []string{
				"vllm-02:8000 [40,45]",
				"vllm-01:8000 [0,30]", "vllm-02:8000 [0,30]", "vllm-01:8000 [0,30] ≥0.3", "vllm-02:8000 [0,30] ≥0.6",
				"vllm-01:8000 [30,60]", "vllm-02:8000 [30,60]", "vllm-01:8000 [30,60] ≥0.3", "vllm-02:8000 [30,60] ≥0.6",
			},
		},
		{
			name:  "anomalousOnly: findings' intervals, merged per instance, clipped, the most severe first; then the thresholds only",
			query: Query{Instance: "vllm-0[13]:8000", AnomalousOnly: true},
			findings: []diagnosis.Finding{
				finding("vllm-01:8000", diagnosis.Warning, -5, 12), finding("vllm-01:8000", diagnosis.Warning, 10, 15),
				finding("vllm-03:8000", diagnosis.Critical, 50, 70), finding("vllm-03:8000", diagnosis.Info, 20, 20),
			},
			want: []string{
				"vllm-03:8000 [50,60]", "vllm-01:8000 [0,15]", "vllm-03:8000 [20,21]",
				"vllm-01:8000 [0,30] ≥0.3", "vllm-03:8000 [0,30] ≥0.3",
				"vllm-01:8000 [30,60] ≥0.3", "vllm-03:8000 [30,60] ≥0.3",
			},
		},
		{
			name:     "a finding outside the range is not searched",
			query:    Query{Instance: "vllm-01:8000", AnomalousOnly: true},
			findings: []diagnosis.Finding{finding("vllm-01:8000", diagnosis.Critical, 61, 70)},
			want:     []string{"vllm-01:8000 [0,30] ≥0.3", "vllm-01:8000 [30,60] ≥0.3"},
		},
		{
			name:     "at most maxFindingSearches intervals, a notice for the rest",
			query:    Query{Instance: "vllm-01:8000", AnomalousOnly: true},
			findings: many,
			want: func() []string {
				var out []string
				for i := range maxFindingSearches {
					out = append(out, fmt.Sprintf("vllm-01:8000 [%d,%d]", 2*i, 2*i+1))
				}
				return append(out, "vllm-01:8000 [0,30] ≥0.3", "vllm-01:8000 [30,60] ≥0.3")
			}(),
			notice: "2 more interval(s) where findings fire were not searched on their own",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			instance, err := signals.ParseMatch("instance", c.query.Instance)
			if err != nil {
				t.Fatal(err)
			}
			in := correlate.Input{Set: set, Findings: c.findings, Typical: typical, From: from, To: to}
			p := planSearches(c.query, instance, signals.Match{}, in, from, to)
			got := make([]string, len(p.queries))
			for i, q := range p.queries {
				got[i] = describeSearch(q, from)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("searches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if notes := strings.Join(p.notices, "\n"); !strings.Contains(notes, c.notice) || (c.notice == "" && notes != "") {
				t.Fatalf("notices %q, want %q", notes, c.notice)
			}
		})
	}
}

func describeSearch(q traces.Query, from time.Time) string {
	inst := "*"
	if len(q.Instances) > 0 {
		inst = strings.Join(q.Instances, ",")
	}
	s := fmt.Sprintf("%s [%g,%g]", inst, q.From.Sub(from).Minutes(), q.To.Sub(from).Minutes())
	if q.MinTTFT > 0 {
		s += fmt.Sprintf(" ≥%.3g", q.MinTTFT)
	}
	return s
}
