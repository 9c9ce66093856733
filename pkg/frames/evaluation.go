package frames

import (
	"maps"
	"slices"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/series"
)

// Evaluation is what a diagnosis answer says about the evaluation it rests on.
type Evaluation struct {
	// Executed is the plan as fetched, every frame's executedQueryString.
	Executed string
	// Set is the fetched signals: when it holds no series, the first frame says so.
	Set *series.Set
	// Shared says whether other queries got the same evaluation, made at EvaluatedAt.
	Shared      bool
	EvaluatedAt time.Time
}

// noSeries is the notice of a diagnosis over no vLLM series: empty frames would otherwise read
// as a healthy fleet.
const noSeries = "No vLLM series in this range for the selected instances and models: nothing to diagnose."

// Evaluated completes the frames of a diagnosis format (Findings, Timeline, AlertSeries,
// Fleet, RecommendationSeries) with what they share: each frame's executedQueryString, and on
// the first the shared-evaluation mark and the notice of no series.
func Evaluated(out data.Frames, ev Evaluation) data.Frames {
	for _, f := range out {
		if f.Meta == nil {
			f.Meta = &data.FrameMeta{}
		}
		f.Meta.ExecutedQueryString = ev.Executed
	}
	if len(out) == 0 {
		return out
	}
	first := out[0].Meta
	if ev.Shared {
		markShared(first, ev.EvaluatedAt)
	}
	if ev.Set == nil || len(ev.Set.Keys()) == 0 {
		first.Notices = append(first.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: noSeries})
	}
	return out
}

// Copies are new frames over the same fields, each with its own meta, so that frames built once
// can be completed (Evaluated) and sent per query: a frame's fields are only read when the
// answer is encoded.
func Copies(fs data.Frames) data.Frames {
	out := make(data.Frames, len(fs))
	for i, f := range fs {
		c := *f
		if f.Meta != nil {
			m := *f.Meta
			m.Notices = slices.Clone(f.Meta.Notices)
			if custom, ok := f.Meta.Custom.(map[string]any); ok {
				m.Custom = maps.Clone(custom)
			}
			c.Meta = &m
		}
		out[i] = &c
	}
	return out
}

// markShared says in a frame's meta that its evaluation was shared with other queries, and
// when it was made: custom meta a panel's inspector shows, read by the tests of the sharing.
// A custom value that is not a map is left alone.
func markShared(meta *data.FrameMeta, at time.Time) {
	custom, _ := meta.Custom.(map[string]any)
	if custom == nil {
		if meta.Custom != nil {
			return
		}
		custom = map[string]any{}
	}
	custom["sharedEvaluation"] = true
	custom["evaluatedAt"] = at.UTC().Format(time.RFC3339Nano)
	meta.Custom = custom
}
