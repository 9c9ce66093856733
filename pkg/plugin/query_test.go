package plugin

import (
	"slices"
	"strings"
	"testing"
)

func TestParseQueryReadsTheTextFormOfGrafanaLinks(t *testing.T) {
	for _, c := range []struct {
		name      string
		json      string
		queryType string
		want      Query
	}{
		{name: "explain with a trace id", json: `{"expr": "explain 4bf92f3577b34da6a3ce929d0e0e4736"}`,
			want: Query{QueryType: QueryTypeExplain, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}},
		{name: "explain with surrounding spaces", json: `{"expr": "  explain   00f067aa0ba902b7  "}`,
			want: Query{QueryType: QueryTypeExplain, TraceID: "00f067aa0ba902b7"}},
		{name: "signals separated by commas", json: `{"expr": "signals ttft_p99,kv_usage"}`,
			want: Query{QueryType: QueryTypeSignals, Signals: []string{"ttft_p99", "kv_usage"}}},
		{name: "signals separated by commas and spaces", json: `{"expr": "signals ttft_p99, kv_usage  running"}`,
			want: Query{QueryType: QueryTypeSignals, Signals: []string{"ttft_p99", "kv_usage", "running"}}},
		{name: "signals alone", json: `{"expr": "signals"}`, want: Query{QueryType: QueryTypeSignals}},
		{name: "diagnosis alone", json: `{"expr": "diagnosis"}`, want: Query{QueryType: QueryTypeDiagnosis}},
		{name: "diagnosis with rules", json: `{"expr": "diagnosis kv_cache_saturated,prefill_blocking"}`,
			want: Query{QueryType: QueryTypeDiagnosis, Rules: []string{"kv_cache_saturated", "prefill_blocking"}}},
		{name: "no query type and no expr is signals", json: `{}`, want: Query{QueryType: QueryTypeSignals}},
		{name: "empty JSON is signals", json: ``, want: Query{QueryType: QueryTypeSignals}},
		{name: "queryType in the JSON wins over expr", json: `{"queryType": "diagnosis", "expr": "explain abc"}`,
			want: Query{QueryType: QueryTypeDiagnosis}},
		{name: "the request's queryType wins over the JSON's", json: `{"queryType": "diagnosis"}`, queryType: QueryTypeSignals,
			want: Query{QueryType: QueryTypeSignals}},
		{name: "fields of the query model", json: `{"queryType": "requests", "instance": "10.0.0.1:8000", "model": "m", "anomalousOnly": true, "minTtft": 1.5, "limit": 20}`,
			want: Query{QueryType: QueryTypeRequests, Instance: "10.0.0.1:8000", Model: "m", AnomalousOnly: true, MinTTFT: 1.5, Limit: 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseQuery([]byte(c.json), c.queryType)
			if err != nil {
				t.Fatal(err)
			}
			got.Expr = ""
			if !equalQuery(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func equalQuery(a, b Query) bool {
	return a.QueryType == b.QueryType && a.Instance == b.Instance && a.Model == b.Model && a.TraceID == b.TraceID &&
		slices.Equal(a.Signals, b.Signals) && slices.Equal(a.Rules, b.Rules) &&
		a.AnomalousOnly == b.AnomalousOnly && a.MinTTFT == b.MinTTFT && a.Limit == b.Limit
}

func TestParseQueryRejectsBadFormsSayingWhatIsExpected(t *testing.T) {
	for _, c := range []struct {
		name string
		json string
		says []string
	}{
		{"explain without a trace id", `{"expr": "explain"}`, []string{"no trace id", "explain <traceId>"}},
		{"an unknown verb", `{"expr": "verdict now-7d"}`, []string{`"verdict"`, "explain, signals and diagnosis"}},
		{"PromQL pasted as expr", `{"expr": "rate(vllm:num_preemptions_total[5m])"}`, []string{`"rate"`, "explain, signals and diagnosis"}},
		{"not JSON", `{"expr": `, []string{"not valid JSON"}},
		{"a field of the wrong type", `{"signals": "ttft_p99"}`, []string{"not valid JSON", "signals"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseQuery([]byte(c.json), "")
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
