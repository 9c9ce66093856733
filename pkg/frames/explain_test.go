package frames

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
)

func TestExplanationSignals(t *testing.T) {
	g := series.NewGrid(reqStart.Add(-time.Hour), reqStart.Add(time.Hour), time.Minute)
	set := series.NewSet(g)
	keys := []series.Key{{Instance: "10.0.0.1:8000", Model: "a"}, {Instance: "10.0.0.1:8000", Model: "b"}}
	for _, k := range keys {
		for _, sig := range []series.Signal{series.KVUsage, series.Waiting} {
			s := series.NewSeries(sig, k, g.Len)
			for i := range s.Values {
				s.Values[i] = float64(i)
			}
			s.Values[60] = math.NaN()
			set.Put(s)
		}
	}
	from, to := reqStart.Add(-10*time.Minute), reqStart.Add(10*time.Minute)
	f := ExplanationSignals(set, []series.Signal{series.KVUsage, series.TTFTP99, series.Waiting}, info, from, to, "q1\nq2")

	if f.Meta.Type != data.FrameTypeTimeSeriesWide || f.Meta.PreferredVisualization != data.VisTypeGraph || f.Meta.ExecutedQueryString != "q1\nq2" {
		t.Fatalf("meta %+v", f.Meta)
	}
	// time, then each wanted signal that has series, per key; TTFT p99 has none.
	want := []struct{ name, model string }{{"time", ""}, {"kv_usage", "a"}, {"kv_usage", "b"}, {"waiting", "a"}, {"waiting", "b"}}
	if len(f.Fields) != len(want) {
		t.Fatalf("%d fields, want %d", len(f.Fields), len(want))
	}
	for i, w := range want {
		if f.Fields[i].Name != w.name || f.Fields[i].Labels["model_name"] != w.model {
			t.Errorf("field %d is %s %v, want %s of model %q", i, f.Fields[i].Name, f.Fields[i].Labels, w.name, w.model)
		}
	}
	if c := f.Fields[1].Config; c.Unit != "u kv_usage" || c.DisplayNameFromDS != "10.0.0.1:8000 · a · L kv_usage" {
		t.Errorf("field config %+v", c)
	}
	// The grid's steps from 10 minutes before to 10 minutes after, both included: 21 of 121.
	if f.Rows() != 21 {
		t.Fatalf("%d rows, want the 21 steps of the window", f.Rows())
	}
	if first, _ := f.ConcreteAt(0, 0); !first.(time.Time).Equal(g.Time(50)) {
		t.Errorf("first time %v, want %v", first, g.Time(50))
	}
	if v, ok := f.ConcreteAt(1, 10); ok {
		t.Errorf("the step without a sample is %v, want null", v)
	}
	if v, _ := f.ConcreteAt(1, 11); v.(float64) != 61 {
		t.Errorf("value %v at the window's 12th step, want 61", v)
	}
}

func TestExplanationIntervalIsAnAnnotation(t *testing.T) {
	e := correlate.Explain(joined(false))
	fs := Explanation(e, nil, info, nil, nil)
	if last := fs[len(fs)-1]; last.Name != RequestIntervalFrame || last.Meta == nil || last.Meta.DataTopic != data.DataTopicAnnotations {
		t.Errorf("the answer's last frame %q, meta %+v; want the request's interval tagged as annotations", last.Name, last.Meta)
	}
	if plain := RequestInterval(e); plain.Meta != nil || plain.Rows() != 1 {
		t.Errorf("the annotation query's interval: meta %+v, %d rows; want a plain frame of one row", plain.Meta, plain.Rows())
	}
}

// With the window around the request, the explanation answers four frames: the signals between
// the stages and the interval drawn on them.
func TestExplanationAround(t *testing.T) {
	e := correlate.Explain(joined(false))
	g := series.NewGrid(reqStart.Add(-time.Hour), reqStart.Add(time.Hour), time.Minute)
	around := &Around{Set: series.NewSet(g), Signals: []series.Signal{series.TTFTP99}, From: reqStart.Add(-time.Minute), To: reqStart, Executed: "q"}
	fs := Explanation(e, nil, info, nil, around)
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	want := []string{ExplanationFrame, "stages", ExplanationDetailsFrame, ExplanationSignalsFrame, RequestIntervalFrame}
	if !slices.Equal(names, want) {
		t.Fatalf("frames %v, want %v", names, want)
	}
	if got := fs[3].Meta.ExecutedQueryString; got != "q" {
		t.Errorf("the signals' executedQueryString %q, want the plan's", got)
	}
}

// TestExplanationReadsFirst: Explore shows an explain answer's tables as they come, the first
// 20 columns of each: the explanation's first fields are the sentence, the slow stage and the
// finding that explains it, and no table is wider than Explore shows.
func TestExplanationReadsFirst(t *testing.T) {
	for _, bare := range []bool{false, true} {
		e := correlate.Explain(joined(bare))
		fs := Explanation(e, nil, info, nil, nil)
		var first []string
		for _, f := range fs[0].Fields[:3] {
			first = append(first, f.Name)
		}
		if fs[0].Name != ExplanationFrame || !slices.Equal(first, []string{"explanation", "slow_stage", "finding"}) {
			t.Errorf("frame %q starts with %v, want the explanation, the slow stage and the finding", fs[0].Name, first)
		}
		if got := fs[0].Fields[0].At(0); got != e.Sentence || e.Sentence == "" {
			t.Errorf("first field %q, want the sentence %q", got, e.Sentence)
		}
		for _, f := range fs {
			if len(f.Fields) > MaxFields {
				t.Errorf("frame %q has %d fields, want at most %d", f.Name, len(f.Fields), MaxFields)
			}
		}
	}
}

// TestExplanationJudgesObjectives: the explanation says which objectives the request met and
// missed, in the settings' order, and nothing when none apply.
func TestExplanationJudgesObjectives(t *testing.T) {
	objectives, err := slo.Parse(json.RawMessage(`[
		{"name": "ttft-1s", "indicator": "ttft", "threshold": 1, "objective": 0.99, "window": "28d"},
		{"name": "up", "indicator": "availability", "objective": 0.999, "window": "28d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	e := correlate.Explain(joined(false))
	cases := []struct {
		name   string
		judged []slo.Judgement
		want   string
	}{
		{"no objectives", nil, ""},
		{"a slow first token", slo.Judge(objectives, slo.Request{TTFT: 1.5, FinishReasons: "stop"}),
			"ttft-1s missed (1.5 s > 1 s); up met"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := Explanation(e, c.judged, info, nil, nil)
			if got := cell(t, fs[0], "objectives", 0); got != c.want {
				t.Errorf("objectives %q, want %q", got, c.want)
			}
		})
	}
}
