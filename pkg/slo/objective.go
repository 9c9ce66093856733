package slo

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Indicator is what an objective measures.
type Indicator string

// The indicators: four latencies (threshold in seconds) and availability.
const (
	TTFT         Indicator = "ttft"
	TPOT         Indicator = "tpot"
	ITL          Indicator = "itl"
	E2E          Indicator = "e2e"
	Availability Indicator = "availability"
)

// Indicators lists each indicator with what it measures and the histogram family it is read
// from (none for availability, which counts finished requests by their finished_reason).
var Indicators = []struct {
	Indicator Indicator
	Family    string
	Doc       string
}{
	{TTFT, vllm.TimeToFirstToken, "time to first token, seconds"},
	{TPOT, vllm.RequestTimePerToken, "a request's mean time per output token, seconds"},
	{ITL, vllm.InterTokenLatency, "the time between two output tokens, seconds"},
	{E2E, vllm.E2ELatency, "a request's end-to-end latency, seconds"},
	{Availability, "", "share of requests finished without abort or error"},
}

// NoObjectives says what to do where an objective is asked of settings that have none.
const NoObjectives = "the data source has no service-level objectives: add them to its settings (slos)"

// Spec is one objective as the settings write it (jsonData.slos); the names are a contract with
// provisioning files.
type Spec struct {
	// The objective's name, unique among the objectives.
	Name string `json:"name"`
	// What is measured.
	Indicator Indicator `json:"indicator"`
	// A latency indicator's threshold in seconds: good requests are at or under it. Not set for
	// availability.
	Threshold float64 `json:"threshold,omitempty"`
	// The share of good requests asked for, between 0 and 1 (exclusive), such as 0.99.
	Objective float64 `json:"objective"`
	// The error budget's period, such as 28d or 7d.
	Window string `json:"window"`
	// The model the objective applies to: an exact name or a regular expression matching the
	// whole name; every model when empty.
	Model string `json:"model,omitempty"`
}

// Objective is a validated objective.
type Objective struct {
	Name      string
	Indicator Indicator
	// Family is the histogram family of a latency indicator; empty for availability.
	Family string
	// Threshold is the latency in seconds a good event is at or under; 0 for availability.
	Threshold float64
	// Target is the share of good events the objective asks for, in (0, 1).
	Target float64
	// Window is the error budget's period.
	Window time.Duration
	// Model is the model filter as written, empty for every model.
	Model string
	model *regexp.Regexp
}

// Matches reports whether an objective applies to a model: every model without a filter, else
// the model equal to the filter or matched by it as a whole regular expression.
func (o Objective) Matches(modelName string) bool {
	if o.Model == "" || modelName == o.Model {
		return true
	}
	return o.model != nil && o.model.MatchString(modelName)
}

// Parse reads and validates the objectives of jsonData.slos (absent or null: none). The error
// names the objective (by its position and name) and the value to fix.
func Parse(raw json.RawMessage) ([]Objective, error) {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return nil, nil
	}
	var specs []json.RawMessage
	if err := json.Unmarshal(raw, &specs); err != nil {
		return nil, fmt.Errorf("slos is not a list of objectives such as [{\"name\": \"ttft-2s\", \"indicator\": \"ttft\", \"threshold\": 2, \"objective\": 0.99, \"window\": \"28d\"}]")
	}
	out := make([]Objective, 0, len(specs))
	names := map[string]bool{}
	for i, r := range specs {
		var sp Spec
		if err := json.Unmarshal(r, &sp); err != nil {
			return nil, fmt.Errorf("slos[%d] is not an objective {name, indicator, threshold, objective, window, model}: %v", i, err)
		}
		o, err := sp.validate()
		if err != nil {
			return nil, fmt.Errorf("slos[%d] %q: %w", i, sp.Name, err)
		}
		if names[o.Name] {
			return nil, fmt.Errorf("slos[%d] %q: the name is used by an earlier objective; give each objective its own name", i, sp.Name)
		}
		names[o.Name] = true
		out = append(out, o)
	}
	return out, nil
}

func (sp Spec) validate() (Objective, error) {
	o := Objective{Name: strings.TrimSpace(sp.Name), Indicator: sp.Indicator, Threshold: sp.Threshold, Target: sp.Objective, Model: sp.Model}
	if o.Name == "" {
		return o, fmt.Errorf("name is empty: name each objective, such as ttft-2s")
	}
	known := false
	var names []string
	for _, ind := range Indicators {
		names = append(names, string(ind.Indicator))
		if ind.Indicator == sp.Indicator {
			known, o.Family = true, ind.Family
		}
	}
	if !known {
		return o, fmt.Errorf("indicator %q is not one of %s", sp.Indicator, strings.Join(names, ", "))
	}
	if o.Family != "" && (!(sp.Threshold > 0) || math.IsInf(sp.Threshold, 1)) {
		return o, fmt.Errorf("threshold %v is not a positive number of seconds, such as 2", sp.Threshold)
	}
	if o.Family == "" && sp.Threshold != 0 {
		return o, fmt.Errorf("threshold %v does not apply to availability: leave it out", sp.Threshold)
	}
	if !(sp.Objective > 0 && sp.Objective < 1) {
		return o, fmt.Errorf("objective %v is not a fraction between 0 and 1 (exclusive), such as 0.99", sp.Objective)
	}
	w, err := model.ParseDuration(strings.TrimSpace(sp.Window))
	if err != nil || w <= 0 {
		return o, fmt.Errorf("window %q is not a positive duration such as 28d or 7d", sp.Window)
	}
	o.Window = time.Duration(w)
	if sp.Model != "" {
		re, err := regexp.Compile("^(?:" + sp.Model + ")$")
		if err != nil {
			return o, fmt.Errorf("model %q is neither a model name nor a valid regular expression: %v", sp.Model, err)
		}
		o.model = re
	}
	return o, nil
}
