package diagnosis

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseThresholdsAcceptsValidOverrides(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want Thresholds
	}{
		{"empty", ``, nil},
		{"null", `null`, nil},
		{"one override", `{"kv_cache_saturated": {"kv_usage": 0.9}}`, Thresholds{KVCacheSaturated: {"kv_usage": 0.9}}},
		{"for in seconds", `{"client_timeouts": {"for": 120, "abort_ratio": 0.1}}`, Thresholds{ClientTimeouts: {"for": 120, "abort_ratio": 0.1}}},
		{"fraction at its bounds", `{"past_the_knee": {"kv_usage": 1, "waiting_ratio": 0}}`, Thresholds{PastTheKnee: {"kv_usage": 1, "waiting_ratio": 0}}},
		{"a zero rate", `{"kv_cache_saturated": {"preemption_rate": 0}}`, Thresholds{KVCacheSaturated: {"preemption_rate": 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseThresholds([]byte(c.raw))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for id, ps := range c.want {
				for p, v := range ps {
					if got[id][p] != v {
						t.Fatalf("%s.%s = %v, want %v", id, p, got[id][p], v)
					}
				}
			}
		})
	}
}

func TestParseThresholdsRejectsWithActionableErrors(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want []string
	}{
		{"unknown rule", `{"kv_saturated": {"kv_usage": 0.9}}`, []string{`unknown rule "kv_saturated"`, `did you mean "kv_cache_saturated"`}},
		{"unknown parameter", `{"kv_cache_saturated": {"usage": 0.9}}`, []string{`thresholds.kv_cache_saturated: unknown parameter "usage"`, "kv_usage, preemption_rate, for"}},
		{"number as a string", `{"kv_cache_saturated": {"kv_usage": "0.9"}}`, []string{`thresholds.kv_cache_saturated.kv_usage: "0.9" is a string; write the number without quotes: 0.9`}},
		{"null parameter", `{"kv_cache_saturated": {"kv_usage": null}}`, []string{"kv_usage: is null"}},
		{"percent for a fraction", `{"kv_cache_saturated": {"kv_usage": 85}}`, []string{"kv_usage: 85 is out of range: it is a fraction, between 0 and 1"}},
		{"negative rate", `{"kv_cache_saturated": {"preemption_rate": -1}}`, []string{"preemption_rate: -1 is out of range: it is a rate, 0 or more"}},
		{"negative for", `{"client_timeouts": {"for": -60}}`, []string{"for: -60 is out of range: it is a duration in seconds"}},
		{"zero ratio", `{"prefill_blocking": {"ttft_ratio": 0}}`, []string{"ttft_ratio: 0 is out of range: it is a ratio, greater than 0"}},
		{"rule not an object", `{"kv_cache_saturated": 0.9}`, []string{"thresholds.kv_cache_saturated: must be an object"}},
		{"not an object", `[1, 2]`, []string{"thresholds: not a JSON object"}},
		{"critical above warning", `{"spec_decode_inefficient": {"critical_below": 0.7}}`, []string{"critical_below (0.7) must not exceed acceptance_rate (0.6)"}},
		{"every problem at once", `{"kv_cache_saturated": {"kv_usage": 2, "preemption_rate": "x"}, "nope": {}}`,
			[]string{`unknown rule "nope"`, "kv_usage: 2 is out of range", `preemption_rate: "x" is a string`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseThresholds([]byte(c.raw))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestSettingsStructGetsTheSameValidation(t *testing.T) {
	var settings struct {
		Thresholds Thresholds `json:"thresholds"`
	}
	if err := json.Unmarshal([]byte(`{"thresholds": {"kv_cache_saturated": {"kv_usage": 0.9}}}`), &settings); err != nil || settings.Thresholds[KVCacheSaturated]["kv_usage"] != 0.9 {
		t.Fatalf("valid settings: %v, %v", settings.Thresholds, err)
	}
	err := json.Unmarshal([]byte(`{"thresholds": {"kv_cache_saturated": {"kv_usage": "0.9"}}}`), &settings)
	if err == nil || !strings.Contains(err.Error(), "write the number without quotes") {
		t.Fatalf("invalid settings: %v", err)
	}
}

func TestEvaluateRejectsInvalidThresholdsAndRuleIDs(t *testing.T) {
	set := newSet(10)
	for _, opts := range []Options{
		{Thresholds: Thresholds{KVCacheSaturated: {"kv_usage": 1.5}}},
		{Rules: []string{"kv"}},
	} {
		if _, err := Evaluate(set, opts); err == nil {
			t.Errorf("Evaluate(%+v) accepted", opts)
		}
	}
}

func TestCatalogListsThresholdsInForce(t *testing.T) {
	entries, err := Catalog(Thresholds{KVCacheSaturated: {"kv_usage": 0.9, "for": 300}})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(IDs()) {
		t.Fatalf("%d entries", len(entries))
	}
	var kv CatalogEntry
	for _, e := range entries {
		if e.ID == KVCacheSaturated {
			kv = e
		}
	}
	if kv.For != "5m" || kv.Severity != Critical || !strings.Contains(kv.Condition, "KV usage > 0.9") {
		t.Fatalf("entry %+v", kv)
	}
	got := map[string]ThresholdInfo{}
	for _, th := range kv.Thresholds {
		got[th.Name] = th
	}
	if u := got["kv_usage"]; u.Value != 0.9 || u.Default != 0.85 || u.Unit != "fraction" || u.Description == "" {
		t.Fatalf("kv_usage %+v", u)
	}
	if p := got["preemption_rate"]; p.Value != 0.5 || p.Default != 0.5 || p.Unit != "1/s" {
		t.Fatalf("preemption_rate %+v", p)
	}

	raw, err := json.Marshal(kv)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "symptom", "severity", "for", "cause", "action", "evidence", "thresholds"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("catalog JSON lacks %q: %s", f, raw)
		}
	}
	th := fields["thresholds"].([]any)[0].(map[string]any)
	for _, f := range []string{"name", "value", "default", "unit", "description"} {
		if _, ok := th[f]; !ok {
			t.Errorf("threshold JSON lacks %q", f)
		}
	}
}

func TestSpecDecodeCatalogHasBothSeverities(t *testing.T) {
	entries, err := Catalog(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.ID == SpecDecodeInefficient && (len(e.Severities) != 2 || e.Severities[1] != Critical) {
			t.Fatalf("severities %v", e.Severities)
		}
	}
}
