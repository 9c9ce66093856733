package signals_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/vllm"
)

// layoutServer is one instance's TTFT histogram as scraped: its own bucket bounds (vLLM's, a
// relabelled subset, or another release's) and the same stream of observations for all.
type layoutServer struct {
	instance string
	bounds   []float64 // finite bounds; +Inf is added
}

// ttftObservations are one scrape interval's observations: mostly near 0.2 s, a tail near 0.9 s.
var ttftObservations = []float64{0.15, 0.18, 0.2, 0.2, 0.21, 0.22, 0.24, 0.3, 0.35, 0.9}

func (s layoutServer) openMetrics(start time.Time, scrapes int) string {
	var b strings.Builder
	for _, le := range append(append([]float64(nil), s.bounds...), math.Inf(1)) {
		for i := 0; i <= scrapes; i++ {
			var n int
			for _, o := range ttftObservations {
				if o <= le {
					n++
				}
			}
			leText := model.SampleValue(le).String()
			if math.IsInf(le, 1) {
				leText = "+Inf"
			}
			fmt.Fprintf(&b, "%s_bucket{instance=%q,job=\"layouts\",model_name=\"m\",le=%q} %d %d\n",
				vllm.TimeToFirstToken, s.instance, leText, n*i*3, start.Add(time.Duration(i)*scrapeEvery).Unix())
		}
	}
	return b.String()
}

// Instances whose buckets differ sit side by side in one Prometheus: each quantile is
// histogram_quantile's answer for that instance, and its interval is that instance's bucket.
func TestQuantilesReadEachInstancesOwnBuckets(t *testing.T) {
	servers := []layoutServer{
		{instance: "full:8000", bounds: vllm.TTFTBuckets},
		// A metric_relabel_configs drop of the buckets between 0.25 and 5 s.
		{instance: "thinned:8000", bounds: []float64{0.001, 0.01, 0.1, 0.25, 5, 10, 2560}},
		{instance: "coarse:8000", bounds: []float64{0.5, 1, 10}},
	}
	start := time.Now().Add(-time.Hour).Truncate(time.Minute)
	const scrapes = 40
	text := "# TYPE " + vllm.TimeToFirstToken + " histogram\n"
	for _, s := range servers {
		text += s.openMetrics(start, scrapes)
	}
	api := backfilledText(t, text+"# EOF\n")
	client := signals.NewClient(api, signals.DefaultLabels, scrapeEvery, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "layouts")})

	end := start.Add(scrapes * scrapeEvery)
	res, err := client.Fetch(context.Background(), signals.Request{Signals: []series.Signal{series.TTFTP50, series.TTFTP99, series.TTFTRatio},
		Start: start, End: end, Step: scrapeEvery, Histograms: []string{vllm.TimeToFirstToken}})
	require.NoError(t, err)
	assert.Len(t, res.Queries, 1, "the quantiles of one family and the family kept whole share one query of its bucket rates: %v", res.Queries)

	// The family kept whole, each instance's own buckets: per scrape, 3 × the ten observations,
	// of which 0.3, 0.35 and 0.9 lie above 0.25.
	perSecond := 3 / scrapeEvery.Seconds()
	for _, c := range []struct {
		instance   string
		above, top float64
	}{
		{"full:8000", 3 * perSecond, 1},
		{"thinned:8000", 3 * perSecond, 5},
		{"coarse:8000", 10 * perSecond, 1}, // no bound at or below 0.25: every observation
	} {
		h := res.Set.Histogram(vllm.TimeToFirstToken, series.Key{Instance: c.instance, Model: "m"})
		require.NotNil(t, h, c.instance)
		last := res.Set.Grid.Len - 1
		assert.InDelta(t, c.above, h.Above(0.25, last), 1e-9, "%s: rate above 0.25 s", c.instance)
		assert.Equal(t, c.top, h.Top(last), "%s: the highest bucket with observations", c.instance)
	}

	wantBucket := map[string]map[series.Signal][2]float64{
		"full:8000":    {series.TTFTP50: {0.1, 0.25}, series.TTFTP99: {0.75, 1}},
		"thinned:8000": {series.TTFTP50: {0.1, 0.25}, series.TTFTP99: {0.25, 5}},
		"coarse:8000":  {series.TTFTP50: {0, 0.5}, series.TTFTP99: {0.5, 1}},
	}
	for _, s := range servers {
		key := series.Key{Instance: s.instance, Model: "m"}
		for _, c := range []struct {
			sig series.Signal
			q   float64
		}{{series.TTFTP50, 0.5}, {series.TTFTP99, 0.99}} {
			got := res.Set.Get(key, c.sig)
			require.NotNil(t, got, "%s %s", s.instance, c.sig)
			expr := fmt.Sprintf(`histogram_quantile(%g, sum by (le) (rate(%s_bucket{instance=%q}[1m])))`, c.q, vllm.TimeToFirstToken, s.instance)
			v, _, _, err := api.QueryRange(context.Background(), expr, v1.Range{Start: start, End: end, Step: scrapeEvery})
			require.NoError(t, err)
			want := v.(model.Matrix)
			require.Len(t, want, 1)
			var compared int
			for _, p := range want[0].Values {
				i, ok := res.Set.Grid.Index(p.Timestamp.Time())
				require.True(t, ok)
				require.InDelta(t, float64(p.Value), got.Values[i], 1e-9, "%s %s at %s", s.instance, c.sig, p.Timestamp.Time())
				b := wantBucket[s.instance][c.sig]
				require.Equal(t, b, [2]float64{got.Lower[i], got.Upper[i]}, "%s %s bucket at %s", s.instance, c.sig, p.Timestamp.Time())
				compared++
			}
			require.NotZero(t, compared)
		}
	}
	// The thinned instance's interpolated p99/p50 is far above 2, but its own bounds do not
	// make even 1 certain: p99 is somewhere in (0.25, 5], p50 in (0.1, 0.25].
	ratio := res.Set.Get(series.Key{Instance: "thinned:8000", Model: "m"}, series.TTFTRatio)
	require.NotNil(t, ratio)
	last := len(ratio.Values) - 1
	assert.Greater(t, ratio.Values[last], 2.0)
	assert.InDelta(t, 1.0, ratio.Lower[last], 1e-12)
}
