package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// verdictTiles is about how many rate windows each verdict window is cut into: enough that
// little is lost at the window's edges, few enough that the queries stay small.
const verdictTiles = 30

// minTilesPerWindow is the fewest rate windows a verdict window may hold: one whole tile must
// fit however the window's edges fall on the query grid.
const minTilesPerWindow = 2

// Verdict is the plan of a verdict query: the baseline and current windows, the declared
// optimisations, and a request per window whose step equals its rate window, so that the
// points tile the window (see package verdict).
type Verdict struct {
	Baseline, Current verdict.Window
	Declared          []verdict.Optimisation
	// Rule, when set, is the rule whose promise the verdict checks (Promise).
	Rule    string
	Promise series.Promise
	// Metrics are the baseline's request, then the current window's.
	Metrics [2]signals.Request
}

// NewVerdict plans a verdict query: the current window is the query's range, the baseline is
// read from baselineFrom and baselineTo (verdict.ParseBaseline), relative times against now.
func NewVerdict(s Settings, sc Scope, baselineFrom, baselineTo string, optimisations []string, now time.Time) (Verdict, error) {
	current := verdict.Window{From: sc.From, To: sc.To}
	baseline, err := verdict.ParseBaseline(baselineFrom, baselineTo, current, now)
	if err != nil {
		return Verdict{}, err
	}
	declared, err := verdict.ParseOptimisations(optimisations)
	if err != nil {
		return Verdict{}, err
	}
	p := Verdict{Baseline: baseline, Current: current, Declared: declared}
	scrape := s.Metrics.Scrape
	for i, w := range []struct {
		name string
		w    verdict.Window
	}{{"baseline", baseline}, {"current (the query's time range)", current}} {
		length := w.w.To.Sub(w.w.From)
		if min := minTilesPerWindow * signals.Window(scrape, 0); length < min {
			return Verdict{}, fmt.Errorf("the %s window lasts %s; a verdict needs at least %s per window (two rate windows of 4 scrape intervals each)", w.name, length, min)
		}
		p.Metrics[i] = signals.Request{Signals: verdict.Signals, Start: w.w.From, End: w.w.To, Step: signals.Window(scrape, length/verdictTiles),
			Instance: sc.Instance, Model: sc.Model, CacheConfig: true}
	}
	return p, nil
}

// WithRule adds the check of a rule's promise (verdict.CheckPromise) to the plan: both windows
// are fetched with the signals the promise reads. An empty rule leaves the plan as it is; an
// unknown one fails, naming the rules.
func (p Verdict) WithRule(rule string) (Verdict, error) {
	rule = strings.TrimSpace(rule)
	if rule == "" {
		return p, nil
	}
	rules, err := diagnosis.Rules([]string{rule}, nil)
	if err != nil {
		return Verdict{}, err
	}
	p.Rule, p.Promise = rule, rules[0].Promise
	for i := range p.Metrics {
		p.Metrics[i].Signals = verdict.PromiseSignals(p.Promise)
	}
	return p, nil
}

// Executed is the plan as fetched, for the frames' executedQueryString.
func (p Verdict) Executed(baseline, current *signals.Plan) string {
	return fmt.Sprintf("Baseline window %s to %s:\n%s\nCurrent window %s to %s:\n%s",
		series.Stamp(p.Baseline.From), series.Stamp(p.Baseline.To), baseline, series.Stamp(p.Current.From), series.Stamp(p.Current.To), current)
}
