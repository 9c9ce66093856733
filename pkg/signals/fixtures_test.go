package signals_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// capture is one real vLLM /metrics capture (testdata/vllm-metrics/SOURCES.md) and what the
// plugin must make of it.
type capture struct {
	file       string
	generation vllm.Generation
	model      string
	present    []series.Signal
	absent     []series.Signal
	// idle are signals this Prometheus serves that have no value in the capture.
	idle []series.Signal
}

var captures = []capture{
	{file: "01-v0-0.5-datadog-opt125m.txt", generation: vllm.GenerationV0, model: "facebook/opt-125m",
		present: []series.Signal{series.KVUsage, series.Running, series.Waiting, series.TTFTP99, series.ITLP99, series.TPOTMean, series.E2EP99, series.PreemptionRate, series.RequestRate, series.AbortRatio, series.PromptTPS, series.RequestCount},
		// Its time_per_output_token_seconds is inter-token latency: no per-request TPOT quantile.
		absent: []series.Signal{series.TPOTP99, series.QueueTimeMean, series.PrefillTimeMean, series.DecodeTimeMean, series.PrefixCacheHitRate, series.SpecAcceptanceRate, series.WaitingCapacity}},
	{file: "02-v0-0.7-aibrix-docs-qwen25coder-fragment.txt", generation: vllm.GenerationV0, model: "Qwen/Qwen2.5-Coder-1.5B-Instruct",
		present: []series.Signal{series.KVUsage, series.Running, series.Waiting, series.PreemptionRate},
		absent:  []series.Signal{series.TTFTP99, series.RequestCount, series.QueueTimeMean, series.SpecAcceptanceRate},
		// Its hit-rate gauge reads -1 (no lookup yet) and its prompt counter stands still.
		idle: []series.Signal{series.PrefixCacheHitRate}},
	{file: "03-v1-0.10-ngc2509-qwen3-4b.txt", generation: vllm.GenerationV1, model: "Qwen/Qwen3-4B-Instruct-2507-FP8",
		present: []series.Signal{series.KVUsage, series.PrefixCacheHitRate, series.TTFTP50, series.TTFTRatio, series.ITLP99, series.QueueTimeMean, series.PrefillTimeMean, series.DecodeTimeMean, series.WaitingRatio},
		absent:  []series.Signal{series.SpecAcceptanceRate, series.WaitingCapacity}},
	{file: "04-v1-0.11-hwrouter-qwen15-05b-chat.txt", generation: vllm.GenerationV1, model: "Qwen/Qwen1.5-0.5B-Chat",
		present: []series.Signal{series.KVUsage, series.PrefixCacheHitRate, series.ITLP99, series.TPOTP99, series.QueueTimeMean},
		absent:  []series.Signal{series.SpecAcceptanceLength, series.WaitingCapacity}},
	{file: "05-v1-0.11-hwrouter-tinyllama.txt", generation: vllm.GenerationV1, model: "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
		present: []series.Signal{series.KVUsage, series.DecodeTimeMean}},
	{file: "06-v1-0.11-hwrouter-qwen15-05b.txt", generation: vllm.GenerationV1, model: "Qwen/Qwen1.5-0.5B",
		present: []series.Signal{series.KVUsage, series.PrefillTimeMean}},
	{file: "07-current-vllm-ops-dashboard-qwen25-05b.txt", generation: vllm.GenerationV1, model: "Qwen/Qwen2.5-0.5B-Instruct",
		present: []series.Signal{series.KVUsage, series.PrefixCacheHitRate, series.ITLP50, series.TPOTMean, series.WaitingCapacity, series.PromptLengthMean, series.OutputLengthMean},
		absent:  []series.Signal{series.SpecAcceptanceRate}},
	{file: "08-current-cpu-arm64-qwen3-06b-trimmed.txt", generation: vllm.GenerationV1, model: "Qwen/Qwen3-0.6B",
		present: []series.Signal{series.KVUsage, series.PrefixCacheHitRate, series.WaitingCapacity, series.E2EP50}},
	{file: "09-current-0.22.1rc1-sparkrun-qwen3-17b-grep.txt", generation: vllm.GenerationV1, model: "qwen3-1.7b",
		present: []series.Signal{series.KVUsage, series.Running, series.Waiting, series.WaitingCapacity, series.PreemptionRate},
		absent:  []series.Signal{series.TTFTP99, series.PrefixCacheHitRate}},
}

// resolution lists, for every signal of the catalog, what a capture gives: "series" (it
// resolves and has a value), "idle" (it resolves but the capture has no value for it) or
// "absent: " and the reason a user is shown.
func resolution(res *signals.Result, key series.Key) string {
	var b strings.Builder
	for _, name := range signals.Names() {
		s := series.Signal(name)
		switch why, absent := res.Set.Absent[s]; {
		case absent:
			fmt.Fprintf(&b, "%s: absent: %s\n", s, why)
		case res.Set.Get(key, s) != nil:
			fmt.Fprintf(&b, "%s: series\n", s)
		default:
			fmt.Fprintf(&b, "%s: idle\n", s)
		}
	}
	return b.String()
}

func job(file string) string { return "capture-" + file[:2] }

// toOpenMetrics writes a capture as OpenMetrics, repeated at each timestamp, with the job and
// instance labels that Prometheus would add when scraping it.
func toOpenMetrics(t *testing.T, file string, times []time.Time) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "vllm-metrics", file))
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw) + "\n"))
	require.NoError(t, err, "parsing %s", file)
	out := filepath.Join(t.TempDir(), file+".om")
	f, err := os.Create(out)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	for _, mf := range families {
		points := make([]*dto.Metric, 0, len(mf.Metric)*len(times))
		for _, m := range mf.Metric {
			for _, ts := range times {
				c := proto.Clone(m).(*dto.Metric)
				c.Label = append(c.Label,
					&dto.LabelPair{Name: proto.String("job"), Value: proto.String(job(file))},
					&dto.LabelPair{Name: proto.String("instance"), Value: proto.String(file[:2] + ".example:8000")})
				c.TimestampMs = proto.Int64(ts.UnixMilli())
				points = append(points, c)
			}
		}
		mf.Metric = points
		_, err := expfmt.MetricFamilyToOpenMetrics(w, mf)
		require.NoError(t, err, "family %s", mf.GetName())
	}
	_, err = expfmt.FinalizeOpenMetrics(w)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return out
}

func TestRealCapturesAreRecognisedWithTheirSignals(t *testing.T) {
	end := time.Now().Add(-time.Minute).Truncate(15 * time.Second)
	var times []time.Time
	for i := 12; i >= 0; i-- {
		times = append(times, end.Add(-time.Duration(i)*15*time.Second))
	}
	var files []string
	for _, c := range captures {
		files = append(files, toOpenMetrics(t, c.file, times))
	}
	api := backfilled(t, files...)

	for _, c := range captures {
		t.Run(c.file, func(t *testing.T) {
			matchers, err := signals.ParseMatchers(fmt.Sprintf(`{job=%q}`, job(c.file)))
			require.NoError(t, err)
			client := signals.NewClient(api, signals.DefaultLabels, 15*time.Second, matchers)
			ctx := context.Background()

			det, err := client.Detect(ctx, times[0], end)
			require.NoError(t, err)
			assert.Equal(t, c.generation, det.Generation)

			models, err := client.Models(ctx, "", times[0], end)
			require.NoError(t, err)
			assert.Equal(t, []string{c.model}, models)
			instances, err := client.Instances(ctx, "", times[0], end)
			require.NoError(t, err)
			assert.Equal(t, []string{c.file[:2] + ".example:8000"}, instances)

			wanted := append(append(append([]series.Signal(nil), c.present...), c.absent...), c.idle...)
			res, err := client.Fetch(ctx, signals.Request{Signals: wanted, Start: times[0], End: end, Step: 15 * time.Second})
			require.NoError(t, err)
			key := series.Key{Instance: c.file[:2] + ".example:8000", Model: c.model}
			for _, s := range c.present {
				assert.NotContains(t, res.Set.Absent, s, "%s should resolve", s)
				assert.NotNil(t, res.Set.Get(key, s), "%s should have a series for %v", s, key)
			}
			for _, s := range c.absent {
				assert.Contains(t, res.Set.Absent, s, "%s should be reported absent", s)
				assert.Nil(t, res.Set.Get(key, s), "%s must not be served as zeros", s)
			}
			for _, s := range c.idle {
				assert.NotContains(t, res.Set.Absent, s, "%s should resolve", s)
				assert.Nil(t, res.Set.Get(key, s), "%s has no value to serve", s)
			}

			// Every signal of the catalog, with the reason of each absent one.
			all := make([]series.Signal, 0, len(signals.Catalog))
			for _, n := range signals.Names() {
				all = append(all, series.Signal(n))
			}
			full, err := client.Fetch(ctx, signals.Request{Signals: all, Start: times[0], End: end, Step: 15 * time.Second})
			require.NoError(t, err)
			// The committed listing is reviewed against the capture by hand: a change of what
			// resolves fails here with the diff, and is written into the listing deliberately.
			listing := filepath.Join("testdata", "resolution", c.file)
			want, err := os.ReadFile(listing)
			require.NoError(t, err)
			assert.Equal(t, string(want), resolution(full, key), "what %s resolves to differs from %s (diff above)", c.file, listing)
		})
	}
}

// TestDetectionReadsTheQueriedRange: a Prometheus holds the V0 engine's names six hours ago and
// V1's now, as after an upgrade; a query reads the names of its own range.
func TestDetectionReadsTheQueriedRange(t *testing.T) {
	now := time.Now().Add(-time.Minute).Truncate(15 * time.Second)
	at := func(end time.Time) []time.Time {
		var times []time.Time
		for i := 12; i >= 0; i-- {
			times = append(times, end.Add(-time.Duration(i)*15*time.Second))
		}
		return times
	}
	before, after := at(now.Add(-6*time.Hour)), at(now)
	api := backfilled(t, toOpenMetrics(t, captures[0].file, before), toOpenMetrics(t, captures[2].file, after))
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     vllm.Generation
	}{
		{"a range before the upgrade reads the old names", before[0], before[len(before)-1], vllm.GenerationV0},
		{"a range after the upgrade reads the new names", after[0], after[len(after)-1], vllm.GenerationV1},
		{"a range without vLLM data reads every name Prometheus holds", before[0].Add(-48 * time.Hour), before[0].Add(-47 * time.Hour), vllm.GenerationMix},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := signals.NewClient(api, signals.DefaultLabels, 15*time.Second, nil)
			res, err := client.Fetch(context.Background(), signals.Request{Signals: []series.Signal{series.KVUsage}, Start: c.from, End: c.to, Step: 15 * time.Second})
			require.NoError(t, err)
			assert.Equal(t, c.want, res.Generation)
		})
	}
}
