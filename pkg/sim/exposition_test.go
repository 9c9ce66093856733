package sim

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

// Each instance of bucket_layouts reaches Prometheus with its own TTFT buckets.
func TestExpositionShapesTheBucketsPrometheusStores(t *testing.T) {
	sc, err := Lookup("bucket_layouts")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, time.Unix(1_800_000_000, 0), 2*time.Minute, 15*time.Second, WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteOpenMetrics(&out); err != nil {
		t.Fatal(err)
	}
	le := regexp.MustCompile(regexp.QuoteMeta(vllm.TimeToFirstToken) + `_bucket\{[^}]*instance="([^"]+)"[^}]*le="([^"]+)"\}`)
	bounds := map[string][]float64{}
	for _, m := range le.FindAllStringSubmatch(out.String(), -1) {
		if m[2] == "+Inf" {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(bounds[m[1]], v) {
			bounds[m[1]] = append(bounds[m[1]], v)
		}
	}
	for instance, want := range map[string][]float64{
		"127.0.0.1:8000": ThinnedTTFTBuckets,
		FaultyInstance:   vllm.TTFTBuckets,
		"127.0.0.1:8002": OldTTFTBuckets,
		"127.0.0.1:8003": OldTTFTBuckets,
	} {
		got := bounds[instance]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: TTFT bounds %v, want %v", instance, got, want)
		}
	}
}

func TestExpositionOmitsFamilies(t *testing.T) {
	sc, _ := Lookup("healthy")
	sc.Instances = sc.Instances[:1]
	sc.Instances[0].Exposition.Omit = []string{vllm.PromptTokens}
	res, err := Run(sc, time.Unix(1_800_000_000, 0), time.Minute, 15*time.Second, WithoutSpans())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteOpenMetrics(&out); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte(vllm.PromptTokens)) || !bytes.Contains(out.Bytes(), []byte(vllm.GenerationTokens)) {
		t.Errorf("omitting %s: want it gone and the rest kept", vllm.PromptTokens)
	}
}
