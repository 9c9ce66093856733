package plan

import (
	"fmt"
	"strings"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// DefaultSignals answer a signals query that names none: the seed's first look.
var DefaultSignals = []series.Signal{series.TTFTP50, series.TTFTP99, series.KVUsage}

// Signals is the plan of a signals query: the signals it shows and the one request that
// fetches them over the query's range.
type Signals struct {
	Signals []series.Signal
	Metrics signals.Request
}

// NewSignals plans a signals query; no names means DefaultSignals.
func NewSignals(s Settings, sc Scope, names []string) (Signals, error) {
	wanted := DefaultSignals
	if len(names) > 0 {
		wanted = make([]series.Signal, 0, len(names))
		for _, n := range names {
			if _, ok := signals.Lookup(series.Signal(n)); !ok {
				return Signals{}, fmt.Errorf("unknown signal %q: known signals are %s", n, strings.Join(signals.Names(), ", "))
			}
			wanted = append(wanted, series.Signal(n))
		}
	}
	req := signals.Request{Signals: wanted, Start: sc.From, End: sc.To, Step: Step(s, sc), Instance: sc.Instance, Model: sc.Model}
	if _, err := req.Grid(); err != nil {
		return Signals{}, err
	}
	return Signals{Signals: wanted, Metrics: req}, nil
}

// Executed is the plan as fetched, for the frames' executedQueryString.
func (p Signals) Executed(fetched *signals.Plan) string { return fetched.String() }
