package plugin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Query types: the queryType of a Grafana query.
const (
	QueryTypeSignals   = "signals"
	QueryTypeDiagnosis = "diagnosis"
	QueryTypeRequests  = "requests"
	QueryTypeExplain   = "explain"
	QueryTypeVerdict   = "verdict"
)

// Query is the query model that dashboards and alert rules persist (DESIGN §3): a contract,
// so fields may be added but never renamed.
type Query struct {
	QueryType string `json:"queryType"`
	Instance  string `json:"instance"`
	Model     string `json:"model"`

	Signals []string `json:"signals"`

	Format string   `json:"format"`
	Rules  []string `json:"rules"`
	// HeadlineOnly keeps each instance's headline finding only (its likely bottleneck), as the
	// dashboards' annotations ask; Severities keeps the findings of these severities (empty =
	// all), so that one annotation query per severity colours its regions.
	HeadlineOnly bool     `json:"headlineOnly"`
	Severities   []string `json:"severities"`
	// AllRules asks the timeline for every rule of every instance, quiet ones included, as a
	// program reading the states needs (the CLI); the panel's default shows what happened.
	AllRules bool `json:"allRules"`

	AnomalousOnly bool    `json:"anomalousOnly"`
	MinTTFT       float64 `json:"minTtft"`
	Limit         int     `json:"limit"`

	TraceID string `json:"traceId"`

	BaselineFrom  string   `json:"baselineFrom"`
	BaselineTo    string   `json:"baselineTo"`
	Optimisations []string `json:"optimisations"`

	// Expr is the one-line text form that Grafana's trace-to-metrics links and correlations
	// send: "explain <traceId>", "signals <name>,<name>", "diagnosis [<rule>,...]".
	Expr string `json:"expr"`
}

// ParseQuery reads a query's JSON; the query type of the request wins over the JSON's.
func ParseQuery(raw json.RawMessage, queryType string) (Query, error) {
	var q Query
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &q); err != nil {
			return Query{}, fmt.Errorf("the query is not valid JSON for this data source: %v", err)
		}
	}
	if queryType != "" {
		q.QueryType = queryType
	}
	if q.QueryType == "" && strings.TrimSpace(q.Expr) != "" {
		if err := q.parseExpr(); err != nil {
			return Query{}, err
		}
	}
	if q.QueryType == "" {
		q.QueryType = QueryTypeSignals
	}
	return q, nil
}

var exprForm = regexp.MustCompile(`^\s*(\w+)\s*(.*?)\s*$`)

func (q *Query) parseExpr() error {
	m := exprForm.FindStringSubmatch(q.Expr)
	if m == nil {
		return fmt.Errorf("expr %q is not one of: explain <traceId>; signals <name>,<name>; diagnosis [<rule>,...]", q.Expr)
	}
	// The first word is read in any case, as the editor (src/expr.ts) reads it.
	verb := strings.ToLower(m[1])
	arg := m[2]
	switch verb {
	case QueryTypeExplain:
		if arg == "" {
			return fmt.Errorf("expr %q names no trace id: write explain <traceId>", q.Expr)
		}
		q.TraceID = arg
	case QueryTypeSignals:
		q.Signals = splitList(arg)
	case QueryTypeDiagnosis:
		q.Rules = splitList(arg)
	default:
		return fmt.Errorf("expr %q starts with %q; the text form knows explain, signals and diagnosis", q.Expr, m[1])
	}
	q.QueryType = verb
	return nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
