package slo

import (
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

func TestAttribute(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	g := series.NewGrid(t0, t0.Add(9*time.Minute), time.Minute)
	at := func(i int) time.Time { return g.Time(i) }
	key := series.Key{Instance: "vllm-a", Model: "m"}
	finding := func(rule string, from, to int, secondaryTo string) diagnosis.Finding {
		return diagnosis.Finding{Rule: rule, Key: key, Start: at(from), End: at(to), SecondaryTo: secondaryTo}
	}
	// misses builds events of 10 a step with the given misses per step (per minute).
	misses := func(m map[int]float64) Events {
		total, good := make([]float64, g.Len), make([]float64, g.Len)
		for i := range total {
			total[i] = 10.0 / 60
			good[i] = (10 - m[i]) / 60
		}
		return FromCounts(total, good, time.Minute)
	}
	for _, c := range []struct {
		name     string
		events   Events
		findings []diagnosis.Finding
		want     []Share
	}{
		{"misses with no finding make the none row alone",
			misses(map[int]float64{3: 4}), nil,
			[]Share{{Rule: NoFinding, Bad: 4, Share: 1}}},
		{"a finding holds the misses of the steps it was active, none the rest",
			misses(map[int]float64{2: 6, 8: 2}), []diagnosis.Finding{finding("kv_cache_saturated", 1, 4, "")},
			[]Share{{Rule: "kv_cache_saturated", From: at(1), To: at(4), Bad: 6, Share: 0.75}, {Rule: NoFinding, Bad: 2, Share: 0.25}}},
		{"findings active together share a step's misses equally",
			misses(map[int]float64{4: 4}), []diagnosis.Finding{finding("a", 2, 4, ""), finding("c", 4, 6, "")},
			[]Share{{Rule: "a", From: at(2), To: at(4), Bad: 2, Share: 0.5}, {Rule: "c", From: at(4), To: at(6), Bad: 2, Share: 0.5}}},
		{"a finding explained by an active one cedes its part, and holds the misses when alone",
			misses(map[int]float64{3: 5, 5: 3}), []diagnosis.Finding{finding("cause", 2, 4, ""), finding("symptom", 3, 5, "cause")},
			[]Share{{Rule: "cause", From: at(2), To: at(4), Bad: 5, Share: 5.0 / 8}, {Rule: "symptom", From: at(3), To: at(5), Bad: 3, Share: 3.0 / 8}}},
		{"another instance's findings take none of its misses",
			misses(map[int]float64{3: 5}), []diagnosis.Finding{{Rule: "x", Key: series.Key{Instance: "vllm-b", Model: "m"}, Start: at(0), End: at(9)}},
			[]Share{{Rule: NoFinding, Bad: 5, Share: 1}}},
		{"an instance-wide finding (no model) covers the instance's models",
			misses(map[int]float64{3: 5}), []diagnosis.Finding{{Rule: "engine_stalled", Key: series.Key{Instance: "vllm-a"}, Start: at(0), End: at(9)}},
			[]Share{{Rule: "engine_stalled", From: at(0), To: at(9), Bad: 5, Share: 1}}},
		{"no misses, no rows", misses(nil), []diagnosis.Finding{finding("a", 0, 9, "")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Attribute(c.events, g, 0, g.Len-1, key, c.findings)
			if len(got) != len(c.want) {
				t.Fatalf("%d rows %+v, want %d %+v", len(got), got, len(c.want), c.want)
			}
			for i, w := range c.want {
				r := got[i]
				if r.Rule != w.Rule || !r.From.Equal(w.From) || !r.To.Equal(w.To) || !same(r.Bad, w.Bad) || !same(r.Share, w.Share) {
					t.Errorf("row %d %+v, want %+v", i, r, w)
				}
			}
		})
	}
}

func TestAttributeReadsOnlyTheRange(t *testing.T) {
	g := series.NewGrid(time.Unix(0, 0), time.Unix(0, 0).Add(4*time.Minute), time.Minute)
	total, good := []float64{1, 1, 1, 1, 1}, []float64{0, 1, 1, 1, 0.5}
	got := Attribute(FromCounts(total, good, time.Minute), g, 1, 4, series.Key{Instance: "a"}, nil)
	if len(got) != 1 || !same(got[0].Bad, 30) {
		t.Errorf("rows %+v, want the 30 misses of the last step alone", got)
	}
}

func TestMissesOf(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	t1, t2 := t0.Add(10*time.Minute), t0.Add(20*time.Minute)
	ttft, up := Objective{Name: "ttft-1s"}, Objective{Name: "up"}
	a, b := series.Key{Instance: "vllm-a", Model: "m"}, series.Key{Instance: "vllm-a", Model: "n"}
	row := func(o Objective, k series.Key, rule string, from, to time.Time, bad, share float64) AttributionRow {
		return AttributionRow{Objective: o, Key: k, Share: Share{Rule: rule, From: from, To: to, Bad: bad, Share: share}}
	}
	rows := []AttributionRow{
		row(ttft, a, "kv_cache_saturated", t0, t1, 30, 0.6),
		row(ttft, a, NoFinding, time.Time{}, time.Time{}, 20, 0.4),
		row(ttft, b, "engine_stalled", t1, t2, 10, 0.5),
		row(up, a, "kv_cache_saturated", t0, t1, 2, 1),
		row(up, a, "kv_cache_saturated", t1, t2, 4, 1),
		row(up, b, "engine_stalled", t1, t2, 3, 0.25),
		row(ttft, series.Key{Instance: "vllm-b", Model: "m"}, "kv_cache_saturated", t0, t1, 99, 1),
	}
	for _, c := range []struct {
		name    string
		finding diagnosis.Finding
		want    []Miss
	}{
		{"each objective's misses of the finding, on its key only",
			diagnosis.Finding{Rule: "kv_cache_saturated", Key: a, Start: t0, End: t1},
			[]Miss{{"ttft-1s", 30, 0.6}, {"up", 2, 1}}},
		{"another interval of the same rule is another finding",
			diagnosis.Finding{Rule: "kv_cache_saturated", Key: a, Start: t1, End: t2},
			[]Miss{{"up", 4, 1}}},
		{"an instance-wide finding adds up its models, its share of their misses",
			diagnosis.Finding{Rule: "engine_stalled", Key: series.Key{Instance: "vllm-a"}, Start: t1, End: t2},
			[]Miss{{"ttft-1s", 10, 0.5}, {"up", 3, 0.25}}},
		{"a finding with no misses has none",
			diagnosis.Finding{Rule: "prefix_cache_miss", Key: a, Start: t0, End: t2}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := MissesOf(rows, c.finding)
			if len(got) != len(c.want) {
				t.Fatalf("%+v, want %+v", got, c.want)
			}
			for i, w := range c.want {
				if got[i].Objective != w.Objective || !same(got[i].Bad, w.Bad) || !same(got[i].Share, w.Share) {
					t.Errorf("%d: %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

func TestMissesOfAddsModelsShares(t *testing.T) {
	o := Objective{Name: "ttft-1s"}
	from, to := time.Unix(0, 0), time.Unix(600, 0)
	f := diagnosis.Finding{Rule: "engine_stalled", Key: series.Key{Instance: "vllm-a"}, Start: from, End: to}
	// 10 of model m's 20 misses and 30 of model n's 40: 40 of 60.
	rows := []AttributionRow{
		{Objective: o, Key: series.Key{Instance: "vllm-a", Model: "m"}, Share: Share{Rule: f.Rule, From: from, To: to, Bad: 10, Share: 0.5}},
		{Objective: o, Key: series.Key{Instance: "vllm-a", Model: "n"}, Share: Share{Rule: f.Rule, From: from, To: to, Bad: 30, Share: 0.75}},
	}
	got := MissesOf(rows, f)
	if len(got) != 1 || !same(got[0].Bad, 40) || !same(got[0].Share, 40.0/60) {
		t.Errorf("%+v, want 40 misses, 2/3 of the models' 60", got)
	}
}
