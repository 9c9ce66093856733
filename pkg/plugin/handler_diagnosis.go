package plugin

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Formats of a diagnosis query; diagnosisFormats says what each answers.
const (
	FormatFindings       DiagnosisFormat = "findings"
	FormatTimeline       DiagnosisFormat = "timeline"
	FormatAlert          DiagnosisFormat = "alert"
	FormatFleet          DiagnosisFormat = "fleet"
	FormatRecommendation DiagnosisFormat = "recommendation"
)

// diagnosisFormat is one form of a diagnosis query's answer.
type diagnosisFormat struct {
	EnumValue
	// extra are signals the format shows beside what the rules read.
	extra func() []series.Signal
	// objectives says whether the format shows the objectives' status beside the evaluation.
	objectives bool
	// build writes the format's frames from an evaluation (and, for a format with objectives,
	// their status).
	build func(diag *Diagnosis, query DiagnosisQuery, sel diagnosis.Selection, st objectivesStatus) data.Frames
}

// objectivesStatus is the objective each instance is closest to breaking (nil without
// objectives), and why it could not be read.
type objectivesStatus struct {
	worst   map[series.Key]slo.Row
	notices []string
}

// diagnosisFormats are the formats of a diagnosis query (FormatFindings when it names none): a
// new format is one entry here.
var diagnosisFormats = []diagnosisFormat{
	{EnumValue: EnumValue{Value: string(FormatFindings), Doc: "the findings table, also usable as annotations (headlineOnly, severities and oneInstance select)"},
		build: func(diag *Diagnosis, query DiagnosisQuery, sel diagnosis.Selection, _ objectivesStatus) data.Frames {
			res := diag.Result
			if n := len(diag.Result.Instances()); query.OneInstance && n > 1 {
				return data.Frames{frames.FindingsOfOneInstance(res, n)}
			}
			res.Findings = sel.Keep(diag.Result.Findings)
			return data.Frames{frames.Findings(res, diag.SLO)}
		}},
	{EnumValue: EnumValue{Value: string(FormatTimeline), Doc: "each instance's state over time, one row each; rule rows for one instance, named rules, ruleRows or allRules (every rule of every instance)"},
		build: func(diag *Diagnosis, query DiagnosisQuery, _ diagnosis.Selection, _ objectivesStatus) data.Frames {
			return frames.Timeline(diag.Result, timelineRows(query))
		}},
	{EnumValue: EnumValue{Value: string(FormatAlert), Doc: "one series per rule and instance, 1 while its condition holds, for alert rules"},
		build: func(diag *Diagnosis, _ DiagnosisQuery, _ diagnosis.Selection, _ objectivesStatus) data.Frames {
			return frames.AlertSeries(diag.Result)
		}},
	{EnumValue: EnumValue{Value: string(FormatFleet), Doc: "one line per instance and model, worst first: its headline finding or healthy; with objectives in the settings, the one it is closest to breaking, its attainment and budget left"},
		extra: frames.FleetSignals, objectives: true,
		build: func(diag *Diagnosis, _ DiagnosisQuery, _ diagnosis.Selection, st objectivesStatus) data.Frames {
			return data.Frames{frames.Fleet(diag.Result, diag.Set, st.worst, st.notices)}
		}},
	{EnumValue: EnumValue{Value: string(FormatRecommendation), Doc: "the recommended value per rule and instance while a finding holds, for alert summaries"},
		build: func(diag *Diagnosis, _ DiagnosisQuery, _ diagnosis.Selection, _ objectivesStatus) data.Frames {
			return frames.RecommendationSeries(diag.Result)
		}},
}

// timelineRows is which rule rows a timeline query asks for.
func timelineRows(q DiagnosisQuery) frames.TimelineRows {
	switch {
	case q.AllRules:
		return frames.EveryRule
	case q.RuleRows || len(q.Rules) > 0:
		return frames.EventfulRules
	}
	return frames.HeadlineRows
}

func handleDiagnosis(ctx context.Context, d *Datasource, q backend.DataQuery, query DiagnosisQuery) backend.DataResponse {
	format, ok := lookup(diagnosisFormats, cmp.Or(query.Format, FormatFindings))
	if !ok {
		return badQuery(fmt.Errorf("format %q is not one of %s", query.Format, valueList(diagnosisFormats)))
	}
	sel := diagnosis.Selection{HeadlineOnly: query.HeadlineOnly, Severities: strs(query.Severities)}
	if err := sel.Validate(); err != nil {
		return badQuery(err)
	}
	var extra []series.Signal
	if format.extra != nil {
		extra = format.extra()
	}
	var (
		diag *Diagnosis
		err  error
		st   objectivesStatus
		g    errgroup.Group
	)
	g.Go(func() error {
		diag, err = d.diagnose(ctx, q, query.Scope, query.Rules, extra)
		return nil
	})
	if format.objectives {
		g.Go(func() error {
			st = d.objectivesStatus(ctx, q, query.Scope)
			return nil
		})
	}
	_ = g.Wait()
	if err != nil {
		return errorResponse(err)
	}
	// Many viewers of one dashboard ask for the same answers from the same evaluation: each
	// is built once, and every response gets copies of its frames with their own meta.
	built := diag.answers.get(fmt.Sprintf("%s %d %t %v", format.Value, timelineRows(query), query.OneInstance, sel), func() data.Frames {
		return format.build(diag, query, sel, st)
	})
	return backend.DataResponse{Frames: frames.Evaluated(frames.Copies(built), frames.Evaluation{
		Executed: diag.Executed, Set: diag.Set, Shared: diag.Shared, EvaluatedAt: diag.EvaluatedAt})}
}

// answers holds the frames built from one evaluation, by format and selection. It is shared by
// every query of the evaluation, and lives and goes with it.
type answers struct {
	mu    sync.Mutex
	built map[string]*answer
}

type answer struct {
	once   sync.Once
	frames data.Frames
}

// get returns the frames of key, building them once however many ask at the same time. The
// frames are read-only: callers send copies (frames.Copies).
func (a *answers) get(key string, build func() data.Frames) data.Frames {
	a.mu.Lock()
	if a.built == nil {
		a.built = map[string]*answer{}
	}
	ans := a.built[key]
	if ans == nil {
		ans = &answer{}
		a.built[key] = ans
	}
	a.mu.Unlock()
	ans.once.Do(func() { ans.frames = build() })
	return ans.frames
}

// Diagnosis is the evaluated matrix over a query's range, with the signals it rests on. It may
// be shared by several queries (see evalCache): read it, never change it.
type Diagnosis struct {
	Result diagnosis.Result
	Set    *series.Set
	// Generation is the metric vocabulary the Prometheus held, which tells the trace searches
	// which span attributes can exist.
	Generation vllm.Generation
	// Executed is the plan as fetched, for the frames' executedQueryString.
	Executed string
	// SLO is the misses of the settings' objectives over the range, split among the findings
	// active when they happened: the findings' slo_misses and the slo query's attribution.
	SLO []slo.AttributionRow
	// answers are the frames already built from this evaluation.
	answers *answers
	// EvaluatedAt is when the evaluation ran; Shared says whether another query got it too.
	EvaluatedAt time.Time
	Shared      bool
}

// diagnose plans the evaluation of rules over a query's range (plan.NewDiagnosis: what the
// rules need, plus extra signals for the caller, from early enough for their baselines and
// pending periods), then fetches and evaluates it. The queries of one refresh that plan the
// same evaluation share it (diagnosePlan); a requests query never plans a diagnosis query's
// (plan.NewRequests reads past the range and adds histograms), so it evaluates on its own.
func (d *Datasource) diagnose(ctx context.Context, q backend.DataQuery, sc Scope, rules []string, extra []series.Signal) (*Diagnosis, error) {
	p, err := plan.NewDiagnosis(d.planSettings(), scopeOf(q, sc), rules, extra)
	if err != nil {
		return nil, err
	}
	return d.diagnosePlan(ctx, p)
}

// diagnosePlan fetches and evaluates a diagnosis plan, sharing the evaluation with the queries
// of the same refresh that planned the same one.
func (d *Datasource) diagnosePlan(ctx context.Context, p plan.Diagnosis) (*Diagnosis, error) {
	names := make([]string, len(p.Signals))
	for i, s := range p.Signals {
		names[i] = string(s)
	}
	// A histogram family kept whole is part of what the evaluation holds (a requests query's).
	names = append(names, p.Metrics.Histograms...)
	key := newEvalKey(p.Rules, names, p.Metrics.Instance, p.Metrics.Model, p.Step, p.From, p.To)
	diag, shared, err := d.evals.get(ctx, key, func(ctx context.Context) (*Diagnosis, error) {
		return d.evaluate(ctx, p)
	})
	if err != nil {
		return nil, err
	}
	mine := *diag
	mine.Shared = mine.Shared || shared
	return &mine, nil
}

// evaluate is one evaluation: the plan's fetch and the rules over it.
func (d *Datasource) evaluate(ctx context.Context, p plan.Diagnosis) (*Diagnosis, error) {
	res, err := d.prom.Fetch(ctx, p.Metrics)
	if err != nil {
		return nil, err
	}
	result, err := diagnosis.Evaluate(res.Set, p.Options)
	if err != nil {
		return nil, backend.PluginError(err)
	}
	return &Diagnosis{Result: result, Set: res.Set, Generation: res.Generation, Executed: p.Executed(res.Plan),
		SLO:     slo.Attributions(p.Objectives, res.Set, p.From, result.Findings),
		answers: &answers{}, EvaluatedAt: time.Now()}, nil
}

// objectivesStatus reads the settings' objectives over a query's scope and keeps the one each
// instance is closest to breaking. Without objectives it is empty; when they cannot be read
// it says why, and the format answers without them.
func (d *Datasource) objectivesStatus(ctx context.Context, q backend.DataQuery, sc Scope) objectivesStatus {
	if d.settings.SLOsErr != nil {
		return objectivesStatus{notices: []string{"The objectives of the data source settings could not be read: " + d.settings.SLOsErr.Error()}}
	}
	if len(d.settings.SLOs) == 0 {
		return objectivesStatus{}
	}
	p, err := plan.NewSLO(d.planSettings(), scopeOf(q, sc), d.settings.SLOs, nil, false)
	if err != nil {
		return objectivesStatus{notices: []string{"The objectives' status could not be planned: " + err.Error()}}
	}
	res, err := d.prom.FetchAll(ctx, p.Recent, p.Budget)
	if err != nil {
		return objectivesStatus{notices: []string{"The objectives' status could not be read: " + err.Error()}}
	}
	return objectivesStatus{worst: slo.WorstByKey(slo.Statuses(p.Objectives, res[0].Set, res[1].Set, p.From)),
		notices: append(append([]string(nil), res[0].Notices...), res[1].Notices...)}
}
