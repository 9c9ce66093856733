package signals_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// A restart with new flags leaves both configurations' series in the range; the newest wins.
func TestCacheConfigIsTheNewestAfterARestartWithOtherFlags(t *testing.T) {
	end := time.Now().Add(-time.Minute).Truncate(15 * time.Second)
	start := end.Add(-20 * time.Minute)
	var b strings.Builder
	b.WriteString("# TYPE vllm:cache_config_info gauge\n")
	write := func(dtype, blocks string, from, to time.Time) {
		for ts := from; !ts.After(to); ts = ts.Add(15 * time.Second) {
			fmt.Fprintf(&b, "vllm:cache_config_info{instance=\"a:8000\",job=\"vllm\",engine=\"0\",block_size=\"16\",cache_dtype=%q,enable_prefix_caching=\"True\",num_gpu_blocks=%q} 1 %d\n", dtype, blocks, ts.Unix())
		}
	}
	write("auto", "4000", start, start.Add(9*time.Minute))
	write("fp8", "8000", start.Add(10*time.Minute), end)
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for ts := start; !ts.After(end); ts = ts.Add(15 * time.Second) {
		fmt.Fprintf(&b, "vllm:num_requests_running{instance=\"a:8000\",job=\"vllm\",engine=\"0\",model_name=\"m\"} 3 %d\n", ts.Unix())
	}
	b.WriteString("# EOF\n")
	prom := signals.NewClient(backfilledText(t, b.String()), signals.DefaultLabels, 15*time.Second, nil)

	res, err := prom.Fetch(context.Background(), signals.Request{Signals: []series.Signal{series.Running}, Start: start, End: end, Step: 15 * time.Second, CacheConfig: true})
	require.NoError(t, err)
	got := res.Set.CacheConfig["a:8000"]
	assert.Equal(t, "fp8", got.CacheDType)
	assert.Equal(t, 8000, got.NumGPUBlocks)
	assert.True(t, got.FP8())
}
