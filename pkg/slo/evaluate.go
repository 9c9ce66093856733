package slo

import (
	"math"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
)

// Fleet is the instance of a model's fleet row.
const Fleet = "fleet"

// Row is one objective's status on one key, or on a model's fleet (Key.Instance Fleet): the
// events of its instances added up.
type Row struct {
	Objective Objective
	Key       series.Key
	Status    Status
	// Lower and Upper are the bucket bounds the good events were counted at (NaN on a fleet
	// row whose instances have different layouts).
	Lower, Upper float64
}

// AttributionRow is one objective's misses on one key while a finding (or none) was active.
type AttributionRow struct {
	Objective Objective
	Key       series.Key
	Share
}

// eventsOf reads an objective's events of a key from a set: its histogram's, or for
// availability the finished requests and those without abort or error.
func eventsOf(o Objective, set *series.Set, k series.Key) (Events, bool) {
	if o.Family != "" {
		h := set.Histogram(o.Family, k)
		if h == nil {
			return Events{}, false
		}
		return FromHistogram(h, o.Threshold, set.Grid.Step), true
	}
	rate := set.Get(k, series.RequestRate)
	if rate == nil {
		return Events{}, false
	}
	good := make([]float64, len(rate.Values))
	for i, r := range rate.Values {
		bad := orZero(set.Value(k, series.AbortRatio, i)) + orZero(set.Value(k, series.ErrorRatio, i))
		good[i] = r * math.Max(0, 1-bad)
	}
	return FromCounts(rate.Values, good, set.Grid.Step), true
}

func orZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// keysOf are the keys of a set an objective applies to, sorted by instance then model.
func keysOf(o Objective, set *series.Set) []series.Key {
	all := set.Keys()
	if o.Family != "" {
		all = set.HistogramKeys(o.Family)
	}
	var out []series.Key
	for _, k := range all {
		if o.Matches(k.Model) {
			if _, ok := eventsOf(o, set, k); ok {
				out = append(out, k)
			}
		}
	}
	return out
}

// rangeFrom is the first step of a grid after a time: a step's events are those of the rate
// window ending at it, so the step at the range's start holds events from before it.
func rangeFrom(g series.Grid, from time.Time) int {
	i, ok := g.Index(from)
	if !ok {
		return 0
	}
	return i + 1
}

// keyEvents are an objective's events on one key (or a model's fleet) in two sets of events.
type keyEvents struct {
	Key            series.Key
	Recent, Window Events
}

// eventsByKey are an objective's events on each key of recent (sorted by instance then model),
// then on each model's fleet (Instance Fleet: its instances' events added up), in recent and in
// window (empty where window lacks the key).
func eventsByKey(o Objective, recent, window *series.Set) []keyEvents {
	var out []keyEvents
	byModel := map[string][]keyEvents{}
	var models []string
	for _, k := range keysOf(o, recent) {
		r, _ := eventsOf(o, recent, k)
		w, ok := eventsOf(o, window, k)
		if !ok {
			w = Events{}
		}
		out = append(out, keyEvents{k, r, w})
		if _, seen := byModel[k.Model]; !seen {
			models = append(models, k.Model)
		}
		byModel[k.Model] = append(byModel[k.Model], keyEvents{k, r, w})
	}
	for _, m := range models {
		var rs, ws []Events
		for _, p := range byModel[m] {
			rs = append(rs, p.Recent)
			if p.Window.Total != nil {
				ws = append(ws, p.Window)
			}
		}
		out = append(out, keyEvents{series.Key{Instance: Fleet, Model: m}, Sum(rs...), Sum(ws...)})
	}
	return out
}

// Statuses are the objectives' rows, each objective's keys sorted then a fleet row per model:
// recent holds the range from `from` to its grid's end and the burn-rate windows before it,
// window the objectives' windows before recent.
func Statuses(objectives []Objective, recent, window *series.Set, from time.Time) []Row {
	start := rangeFrom(recent.Grid, from)
	var out []Row
	for _, o := range objectives {
		for _, e := range eventsByKey(o, recent, window) {
			out = append(out, Row{Objective: o, Key: e.Key, Status: StatusOf(e.Recent, recent.Grid, start, e.Window, window.Grid, o), Lower: e.Recent.Lower, Upper: e.Recent.Upper})
		}
	}
	return out
}

// Attributions are the objectives' misses on each key over the range, split among the
// findings active when they happened (Attribute), in the order of Statuses' rows.
func Attributions(objectives []Objective, recent *series.Set, from time.Time, findings []diagnosis.Finding) []AttributionRow {
	start := rangeFrom(recent.Grid, from)
	var out []AttributionRow
	for _, o := range objectives {
		for _, k := range keysOf(o, recent) {
			e, _ := eventsOf(o, recent, k)
			for _, s := range Attribute(e, recent.Grid, start, recent.Grid.Len-1, k, findings) {
				out = append(out, AttributionRow{Objective: o, Key: k, Share: s})
			}
		}
	}
	return out
}

// Miss is one objective's misses attributed to a finding, and their share of all the misses of
// the finding's key over the range.
type Miss struct {
	Objective  string
	Bad, Share float64
}

// MissesOf are the misses each objective's attribution (Attributions) gave a finding, in the
// order of the rows. An instance-wide finding (no model) adds up its rows of each model, its
// share then being of the models' misses added up. None when no objective missed while it
// was active.
func MissesOf(rows []AttributionRow, f diagnosis.Finding) []Miss {
	var out []Miss
	for _, r := range rows {
		if r.Rule != f.Rule || !r.From.Equal(f.Start) || !r.To.Equal(f.End) || r.Key.Instance != f.Key.Instance ||
			(f.Key.Model != "" && r.Key.Model != f.Key.Model) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Objective == r.Objective.Name {
			prev := &out[n-1]
			all := prev.Bad/prev.Share + r.Bad/r.Share.Share
			prev.Bad += r.Bad
			prev.Share = prev.Bad / all
			continue
		}
		out = append(out, Miss{Objective: r.Objective.Name, Bad: r.Bad, Share: r.Share.Share})
	}
	return out
}

// WorstByKey is, per instance and model, the row of the objective with the least error budget
// left (the lower bound of its interval; then the lowest attainment): the objective the
// instance is closest to breaking. Fleet rows are left out.
func WorstByKey(rows []Row) map[series.Key]Row {
	out := map[series.Key]Row{}
	for _, r := range rows {
		if r.Key.Instance == Fleet {
			continue
		}
		w, seen := out[r.Key]
		if !seen || lessBudget(r.Status, w.Status) {
			out[r.Key] = r
		}
	}
	return out
}

// lessBudget orders statuses by budget left, then attainment, their lower bounds; an unknown
// (NaN) bound orders last.
func lessBudget(a, b Status) bool {
	if a.Budget.Low != b.Budget.Low {
		return a.Budget.Low < b.Budget.Low || math.IsNaN(b.Budget.Low)
	}
	return a.Attainment.Low < b.Attainment.Low || (math.IsNaN(b.Attainment.Low) && !math.IsNaN(a.Attainment.Low))
}
