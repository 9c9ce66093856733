package frames

import (
	"fmt"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/series"
)

// fleetSignals is KV usage and prefix cache hit rate of n instances: instance i has KV usage
// i/n and hit rate i/n, so the highest-numbered are the worst by KV usage and the lowest the
// worst by hit rate.
func fleetSignals(n int) *series.Set {
	set := series.NewSet(series.Grid{Start: start, Step: time.Minute, Len: 3})
	for i := range n {
		k := series.Key{Instance: fmt.Sprintf("vllm-%02d:8000", i), Model: "llama"}
		for _, sig := range []series.Signal{series.KVUsage, series.PrefixCacheHitRate} {
			s := series.NewSeries(sig, k, 3)
			for j := range s.Values {
				s.Values[j] = float64(i) / float64(n)
			}
			set.Put(s)
		}
	}
	return set
}

func fleetInfo(s series.Signal) SignalInfo {
	return SignalInfo{Label: string(s), LowerIsWorse: s == series.PrefixCacheHitRate}
}

func TestSignalsTopKKeepsTheWorstOfEachSignalAndTheMedian(t *testing.T) {
	wanted := []series.Signal{series.KVUsage, series.PrefixCacheHitRate}
	for _, tt := range []struct {
		n, k int
		want []string
	}{
		{10, 2, []string{
			"kv_usage vllm-09:8000", "kv_usage vllm-08:8000", "kv_usage " + MedianLabel,
			"prefix_cache_hit_rate vllm-00:8000", "prefix_cache_hit_rate vllm-01:8000", "prefix_cache_hit_rate " + MedianLabel}},
		{2, 2, []string{"kv_usage vllm-00:8000", "kv_usage vllm-01:8000",
			"prefix_cache_hit_rate vllm-00:8000", "prefix_cache_hit_rate vllm-01:8000"}},
		{3, 0, []string{"kv_usage vllm-00:8000", "kv_usage vllm-01:8000", "kv_usage vllm-02:8000",
			"prefix_cache_hit_rate vllm-00:8000", "prefix_cache_hit_rate vllm-01:8000", "prefix_cache_hit_rate vllm-02:8000"}},
	} {
		t.Run(fmt.Sprint(tt.n, " instances, top ", tt.k), func(t *testing.T) {
			fs := Signals(fleetSignals(tt.n), wanted, fleetInfo, "", nil, tt.k)
			var got []string
			for _, f := range fs {
				got = append(got, f.Name+" "+f.Fields[1].Labels["instance"])
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("frames %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSignalsMedianIsTheFleetsAtEachPoint(t *testing.T) {
	fs := Signals(fleetSignals(5), []series.Signal{series.KVUsage}, fleetInfo, "", nil, 1)
	median := fs[len(fs)-1].Fields[1]
	if median.Labels["instance"] != MedianLabel || median.Config.DisplayNameFromDS != MedianLabel+" · kv_usage" {
		t.Fatalf("last frame %v %q, want the median", median.Labels, median.Config.DisplayNameFromDS)
	}
	if v := median.At(0).(*float64); v == nil || *v != 0.4 {
		t.Errorf("median %v, want 0.4 (of 0, 0.2, 0.4, 0.6, 0.8)", v)
	}
}

func TestSignalsLabelsDifferPerSeries(t *testing.T) {
	for _, tt := range []struct {
		name string
		topK int
	}{
		{"every series", 0},
		{"the worst and the median", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := Signals(fleetSignals(3), []series.Signal{series.KVUsage, series.PrefixCacheHitRate}, fleetInfo, "", nil, tt.topK)
			seen := map[string]string{}
			for _, f := range fs {
				labels := f.Fields[1].Labels
				if labels["signal"] != f.Name {
					t.Errorf("frame %s: labels %v, want signal %q", f.Name, labels, f.Name)
				}
				if other, dup := seen[labels.String()]; dup {
					t.Errorf("frames %s and %s both labelled %v", other, f.Name, labels)
				}
				seen[labels.String()] = f.Name
			}
		})
	}
}
