package plugin

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// exprCase is one row of testdata/expr_cases.json, the table that src/expr.test.ts reads too.
type exprCase struct {
	Name      string   `json:"name"`
	Expr      string   `json:"expr"`
	Valid     bool     `json:"valid"`
	QueryType string   `json:"queryType"`
	TraceID   string   `json:"traceId"`
	Signals   []string `json:"signals"`
	Rules     []string `json:"rules"`
}

func TestExprIsReadAsTheEditorReadsIt(t *testing.T) {
	raw, err := os.ReadFile("testdata/expr_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []exprCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	for _, c := range table.Cases {
		t.Run(c.Name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"expr": c.Expr})
			q, err := ParseQuery(body, "")
			if !c.Valid {
				if err == nil {
					t.Fatalf("read as %+v, want it rejected", q)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var traceID string
			var sigs, rules []string
			switch q := q.(type) {
			case ExplainQuery:
				traceID = q.TraceID
			case SignalsQuery:
				sigs = q.Signals
			case DiagnosisQuery:
				rules = q.Rules
			}
			if string(q.QueryType()) != c.QueryType || traceID != c.TraceID || !slices.Equal(sigs, c.Signals) && len(sigs)+len(c.Signals) > 0 ||
				!slices.Equal(rules, c.Rules) && len(rules)+len(c.Rules) > 0 {
				t.Errorf("read as %+v, want %+v", q, c)
			}
		})
	}
}
