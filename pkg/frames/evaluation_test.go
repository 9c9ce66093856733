package frames

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/series"
)

func TestEvaluated(t *testing.T) {
	g := series.NewGrid(reqStart, reqStart.Add(time.Hour), time.Minute)
	empty := series.NewSet(g)
	full := series.NewSet(g)
	full.Put(series.NewSeries(series.KVUsage, series.Key{Instance: "i", Model: "m"}, g.Len))
	at := reqStart.Add(time.Hour)
	two := func() data.Frames {
		first := data.NewFrame("a")
		first.Meta = &data.FrameMeta{Notices: []data.Notice{{Text: "the builder's"}}}
		return data.Frames{first, data.NewFrame("b")}
	}
	for _, c := range []struct {
		name       string
		out        data.Frames
		ev         Evaluation
		notices    []string
		shared     bool
		customKept bool
	}{
		{name: "executed on every frame, nothing else", out: two(), ev: Evaluation{Executed: "q", Set: full}, notices: []string{"the builder's"}},
		{name: "shared: marked on the first frame", out: two(), ev: Evaluation{Executed: "q", Set: full, Shared: true, EvaluatedAt: at}, notices: []string{"the builder's"}, shared: true},
		{name: "no series: the notice after the builder's", out: two(), ev: Evaluation{Executed: "q", Set: empty}, notices: []string{"the builder's", noSeries}},
		{name: "a custom meta that is not a map is kept", out: data.Frames{&data.Frame{Name: "a", Meta: &data.FrameMeta{Custom: "x"}}},
			ev: Evaluation{Executed: "q", Set: full, Shared: true, EvaluatedAt: at}, customKept: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := Evaluated(c.out, c.ev)
			for _, f := range out {
				if f.Meta.ExecutedQueryString != "q" {
					t.Errorf("frame %s: executedQueryString %q", f.Name, f.Meta.ExecutedQueryString)
				}
			}
			var texts []string
			for _, n := range out[0].Meta.Notices {
				texts = append(texts, n.Text)
			}
			if !slices.Equal(texts, c.notices) {
				t.Errorf("notices %q, want %q", texts, c.notices)
			}
			custom, _ := out[0].Meta.Custom.(map[string]any)
			if shared, _ := custom["sharedEvaluation"].(bool); shared != c.shared {
				t.Errorf("sharedEvaluation %v, want %v", shared, c.shared)
			}
			if c.shared && custom["evaluatedAt"] != at.UTC().Format(time.RFC3339Nano) {
				t.Errorf("evaluatedAt %v, want %v", custom["evaluatedAt"], at)
			}
			if c.customKept && out[0].Meta.Custom != "x" {
				t.Errorf("custom meta %v, want it kept", out[0].Meta.Custom)
			}
			for _, f := range out[1:] {
				if len(f.Meta.Notices) > 0 || f.Meta.Custom != nil {
					t.Errorf("frame %s has notices or custom meta: %+v", f.Name, f.Meta)
				}
			}
		})
	}
}

func TestNoRequest(t *testing.T) {
	fs := NoRequest()
	if len(fs) != 1 || len(fs[0].Meta.Notices) != 1 || fs[0].Meta.Notices[0].Severity != data.NoticeSeverityInfo {
		t.Fatalf("%+v, want one frame with one info notice", fs)
	}
	if f := fs[0]; f.Rows() != 1 || f.Fields[0].Name != "explanation" || !strings.Contains(f.Fields[0].At(0).(string), "click a trace id") {
		t.Errorf("fields %v, want the instruction as the explanation's one row", f.Fields)
	}
}

func TestCopiesShareFieldsNotMeta(t *testing.T) {
	original := data.NewFrame("findings", data.NewField("rule", nil, []string{"kv_cache_saturated"}))
	original.Meta = &data.FrameMeta{Notices: []data.Notice{{Text: "built"}}, Custom: map[string]any{"k": "v"}}
	copies := Copies(data.Frames{original})
	Evaluated(copies, Evaluation{Executed: "plan", Shared: true, EvaluatedAt: time.Unix(0, 0)})

	c := copies[0]
	if c.Fields[0] != original.Fields[0] {
		t.Error("the copy does not share the original's fields")
	}
	if original.Meta.ExecutedQueryString != "" || len(original.Meta.Notices) != 1 {
		t.Errorf("completing the copy changed the original's meta: %+v", original.Meta)
	}
	if _, marked := original.Meta.Custom.(map[string]any)["sharedEvaluation"]; marked {
		t.Error("the shared mark of the copy reached the original's custom meta")
	}
	if c.Meta.ExecutedQueryString != "plan" || c.Meta.Custom.(map[string]any)["sharedEvaluation"] != true {
		t.Errorf("the copy's meta is not completed: %+v", c.Meta)
	}
}
