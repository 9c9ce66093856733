package frames

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
)

func TestSLOStatusFrameHasTheContractFields(t *testing.T) {
	ttft := slo.Objective{Name: "ttft-2s", Family: "vllm:time_to_first_token_seconds", Threshold: 2, Target: 0.99}
	up := slo.Objective{Name: "up", Target: 0.999}
	st := slo.Status{Range: slo.Tally{Total: 100, GoodLow: 90, GoodHigh: 95}, Attainment: slo.Interval{Low: 0.9, High: 0.95},
		Budget: slo.Interval{Low: -4, High: -3.5}, Burn1h: slo.Interval{Low: 5, High: 10}, Burn6h: slo.Interval{Low: math.NaN(), High: math.NaN()}}
	rows := []slo.Row{
		{Objective: ttft, Key: series.Key{Instance: "a", Model: "m"}, Status: st, Lower: 1, Upper: 2.5},
		{Objective: ttft, Key: series.Key{Instance: "b", Model: "m"}, Status: st, Lower: 2, Upper: 2},
		{Objective: ttft, Key: series.Key{Instance: slo.Fleet, Model: "m"}, Status: st, Lower: math.NaN(), Upper: math.NaN()},
		{Objective: up, Key: series.Key{Instance: "a", Model: "m"}, Status: st},
	}
	f := SLOStatus(rows, "q", []string{"a notice"})
	if f.Meta == nil || f.Meta.Type != data.FrameTypeTable || len(f.Meta.Notices) != 1 || f.Meta.ExecutedQueryString != "q" {
		t.Fatalf("meta %+v, want a table with the executed query and the notice", f.Meta)
	}
	for _, name := range []string{"slo", "instance", "model_name", "good", "total", "attainment_low", "attainment_high", "objective",
		"budget_remaining", "burn_rate_1h", "burn_rate_6h", "bounds"} {
		if fld, _ := f.FieldByName(name); fld == nil {
			t.Errorf("field %q missing", name)
		}
	}
	for _, c := range []struct {
		what  string
		field string
		row   int
		want  any
	}{
		{"good is the least count", "good", 0, 90.0},
		{"the budget is its worst end", "budget_remaining", 0, -4.0},
		{"a burn rate is its worst end", "burn_rate_1h", 0, 10.0},
		{"a threshold between bounds names them", "bounds", 0, "between the bucket bounds 1 s and 2.5 s"},
		{"a threshold on a bound is exact", "bounds", 1, "exact: 2 s is a bucket bound"},
		{"a fleet of different layouts says so", "bounds", 2, "instances with different bucket layouts"},
		{"availability is exact", "bounds", 3, "exact (finished requests)"},
	} {
		fld, _ := f.FieldByName(c.field)
		if got, _ := fld.ConcreteAt(c.row); got != c.want {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
	if fld, _ := f.FieldByName("burn_rate_6h"); fld.At(0).(*float64) != nil {
		t.Errorf("a burn rate without events is %v, want null", *fld.At(0).(*float64))
	}
}

func TestSLOAttributionFrame(t *testing.T) {
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	o := slo.Objective{Name: "ttft-2s"}
	k := series.Key{Instance: "a", Model: "m"}
	f := SLOAttribution([]slo.AttributionRow{
		{Objective: o, Key: k, Share: slo.Share{Rule: "kv_cache_saturated", From: t0, To: t0.Add(time.Hour), Bad: 30, Share: 0.75}},
		{Objective: o, Key: k, Share: slo.Share{Rule: slo.NoFinding, Bad: 10, Share: 0.25}},
	}, "q", nil)
	var names []string
	for _, fld := range f.Fields {
		names = append(names, fld.Name)
	}
	if got := strings.Join(names, " "); got != "slo instance model_name rule from to bad share" {
		t.Errorf("fields %s", got)
	}
	from, _ := f.FieldByName("from")
	if from.At(0).(*time.Time) == nil || from.At(1).(*time.Time) != nil {
		t.Errorf("from %v, %v: want the finding's start, and null on the none row", from.At(0), from.At(1))
	}
}

func TestSLOGoodputFrames(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	k := series.Key{Instance: "vllm-a", Model: "m"}
	rows := []slo.Goodput{
		{Key: k, Objectives: []string{"ttft-1s"}, From: t0, Step: time.Minute, Low: []float64{1, 2}, High: []float64{1.5, 2}},
		{Key: series.Key{Instance: slo.Fleet, Model: "m"}, Objectives: []string{"ttft-1s"}, From: t0, Step: time.Minute, Low: []float64{1, 2}, High: []float64{1.5, 2}},
	}
	itl := slo.Objective{Name: "itl-50ms", Indicator: slo.ITL}
	fs := SLOGoodput(rows, []slo.Objective{itl}, "executed", nil)
	if len(fs) != 2 {
		t.Fatalf("%d frames, want one per series", len(fs))
	}
	f := fs[0]
	if got := f.Fields[0].At(1).(time.Time); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("second step at %s, want a step after the first", got)
	}
	for _, c := range []struct {
		field string
		at    int
		want  float64
	}{{"goodput_low", 0, 1}, {"goodput_high", 0, 1.5}, {"goodput_high", 1, 2}} {
		field, _ := f.FieldByName(c.field)
		if field == nil || field.At(c.at).(float64) != c.want || field.Labels["instance"] != "vllm-a" || field.Labels["model_name"] != "m" {
			t.Errorf("%s at %d: %v, want %v labelled vllm-a, m", c.field, c.at, field, c.want)
		}
	}
	var texts []string
	for _, n := range f.Meta.Notices {
		texts = append(texts, n.Text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"leaves out itl-50ms", "per output token", "max(0, a + b − 1)"} {
		if !strings.Contains(all, want) {
			t.Errorf("notices %q do not say %q", all, want)
		}
	}
}

// The sampled fields come only with spans read: without a trace backend the frame is the
// bounds alone.
func TestSLOGoodputSampledFields(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	k := series.Key{Instance: "vllm-a", Model: "m"}
	bounds := slo.Goodput{Key: k, From: t0, Step: time.Minute, Low: []float64{1, 2}, High: []float64{1.5, 2}}
	sampled := bounds
	sampled.Share, sampled.Spans, sampled.FromSpans = []float64{0.75, math.NaN()}, []float64{4, 0}, []float64{1.2, math.NaN()}
	for _, c := range []struct {
		name   string
		row    slo.Goodput
		fields []string
		units  []string
	}{
		{"bounds alone without spans", bounds, []string{"time", "goodput_low", "goodput_high"}, []string{"", "reqps", "reqps"}},
		{"with spans, the sampled goodput, share and spans", sampled,
			[]string{"time", "goodput_low", "goodput_high", "goodput_sampled", "sampled_share", "sampled_spans"},
			[]string{"", "reqps", "reqps", "reqps", "percentunit", "short"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := SLOGoodput([]slo.Goodput{c.row}, nil, "", nil)[0]
			if len(f.Fields) != len(c.fields) {
				t.Fatalf("%d fields, want %v", len(f.Fields), c.fields)
			}
			for i, field := range f.Fields {
				unit := ""
				if field.Config != nil {
					unit = field.Config.Unit
				}
				if field.Name != c.fields[i] || unit != c.units[i] || (i > 0 && field.Labels["instance"] != "vllm-a") {
					t.Errorf("field %d: %s in %q labelled %v, want %s in %q labelled with the instance", i, field.Name, unit, field.Labels, c.fields[i], c.units[i])
				}
			}
			said := false
			for _, n := range f.Meta.Notices {
				said = said || strings.HasPrefix(n.Text, "sampled_share is the share")
			}
			if said != (c.row.Spans != nil) {
				t.Errorf("a notice says what sampled_share is: %v, want %v", said, c.row.Spans != nil)
			}
			if c.row.Spans != nil {
				share, _ := f.FieldByName("sampled_share")
				spans, _ := f.FieldByName("sampled_spans")
				if share.At(0).(float64) != 0.75 || !math.IsNaN(share.At(1).(float64)) || spans.At(1).(float64) != 0 {
					t.Errorf("share %v, %v of %v, %v spans; want 0.75 of 4, then NaN of 0", share.At(0), share.At(1), spans.At(0), spans.At(1))
				}
			}
		})
	}
}

func TestSLOGoodputWithoutSeriesSaysWhy(t *testing.T) {
	fs := SLOGoodput(nil, nil, "", nil)
	if len(fs) != 1 || fs[0].Rows() != 0 || !strings.Contains(fs[0].Meta.Notices[len(fs[0].Meta.Notices)-1].Text, "no instance") {
		t.Errorf("%d frames, want one empty frame with a notice saying no instance has the metrics", len(fs))
	}
}

func TestSLOBurnFramesAreLabelledAlertSeries(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	times := []time.Time{t0, t0.Add(time.Minute)}
	o := slo.Objective{Name: "ttft-1s"}
	k := series.Key{Instance: "a", Model: "m"}
	for _, c := range []struct {
		name   string
		alerts []slo.BurnAlert
		labels []data.Labels
	}{
		{"a series per severity; top_rule only when known", []slo.BurnAlert{
			{Objective: o, Key: k, Severity: slo.Page, Values: []float64{0, 20}, TopRule: "kv_cache_saturated"},
			{Objective: o, Key: k, Severity: slo.Ticket, Values: []float64{0, 0}},
		}, []data.Labels{
			{"slo": "ttft-1s", "instance": "a", "model_name": "m", "severity": "page", "top_rule": "kv_cache_saturated"},
			{"slo": "ttft-1s", "instance": "a", "model_name": "m", "severity": "ticket"},
		}},
		{"no series: one typed empty frame", nil, []data.Labels{nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := SLOBurn(times, c.alerts, "q", []string{"a notice"})
			if len(fs) != len(c.labels) {
				t.Fatalf("%d frames, want %d", len(fs), len(c.labels))
			}
			for i, f := range fs {
				first := i == 0
				if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti || (len(f.Meta.Notices) == 1) != first || (f.Meta.ExecutedQueryString == "q") != first {
					t.Fatalf("frame %d meta %+v; want the executed queries and the notice on the first frame alone", i, f.Meta)
				}
				v := f.Fields[1]
				if v.Type() != data.FieldTypeFloat64 || v.Labels.String() != c.labels[i].String() {
					t.Errorf("frame %d: %s labels %v, want float64 labelled %v", i, v.Type(), v.Labels, c.labels[i])
				}
			}
		})
	}
}

// TestSLOBudgetFrames: a series per objective and key labelled with both, valued at the worst
// end of each step's interval; the first frame alone carries the executed queries.
func TestSLOBudgetFrames(t *testing.T) {
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	times := []time.Time{t0, t0.Add(time.Minute)}
	o := slo.Objective{Name: "ttft-2s"}
	fs := SLOBudget(times, []slo.Budget{
		{Objective: o, Key: series.Key{Instance: "a", Model: "m"}, Left: []slo.Interval{{Low: 0.5, High: 0.75}, {Low: -0.25, High: 0}}},
		{Objective: o, Key: series.Key{Instance: slo.Fleet, Model: "m"}, Left: []slo.Interval{{Low: 0.9, High: 1}, {Low: math.NaN(), High: math.NaN()}}},
	}, "q", []string{"a notice"})
	if len(fs) != 2 || fs[0].Meta.ExecutedQueryString != "q" || len(fs[0].Meta.Notices) != 1 || fs[1].Meta.ExecutedQueryString != "" {
		t.Fatalf("%d frames, first meta %+v: want 2, the first alone with the query and the notice", len(fs), fs[0].Meta)
	}
	for i, c := range []struct {
		instance, display string
		want              []float64
	}{
		{"a", "a · m · ttft-2s budget left", []float64{0.5, -0.25}},
		{slo.Fleet, "fleet · m · ttft-2s budget left", []float64{0.9, math.NaN()}},
	} {
		v := fs[i].Fields[1]
		if v.Name != "budget_remaining" || v.Labels["slo"] != "ttft-2s" || v.Labels["instance"] != c.instance || v.Config.DisplayNameFromDS != c.display {
			t.Errorf("frame %d: %s %v %q", i, v.Name, v.Labels, v.Config.DisplayNameFromDS)
		}
		for j, w := range c.want {
			if got := v.At(j).(float64); got != w && !(math.IsNaN(got) && math.IsNaN(w)) {
				t.Errorf("frame %d step %d: %v, want %v", i, j, got, w)
			}
		}
	}
	if empty := SLOBudget(nil, nil, "q", nil); len(empty) != 1 || empty[0].Meta.Type != data.FrameTypeTimeSeriesMulti {
		t.Errorf("no series: %d frames, want one typed empty frame", len(empty))
	}
}
