package frames

import (
	"math"
	"sort"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// FleetNumber is one of the fleet table's backing numbers: a signal reduced over the range to
// its worst value (the largest, or the smallest where less is worse).
type FleetNumber struct {
	Signal series.Signal
	Field  string
	Label  string
	Unit   string
	// Lowest means less is worse (hit rate, acceptance): the number is the range's minimum.
	Lowest bool
}

// FleetNumbers are the numbers behind a fleet line: the signals the matrix's rules read most.
var FleetNumbers = []FleetNumber{
	{Signal: series.TTFTP99, Field: "ttft_p99", Label: "TTFT p99 (max)", Unit: "s"},
	{Signal: series.KVUsage, Field: "kv_usage", Label: "KV usage (max)", Unit: "percentunit"},
	{Signal: series.Waiting, Field: "waiting", Label: "Waiting (max)", Unit: "short"},
	{Signal: series.PrefixCacheHitRate, Field: "prefix_cache_hit_rate", Label: "Hit rate (min)", Unit: "percentunit", Lowest: true},
	{Signal: series.SpecAcceptanceRate, Field: "spec_acceptance_rate", Label: "Acceptance (min)", Unit: "percentunit", Lowest: true},
}

// FleetSignals are the signals the fleet format needs besides the rules'.
func FleetSignals() []series.Signal {
	out := make([]series.Signal, len(FleetNumbers))
	for i, n := range FleetNumbers {
		out[i] = n.Signal
	}
	return out
}

// Healthy is the fleet table's finding text of an instance without one.
const Healthy = "healthy"

// Fleet is the `fleet` format: one row per instance and model answering "which instance, and
// why" — its headline finding (title, rule, severity, since when, still active) or "healthy"
// with severity ok, and the FleetNumbers over the evaluated range; worst first (critical,
// warning, info, ok; active before ended; then by instance). The severity field carries value
// mappings with the severity colours. Absent numbers are null. With objectives (worst, by key:
// slo.WorstByKey; nil without), the objective each instance is closest to breaking follows,
// with the lower bounds of its attainment over the range and of its budget left. The notices
// of the evaluation, and sloNotices, go on the frame.
func Fleet(res diagnosis.Result, set *series.Set, worst map[series.Key]slo.Row, sloNotices []string) *data.Frame {
	headline := map[series.Key]*diagnosis.Finding{}
	for i := range res.Findings {
		if f := &res.Findings[i]; f.Headline {
			headline[f.Key] = f
		}
	}
	type line struct {
		key     series.Key
		f       *diagnosis.Finding
		numbers []*float64
	}
	from := 0
	if i, ok := set.Grid.Index(res.Grid.Start); ok {
		from = i
	}
	lines := make([]line, 0, len(res.Timelines))
	for _, tl := range res.Timelines {
		l := line{key: tl.Key, f: headline[tl.Key]}
		for _, n := range FleetNumbers {
			l.numbers = append(l.numbers, worstOver(set.Get(tl.Key, n.Signal), from, n.Lowest))
		}
		lines = append(lines, l)
	}
	rank := func(l line) (int, bool) {
		if l.f == nil {
			return -1, false
		}
		return severityRank(string(l.f.Severity)), l.f.Active
	}
	sort.SliceStable(lines, func(i, j int) bool {
		ri, ai := rank(lines[i])
		rj, aj := rank(lines[j])
		switch {
		case ri != rj:
			return ri > rj
		case ai != aj:
			return ai
		case lines[i].key.Instance != lines[j].key.Instance:
			return lines[i].key.Instance < lines[j].key.Instance
		}
		return lines[i].key.Model < lines[j].key.Model
	})

	n := len(lines)
	var (
		instance, model, severity = make([]string, n), make([]string, n), make([]string, n)
		finding, rule, action     = make([]string, n), make([]string, n), make([]string, n)
		since                     = make([]*time.Time, n)
		active                    = make([]bool, n)
		numbers                   = make([][]*float64, len(FleetNumbers))
	)
	for k := range numbers {
		numbers[k] = make([]*float64, n)
	}
	for i, l := range lines {
		instance[i], model[i] = l.key.Instance, l.key.Model
		severity[i], finding[i] = "ok", Healthy
		if f := l.f; f != nil {
			severity[i], finding[i], rule[i], action[i], active[i] = string(f.Severity), f.Title, f.Rule, f.Action, f.Active
			start := f.Start
			since[i] = &start
		}
		for k := range FleetNumbers {
			numbers[k][i] = l.numbers[k]
		}
	}
	sev := data.NewField("severity", nil, severity)
	sev.Config = &data.FieldConfig{DisplayName: "Severity", Mappings: severityMappings()}
	frame := data.NewFrame("fleet",
		data.NewField("instance", nil, instance),
		data.NewField("model_name", nil, model),
		sev,
		data.NewField("finding", nil, finding),
		data.NewField("rule", nil, rule),
		data.NewField("since", nil, since),
		data.NewField("active", nil, active),
	)
	for k, num := range FleetNumbers {
		f := data.NewField(num.Field, nil, numbers[k])
		f.Config = &data.FieldConfig{DisplayName: num.Label, Unit: num.Unit}
		frame.Fields = append(frame.Fields, f)
	}
	if worst != nil {
		keys := make([]series.Key, n)
		for i, l := range lines {
			keys[i] = l.key
		}
		frame.Fields = append(frame.Fields, worstObjective(keys, worst)...)
	}
	frame.Fields = append(frame.Fields, data.NewField("action", nil, action))
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, Notices: append(notices(res.Notices, nil, ""), warnings(sloNotices)...)}
	return frame
}

// worstObjective are the fleet table's objective columns, row by row: the objective each key is
// closest to breaking, its attainment and its budget left (lower bounds; null without one).
func worstObjective(keys []series.Key, worst map[series.Key]slo.Row) []*data.Field {
	name := make([]string, len(keys))
	attainment, budget := make([]*float64, len(keys)), make([]*float64, len(keys))
	for i, k := range keys {
		if r, ok := worst[k]; ok {
			name[i] = r.Objective.Name
			attainment[i], budget[i] = optFloat(r.Status.Attainment.Low), optFloat(r.Status.Budget.Low)
		}
	}
	fields := []*data.Field{data.NewField("slo", nil, name), data.NewField("slo_attainment", nil, attainment), data.NewField("slo_budget_left", nil, budget)}
	fields[0].Config = &data.FieldConfig{DisplayName: "Worst objective"}
	fields[1].Config = &data.FieldConfig{DisplayName: "Attainment (at least)", Unit: "percentunit"}
	fields[2].Config = &data.FieldConfig{DisplayName: "Budget left (at least)", Unit: "percentunit"}
	return fields
}

func severityMappings() data.ValueMappings {
	m := data.ValueMapper{}
	for i, s := range []string{string(diagnosis.Critical), string(diagnosis.Warning), string(diagnosis.Info), "ok"} {
		m[s] = data.ValueMappingResult{Text: s, Color: SeverityColors[s], Index: i}
	}
	return data.ValueMappings{m}
}

// worstOver is a series' largest (or, with lowest, smallest) finite value from step from on;
// nil when it has none.
func worstOver(s *series.Series, from int, lowest bool) *float64 {
	if s == nil {
		return nil
	}
	var out *float64
	for i := from; i < len(s.Values); i++ {
		v := s.Values[i]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if out == nil || (lowest && v < *out) || (!lowest && v > *out) {
			out = &v
		}
	}
	return out
}
