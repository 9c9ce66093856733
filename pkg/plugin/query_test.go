package plugin

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

func TestParseQueryReadsEachQueryTypesModel(t *testing.T) {
	for _, c := range []struct {
		name      string
		json      string
		queryType string
		want      Query
	}{
		{name: "explain with a trace id", json: `{"expr": "explain 4bf92f3577b34da6a3ce929d0e0e4736"}`,
			want: ExplainQuery{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}},
		{name: "explain with surrounding spaces", json: `{"expr": "  explain   00f067aa0ba902b7  "}`,
			want: ExplainQuery{TraceID: "00f067aa0ba902b7"}},
		{name: "signals separated by commas", json: `{"expr": "signals ttft_p99,kv_usage"}`,
			want: SignalsQuery{Signals: []string{"ttft_p99", "kv_usage"}}},
		{name: "signals separated by commas and spaces", json: `{"expr": "signals ttft_p99, kv_usage  running"}`,
			want: SignalsQuery{Signals: []string{"ttft_p99", "kv_usage", "running"}}},
		{name: "signals alone", json: `{"expr": "signals"}`, want: SignalsQuery{}},
		{name: "diagnosis alone", json: `{"expr": "diagnosis"}`, want: DiagnosisQuery{}},
		{name: "diagnosis with rules", json: `{"expr": "diagnosis kv_cache_saturated,prefill_blocking"}`,
			want: DiagnosisQuery{Rules: []string{"kv_cache_saturated", "prefill_blocking"}}},
		{name: "the text form keeps the scope beside it", json: `{"expr": "signals kv_usage", "instance": "a:8000"}`,
			want: SignalsQuery{Scope: Scope{Instance: "a:8000"}, Signals: []string{"kv_usage"}}},
		{name: "no query type and no expr is signals", json: `{}`, want: SignalsQuery{}},
		{name: "empty JSON is signals", json: ``, want: SignalsQuery{}},
		{name: "queryType in the JSON wins over expr", json: `{"queryType": "diagnosis", "expr": "explain abc"}`,
			want: DiagnosisQuery{}},
		{name: "the request's queryType wins over the JSON's", json: `{"queryType": "diagnosis", "signals": ["running"]}`, queryType: "signals",
			want: SignalsQuery{Signals: []string{"running"}}},
		{name: "a requests query", json: `{"queryType": "requests", "instance": "10.0.0.1:8000", "model": "m", "anomalousOnly": true, "minTtft": 1.5, "limit": 20}`,
			want: RequestsQuery{Scope: Scope{Instance: "10.0.0.1:8000", Model: "m"}, AnomalousOnly: true, MinTTFT: 1.5, Limit: 20}},
		{name: "a diagnosis query", json: `{"queryType": "diagnosis", "format": "timeline", "rules": ["past_the_knee"], "headlineOnly": true, "severities": ["critical"], "allRules": true}`,
			want: DiagnosisQuery{Format: FormatTimeline, Rules: []string{"past_the_knee"}, HeadlineOnly: true, Severities: []diagnosis.Severity{diagnosis.Critical}, AllRules: true}},
		{name: "an explain annotation", json: `{"queryType": "explain", "traceId": "abc", "format": "annotation"}`,
			want: ExplainQuery{TraceID: "abc", Format: ExplainAnnotation}},
		{name: "a verdict query", json: `{"queryType": "verdict", "baselineFrom": "now-7d", "baselineTo": "now-6d", "optimisations": ["spec_decode"]}`,
			want: VerdictQuery{BaselineFrom: "now-7d", BaselineTo: "now-6d", Optimisations: []verdict.Optimisation{verdict.SpecDecode}}},
		{name: "a verdict query checking a rule's promise", json: `{"queryType": "verdict", "baselineFrom": "now-7d", "rule": "kv_cache_saturated"}`,
			want: VerdictQuery{BaselineFrom: "now-7d", Rule: "kv_cache_saturated"}},
		{name: "an slo burn query of one severity", json: `{"queryType": "slo", "format": "burn", "slos": ["ttft-1s"], "severity": "page"}`,
			want: SLOQuery{Format: FormatSLOBurn, SLOs: []string{"ttft-1s"}, Severity: slo.Page}},
		{name: "Grafana's own fields and another query type's are left aside", json: `{"queryType": "signals", "refId": "A", "intervalMs": 15000, "traceId": "abc"}`,
			want: SignalsQuery{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseQuery([]byte(c.json), c.queryType)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestParseQueryRejectsBadFormsSayingWhatIsExpected(t *testing.T) {
	for _, c := range []struct {
		name      string
		json      string
		queryType string
		says      []string
	}{
		{"explain without a trace id", `{"expr": "explain"}`, "", []string{"no trace id", "explain <traceId>"}},
		{"an unknown verb", `{"expr": "verdict now-7d"}`, "", []string{`"verdict"`, "explain, signals and diagnosis"}},
		{"PromQL pasted as expr", `{"expr": "rate(vllm:num_preemptions_total[5m])"}`, "", []string{`"rate"`, "explain, signals and diagnosis"}},
		{"not JSON", `{"expr": `, "", []string{"not valid JSON"}},
		{"a field of the wrong type", `{"signals": "ttft_p99"}`, "", []string{"not valid JSON", "signals"}},
		{"an unknown queryType in the JSON", `{"queryType": "latency"}`, "", []string{`"latency"`, "signals, diagnosis, requests, explain, verdict"}},
		{"an unknown queryType from Grafana", `{}`, "latency", []string{`"latency"`, "signals, diagnosis"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseQuery([]byte(c.json), c.queryType)
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

// MarshalQuery writes what ParseQuery reads back, queryType first, unset fields left out.
func TestMarshalQueryWritesTheStoredForm(t *testing.T) {
	for _, c := range []struct {
		q    Query
		want string
	}{
		{DiagnosisQuery{Scope: Scope{Instance: "a"}, Format: FormatTimeline, AllRules: true},
			`{"queryType":"diagnosis","instance":"a","format":"timeline","allRules":true}`},
		{SignalsQuery{}, `{"queryType":"signals"}`},
		{ExplainQuery{TraceID: "abc"}, `{"queryType":"explain","traceId":"abc"}`},
	} {
		raw, err := MarshalQuery(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != c.want {
			t.Errorf("wrote %s, want %s", raw, c.want)
		}
		back, err := ParseQuery(raw, "")
		if err != nil || !reflect.DeepEqual(back, c.q) {
			t.Errorf("read %s back as %#v (%v)", raw, back, err)
		}
		if !json.Valid(raw) {
			t.Errorf("%s is not JSON", raw)
		}
	}
}
