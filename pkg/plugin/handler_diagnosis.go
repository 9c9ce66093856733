package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// Formats of a diagnosis query.
const (
	FormatFindings = "findings"
	FormatTimeline = "timeline"
	FormatAlert    = "alert"
	FormatFleet    = "fleet"
	// FormatRecommendation is the recommended values as series, for alert summaries.
	FormatRecommendation = "recommendation"
)

func handleDiagnosis(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	format := query.Format
	if format == "" {
		format = FormatFindings
	}
	if format != FormatFindings && format != FormatTimeline && format != FormatAlert && format != FormatFleet && format != FormatRecommendation {
		return badQuery(fmt.Errorf("format %q is not one of findings, timeline, alert, fleet, recommendation", format))
	}
	sel := diagnosis.Selection{HeadlineOnly: query.HeadlineOnly, Severities: query.Severities}
	if err := sel.Validate(); err != nil {
		return badQuery(err)
	}
	var extra []series.Signal
	if format == FormatFleet {
		extra = frames.FleetSignals()
	}
	diag, err := d.diagnose(ctx, q, query, query.Rules, extra)
	if err != nil {
		return errorResponse(err)
	}
	// Many viewers of one dashboard ask for the same answers from the same evaluation: each
	// is built once, and every response gets copies of its frames with their own meta.
	built := diag.answers.get(fmt.Sprintf("%s %t %v", format, query.AllRules, sel), func() data.Frames {
		switch format {
		case FormatTimeline:
			return frames.Timeline(diag.Result, query.AllRules)
		case FormatAlert:
			return frames.AlertSeries(diag.Result)
		case FormatFleet:
			return data.Frames{frames.Fleet(diag.Result, diag.Set)}
		case FormatRecommendation:
			return frames.RecommendationSeries(diag.Result)
		default:
			res := diag.Result
			res.Findings = sel.Keep(diag.Result.Findings)
			return data.Frames{frames.Findings(res)}
		}
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
	Fetch  *signals.Result
	// Executed is the plan as fetched, for the frames' executedQueryString.
	Executed string
	// answers are the frames already built from this evaluation.
	answers *answers
	// EvaluatedAt is when the evaluation ran; Shared says whether another query got it too.
	EvaluatedAt time.Time
	Shared      bool
}

// diagnose plans the evaluation of rules over a query's range (plan.NewDiagnosis: what the
// rules need, plus extra signals for the caller, from early enough for their baselines and
// pending periods), then fetches and evaluates it. The queries of one refresh share the
// evaluation: every caller's signals are fetched with the request join's, so that the requests
// table shares it too.
func (d *Datasource) diagnose(ctx context.Context, q backend.DataQuery, query Query, rules []string, extra []series.Signal) (*Diagnosis, error) {
	p, err := plan.NewDiagnosis(d.planSettings(), scopeOf(q, query), rules, extra)
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
	return &Diagnosis{Result: result, Set: res.Set, Fetch: res, Executed: p.Executed(res.Plan), answers: &answers{}, EvaluatedAt: time.Now()}, nil
}
