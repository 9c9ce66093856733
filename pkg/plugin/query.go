package plugin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// The query model is what dashboards and alert rules persist: a contract, so fields may be
// added but never renamed. Each query type has its own model (SignalsQuery, DiagnosisQuery, …);
// a field is declared once, in its model, with its JSON name and a comment, and `go generate
// ./pkg/plugin` writes the JSON schema (src/schema/) and the TypeScript types (src/types.gen.ts)
// from these declarations (pkg/plugin/contract). Every field is optional (omitempty): a stored
// query holds the fields it sets.

// QueryType is the queryType of a Grafana query: which query model it holds.
type QueryType string

// The query types. Each has a model and a handler, joined in queryTypes.
const (
	QueryTypeSignals   QueryType = "signals"
	QueryTypeDiagnosis QueryType = "diagnosis"
	QueryTypeRequests  QueryType = "requests"
	QueryTypeExplain   QueryType = "explain"
	QueryTypeVerdict   QueryType = "verdict"
	QueryTypeSLO       QueryType = "slo"
)

// A Query is one query type's model, as ParseQuery reads it.
type Query interface {
	// QueryType is the queryType that selects the model.
	QueryType() QueryType
}

// Scope is what every query type has: which instances and models it reads.
type Scope struct {
	// An instance label value, a regular expression or a template variable; empty means every
	// instance. An explain query reads its instance from the trace instead.
	Instance string `json:"instance,omitempty"`
	// A model name, a regular expression or a template variable; empty means every model. An
	// explain query reads its model from the trace and the metrics instead.
	Model string `json:"model,omitempty"`
}

// SignalsQuery asks for time series of named signals per instance and model, without PromQL.
type SignalsQuery struct {
	Scope
	// Signal names, such as ttft_p99 (the signals resource route lists them) or template
	// variables; empty means the default.
	Signals []string `json:"signals,omitempty"`
	// With more instances than this, each signal's series are those of the this-many instances
	// worst by that signal over the range (highest mean, or lowest for a rate where low is bad)
	// and the median of every instance as a reference: a whole number or a template variable;
	// empty or 0 means every series.
	TopK string `json:"topK,omitempty"`
}

// DiagnosisQuery asks for the findings of the symptom-to-cause matrix over the range, in one of
// its formats.
type DiagnosisQuery struct {
	Scope
	// The answer's form; empty means the default.
	Format DiagnosisFormat `json:"format,omitempty"`
	// Rule ids (the rules resource route lists them) or template variables; empty means every rule.
	Rules []string `json:"rules,omitempty"`
	// Findings format: each instance's headline finding only (its likely bottleneck), as the
	// dashboards' annotations ask.
	HeadlineOnly bool `json:"headlineOnly,omitempty"`
	// Findings format: the findings of these severities only; empty means all, so that one
	// annotation query per severity colours its regions.
	Severities []diagnosis.Severity `json:"severities,omitempty"`
	// Timeline format: every rule of every instance, quiet ones included, as a program reading
	// the states needs (vllm-diagnose); the default shows what happened.
	AllRules bool `json:"allRules,omitempty"`
	// Timeline format: below each instance's headline row, a row for each rule that was
	// pending or firing on it, however many instances the range holds; by default an instance
	// has rule rows only when it is the only one in range, or when the query names rules.
	RuleRows bool `json:"ruleRows,omitempty"`
	// Findings format: findings only when the range holds one instance, as graphs' annotations
	// ask (a fleet's findings are the table's and the timeline's, not shading over every graph);
	// with several, no finding and a notice saying to select one.
	OneInstance bool `json:"oneInstance,omitempty"`
}

// RequestsQuery asks for the vLLM request spans of the range, each joined with the metric
// state of its moment, with anomaly reasons and links.
type RequestsQuery struct {
	Scope
	// Only the requests with an anomaly reason.
	AnomalousOnly bool `json:"anomalousOnly,omitempty"`
	// Only the requests whose time to first token is at least this many seconds.
	MinTTFT float64 `json:"minTtft,omitempty"`
	// At most this many rows, and the limit of each trace search; 0 means the default.
	Limit int `json:"limit,omitempty"`
}

// ExplainQuery asks for one request explained: queue, prefill and decode, the findings active
// while it ran, the signals of its instance around it.
type ExplainQuery struct {
	Scope
	// The request's trace id (hexadecimal) or a template variable.
	TraceID string `json:"traceId,omitempty"`
	// The answer's form; empty means the explanation.
	Format ExplainFormat `json:"format,omitempty"`
}

// VerdictQuery asks whether an optimisation worked: a baseline window against the current one.
type VerdictQuery struct {
	Scope
	// Start of the baseline window: RFC 3339 or a Grafana relative time such as now-7d; empty
	// with baselineTo empty means the window of the range's length just before it.
	BaselineFrom string `json:"baselineFrom,omitempty"`
	// End of the baseline window; empty with baselineFrom set means the baseline lasts as long
	// as the range.
	BaselineTo string `json:"baselineTo,omitempty"`
	// Optimisations stated to be in use, for when the metrics cannot tell; empty means detect them.
	Optimisations []verdict.Optimisation `json:"optimisations,omitempty"`
	// A diagnosis rule id (the rules resource route lists them): the answer adds a promise
	// table, whether the signal the rule's advice promises to move (preemptions for
	// kv_cache_saturated, the hit rate for prefix_cache_miss, …) moved that way from the
	// baseline, such as the finding's window, to the range; empty means no such check.
	Rule string `json:"rule,omitempty"`
}

// SLOQuery asks how the service-level objectives of the data source's settings (slos) fare:
// their attainment, budget and burn rates, or which findings spent their budget.
type SLOQuery struct {
	Scope
	// The objectives' names to answer; empty means every objective.
	SLOs []string `json:"slos,omitempty"`
	// The form of the answer; empty means status.
	Format SLOFormat `json:"format,omitempty"`
	// Burn format: the alert series of this severity only (an alert rule's page or ticket);
	// empty means both.
	Severity slo.BurnSeverity `json:"severity,omitempty"`
}

// TextQuery is the one-line text form that Grafana's trace-to-metrics links and correlations
// send, without a queryType: "explain <traceId>", "signals <name>,<name>" or
// "diagnosis [<rule>,...]". ParseQuery reads it as the query it stands for.
type TextQuery struct {
	// The text form, such as explain 4bf92f3577b34da6a3ce929d0e0e4736.
	Expr string `json:"expr"`
}

// QueryType implements Query.
func (SignalsQuery) QueryType() QueryType { return QueryTypeSignals }

// QueryType implements Query.
func (DiagnosisQuery) QueryType() QueryType { return QueryTypeDiagnosis }

// QueryType implements Query.
func (RequestsQuery) QueryType() QueryType { return QueryTypeRequests }

// QueryType implements Query.
func (ExplainQuery) QueryType() QueryType { return QueryTypeExplain }

// QueryType implements Query.
func (VerdictQuery) QueryType() QueryType { return QueryTypeVerdict }

// QueryType implements Query.
func (SLOQuery) QueryType() QueryType { return QueryTypeSLO }

// SLOFormat is the form of an slo query's answer, one of sloFormats.
type SLOFormat string

// DiagnosisFormat is the form of a diagnosis query's answer, one of diagnosisFormats.
type DiagnosisFormat string

// ExplainFormat is the form of an explain query's answer besides the explanation, one of
// explainFormats.
type ExplainFormat string

// severities are the values of a diagnosis query's severities, most severe first.
var severities = []EnumValue{
	{Value: string(diagnosis.Critical)},
	{Value: string(diagnosis.Warning)},
	{Value: string(diagnosis.Info), Doc: "also a symptom reported as secondary to the cause that produces it"},
}

// ParseQuery reads a query's JSON as its query type's model. The query type Grafana sent wins
// over the JSON's; without either, a query whose expr holds the text form (TextQuery) is the
// query it stands for, and any other is a signals query.
func ParseQuery(raw json.RawMessage, queryType string) (Query, error) {
	var head struct {
		QueryType string `json:"queryType"`
		Expr      string `json:"expr"`
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, notQueryJSON(err)
	}
	qt := QueryType(cmp.Or(queryType, head.QueryType))
	raws := []json.RawMessage{raw}
	if qt == "" && strings.TrimSpace(head.Expr) != "" {
		text, err := parseExpr(head.Expr)
		if err != nil {
			return nil, err
		}
		fields, err := json.Marshal(text)
		if err != nil {
			return nil, err
		}
		qt, raws = text.QueryType(), append(raws, fields)
	}
	k, ok := lookup(queryTypes, cmp.Or(qt, QueryTypeSignals))
	if !ok {
		return nil, fmt.Errorf("unknown queryType %q: use one of %s", qt, valueList(queryTypes))
	}
	q, err := k.parse(raws...)
	if err != nil {
		return nil, notQueryJSON(err)
	}
	return q, nil
}

func notQueryJSON(err error) error {
	return fmt.Errorf("the query is not valid JSON for this data source: %v", err)
}

// MarshalQuery writes a query as a dashboard or an alert rule stores it: its queryType, then
// the fields it sets.
func MarshalQuery(q Query) (json.RawMessage, error) {
	fields, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(map[string]QueryType{"queryType": q.QueryType()})
	if err != nil {
		return nil, err
	}
	if string(fields) == "{}" {
		return head, nil
	}
	return append(head[:len(head)-1:len(head)-1], append([]byte{','}, fields[1:]...)...), nil
}

var exprForm = regexp.MustCompile(`^\s*(\w+)\s*(.*?)\s*$`)

// parseExpr reads the text form as the fields of the query it stands for.
func parseExpr(expr string) (Query, error) {
	m := exprForm.FindStringSubmatch(expr)
	if m == nil {
		return nil, fmt.Errorf("expr %q is not one of: explain <traceId>; signals <name>,<name>; diagnosis [<rule>,...]", expr)
	}
	// The first word is read in any case, as the editor (src/expr.ts) reads it.
	arg := m[2]
	switch QueryType(strings.ToLower(m[1])) {
	case QueryTypeExplain:
		if arg == "" {
			return nil, fmt.Errorf("expr %q names no trace id: write explain <traceId>", expr)
		}
		return ExplainQuery{TraceID: arg}, nil
	case QueryTypeSignals:
		return SignalsQuery{Signals: splitList(arg)}, nil
	case QueryTypeDiagnosis:
		return DiagnosisQuery{Rules: splitList(arg)}, nil
	}
	return nil, fmt.Errorf("expr %q starts with %q; the text form knows explain, signals and diagnosis", expr, m[1])
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// strs converts a list of a string type to strings, as the plan's functions take them.
func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
