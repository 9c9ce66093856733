package plan

import (
	"fmt"
	"time"

	"github.com/seed/vllm-datasource/pkg/signals"
)

// Kinds of template variable (and of editor picker): the values they list.
const (
	VariableInstances = "instances"
	VariableModels    = "models"
)

// variableRange is how far back a variable looks when it is sent no range.
const variableRange = 24 * time.Hour

// Variables is the plan of a template variable or an editor's picker: one label-values lookup.
type Variables struct {
	Lookup signals.LabelQuery
}

// NewVariables plans the listing of instances (optionally only those serving models that match
// filter) or of models (only those on instances that match filter), from from to to; a zero
// end is now, a zero start variableRange before now.
func NewVariables(s Settings, kind, filter string, from, to, now time.Time) (Variables, error) {
	if to.IsZero() {
		to = now
	}
	if from.IsZero() {
		from = now.Add(-variableRange)
	}
	var label string
	var f signals.Filter
	switch kind {
	case VariableInstances:
		label, f = s.Metrics.Labels.Instance, signals.Filter{Model: filter}
	case VariableModels:
		label, f = s.Metrics.Labels.Model, signals.Filter{Instance: filter}
	default:
		return Variables{}, fmt.Errorf("unknown variable kind %q: use %s or %s", kind, VariableInstances, VariableModels)
	}
	q, err := signals.NewLabelQuery(s.Metrics, label, f, from, to)
	if err != nil {
		return Variables{}, err
	}
	return Variables{Lookup: q}, nil
}
