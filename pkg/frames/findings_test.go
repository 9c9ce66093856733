package frames

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

var (
	start   = time.Date(2026, 8, 20, 10, 0, 0, 0, time.UTC)
	keySat  = series.Key{Instance: "10.0.0.1:8000", Model: "llama"}
	keyCalm = series.Key{Instance: "10.0.0.2:8000", Model: "llama"}
)

// diagnosed is 15 minutes of two instances: one whose KV cache saturates, one calm; speculative
// decoding is off, so spec_decode_inefficient does not apply.
func diagnosed(t *testing.T) diagnosis.Result {
	t.Helper()
	return kvDiagnosed(t, keySat, []series.Key{keyCalm}, map[string]vllm.CacheConfig{
		keySat.Instance: {PrefixCaching: true, PrefixCachingKnown: true, BlockSize: 16}})
}

// kvDiagnosed is 15 minutes of one instance whose KV cache saturates and of calm others, with
// speculative decoding off, diagnosed by kv_cache_saturated and spec_decode_inefficient.
func kvDiagnosed(t *testing.T, saturated series.Key, calm []series.Key, cacheConfig map[string]vllm.CacheConfig) diagnosis.Result {
	t.Helper()
	const n = 60
	set := series.NewSet(series.Grid{Start: start, Step: 15 * time.Second, Len: n})
	put := func(k series.Key, sig series.Signal, v float64) {
		s := series.NewSeries(sig, k, n)
		for i := range s.Values {
			s.Values[i] = v
		}
		set.Put(s)
	}
	put(saturated, series.KVUsage, 0.97)
	put(saturated, series.PreemptionRate, 2.3)
	for _, k := range calm {
		put(k, series.KVUsage, 0.4)
		put(k, series.PreemptionRate, 0)
	}
	set.Absent[series.SpecAcceptanceRate] = "speculative decoding is off"
	for instance, c := range cacheConfig {
		set.CacheConfig[instance] = c
	}
	res, err := diagnosis.Evaluate(set, diagnosis.Options{Rules: []string{diagnosis.KVCacheSaturated, diagnosis.SpecDecodeInefficient}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFindingsFrameHasTheDesignFields(t *testing.T) {
	res := diagnosed(t)
	frame := Findings(res, nil)
	want := []struct {
		name string
		typ  data.FieldType
	}{
		{"time", data.FieldTypeTime}, {"timeEnd", data.FieldTypeTime}, {"rule", data.FieldTypeString},
		{"severity", data.FieldTypeString}, {"title", data.FieldTypeString}, {"text", data.FieldTypeString},
		{"tags", data.FieldTypeString}, {"cause", data.FieldTypeString}, {"action", data.FieldTypeString},
		{"evidence", data.FieldTypeString}, {"confidence", data.FieldTypeString}, {"instance", data.FieldTypeString},
		{"model_name", data.FieldTypeString}, {"headline", data.FieldTypeBool}, {"secondary_to", data.FieldTypeString},
		{"recommendation", data.FieldTypeString}, {"flag", data.FieldTypeString}, {"current", data.FieldTypeNullableFloat64},
		{"current_source", data.FieldTypeString}, {"change", data.FieldTypeString}, {"recommended", data.FieldTypeNullableFloat64},
		{"slo_misses", data.FieldTypeString},
	}
	if len(frame.Fields) != len(want) {
		t.Fatalf("%d fields, want %d", len(frame.Fields), len(want))
	}
	for i, w := range want {
		if f := frame.Fields[i]; f.Name != w.name || f.Type() != w.typ {
			t.Errorf("field %d is %s %s, want %s %s", i, f.Name, f.Type(), w.name, w.typ)
		}
	}
	if rows, _ := frame.RowLen(); rows != len(res.Findings) || rows != 1 {
		t.Fatalf("%d rows for %d findings", rows, len(res.Findings))
	}
	f := res.Findings[0]
	row := map[string]any{}
	for _, field := range frame.Fields {
		row[field.Name] = field.At(0)
	}
	if row["tags"] != "kv_cache_saturated,critical,"+keySat.Instance {
		t.Errorf("tags %q: want rule, severity, instance comma-separated", row["tags"])
	}
	if row["time"] != f.Start || row["timeEnd"] != f.End || row["title"] != "KV cache saturated on instance "+keySat.Instance {
		t.Errorf("row %v", row)
	}
	if ev := row["evidence"].(string); !strings.Contains(ev, "kv_usage 0.97") || !strings.Contains(ev, "confidence ") {
		t.Errorf("evidence %q", ev)
	}
	if row["confidence"] != f.Confidence.Level || row["headline"] != true {
		t.Errorf("confidence %v headline %v", row["confidence"], row["headline"])
	}
	// Neither running requests nor prompt lengths: the column names them instead of a value.
	if rec := row["recommendation"].(string); !strings.HasPrefix(rec, "no value: ") || !strings.Contains(rec, "vllm:request_prompt_tokens") {
		t.Errorf("recommendation %q: want the missing metric named", rec)
	}
}

// The advice is a sentence and fields: the flag, its current value and where that comes from,
// the change, and the recommended value; without a value, recommended is null.
func TestFindingsFrameShowsTheRecommendedValue(t *testing.T) {
	// 4000 × 16 = 64000 tokens; 0.5 × 64000 / 24 = 1333 tokens per request; 0.9 × 64000 / 1333 = 43.
	kv := diagnosis.KVInput{Blocks: 4000, BlockSize: 16, CacheDType: "auto", Usage: 0.5, Running: 24, PromptMean: 1000, OutputMean: 600}
	lower, same := kv, kv
	lower.Current, lower.Source = diagnosis.AtLeast(60), "the most running"
	same.Current, same.Source = diagnosis.AtLeast(30), "the most running"
	f30, f43, f60 := 30.0, 43.0, 60.0
	tests := []struct {
		name                 string
		in                   diagnosis.KVInput
		sentence, change     string
		current, recommended *float64
	}{
		{"lower from the current value", lower, "lower --max-num-seqs from at least 60 to 43: ", "lower", &f60, &f43},
		{"no change: the value would not limit what ran", same, "--max-num-seqs: no change", "", &f30, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := Findings(diagnosis.Result{Findings: []diagnosis.Finding{{Rule: diagnosis.KVCacheSaturated, Key: keySat, Recommendation: diagnosis.KVFit(tt.in)}}}, nil)
			row := map[string]any{}
			for _, field := range frame.Fields {
				row[field.Name] = field.At(0)
			}
			if s := row["recommendation"].(string); !strings.HasPrefix(s, tt.sentence) {
				t.Errorf("recommendation %q, want it to start %q", s, tt.sentence)
			}
			if row["flag"] != "--max-num-seqs" || row["change"] != tt.change || row["current_source"] != "the most running" {
				t.Errorf("flag %v change %v current_source %v", row["flag"], row["change"], row["current_source"])
			}
			for _, c := range []struct {
				name string
				want *float64
			}{{"current", tt.current}, {"recommended", tt.recommended}} {
				got, _ := row[c.name].(*float64)
				if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
					t.Errorf("%s %v, want %v", c.name, got, c.want)
				}
			}
		})
	}
}

func TestFindingsFrameNoticesNameRuleAndReason(t *testing.T) {
	frame := Findings(diagnosed(t), nil)
	if frame.Meta == nil || len(frame.Meta.Notices) != 1 {
		t.Fatalf("meta %+v", frame.Meta)
	}
	n := frame.Meta.Notices[0]
	if n.Severity != data.NoticeSeverityInfo || !strings.Contains(n.Text, "spec_decode_inefficient") || !strings.Contains(n.Text, "speculative decoding is off") {
		t.Fatalf("notice %+v", n)
	}
	if _, err := json.Marshal(frame); err != nil {
		t.Fatalf("frame does not serialise: %v", err)
	}
}

func TestAlertSeriesAreLabelledTimeSeriesMultiFrames(t *testing.T) {
	res := diagnosed(t)
	frames := AlertSeries(res)
	// kv_cache_saturated has one severity, spec_decode_inefficient two; two keys.
	if len(frames) != 6 {
		t.Fatalf("%d frames, want 6", len(frames))
	}
	for _, frame := range frames {
		if frame.Meta == nil || frame.Meta.Type != data.FrameTypeTimeSeriesMulti {
			t.Fatalf("meta %+v", frame.Meta)
		}
		if schema := frame.TimeSeriesSchema(); schema.Type != data.TimeSeriesTypeWide {
			t.Fatalf("frame %s is not a wide time series", frame.Name)
		}
		v := frame.Fields[1]
		if v.Type() != data.FieldTypeFloat64 {
			t.Fatalf("value type %s", v.Type())
		}
		for _, l := range []string{"rule", "severity", "instance", "model_name"} {
			if v.Labels[l] == "" {
				t.Fatalf("value labels %v lack %s", v.Labels, l)
			}
		}
		want := 0.0
		if v.Labels["rule"] == diagnosis.KVCacheSaturated && v.Labels["instance"] == keySat.Instance {
			want = 1
		}
		if got := v.At(0).(float64); got != want {
			t.Fatalf("%v starts at %v, want %v (no `for` in alert series)", v.Labels, got, want)
		}
	}
}

func TestAlertSeriesOfNoInstanceIsOneTypedEmptyFrame(t *testing.T) {
	res, err := diagnosis.Evaluate(series.NewSet(series.Grid{Start: start, Step: time.Minute, Len: 5}), diagnosis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	frames := AlertSeries(res)
	if len(frames) != 1 || frames[0].Meta.Type != data.FrameTypeTimeSeriesMulti {
		t.Fatalf("frames %v", frames)
	}
}

func TestFindingsOfOneInstanceOnAFleetIsEmptyWithANoticeSayingToSelectOne(t *testing.T) {
	res := fleetDiagnosed(t, 3)
	if len(res.Findings) == 0 {
		t.Fatal("the saturated instance has no finding to leave out")
	}
	f := FindingsOfOneInstance(res, 3)
	if f.Rows() != 0 || len(f.Fields) != len(Findings(res, nil).Fields) {
		t.Fatalf("%d rows, %d fields; want the findings table's fields and no row", f.Rows(), len(f.Fields))
	}
	if n := f.Meta.Notices; len(n) == 0 || !strings.Contains(n[0].Text, "3 instances in range") || !strings.Contains(n[0].Text, "select one") {
		t.Errorf("notices %+v", n)
	}
}

// slo_misses says, per objective, the misses the attribution gave the finding and their share of
// its instance's; the findings of no miss, and every finding without objectives, say nothing.
func TestFindingsSayTheirSLOMisses(t *testing.T) {
	res := diagnosed(t)
	if len(res.Findings) != 1 || res.Findings[0].Key != keySat {
		t.Fatalf("findings %+v, want kv_cache_saturated on %s alone", res.Findings, keySat.Instance)
	}
	f := res.Findings[0]
	res.Findings = append(res.Findings, diagnosis.Finding{Rule: "engine_stalled", Key: keyCalm, Start: f.Start, End: f.End})
	row := func(name string, k series.Key, rule string, bad, share float64) slo.AttributionRow {
		o := slo.Objective{Name: name}
		return slo.AttributionRow{Objective: o, Key: k, Share: slo.Share{Rule: rule, From: f.Start, To: f.End, Bad: bad, Share: share}}
	}
	rows := []slo.AttributionRow{
		row("ttft-1s", keySat, f.Rule, 412.4, 0.634),
		row("ttft-1s", keySat, slo.NoFinding, 238, 0.366),
		row("availability", keySat, f.Rule, 3, 0.1),
	}
	for _, c := range []struct {
		name string
		rows []slo.AttributionRow
		want []string
	}{
		{"each objective's misses while the finding was active", rows, []string{"ttft-1s 412 (63%), availability 3 (10%)", ""}},
		{"no objectives", nil, []string{"", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			field, _ := Findings(res, c.rows).FieldByName("slo_misses")
			if field == nil {
				t.Fatal("no slo_misses field")
			}
			for i, w := range c.want {
				if got := field.At(i); got != w {
					t.Errorf("row %d: %q, want %q", i, got, w)
				}
			}
		})
	}
}
