package signals

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/vllm"
)

func TestParseMatchersReturnsPromQLMatchers(t *testing.T) {
	for _, c := range []struct {
		selector string
		want     []string
	}{
		{"", nil},
		{"   ", nil},
		{`{job="vllm"}`, []string{`job="vllm"`}},
		{`job="vllm"`, []string{`job="vllm"`}},
		{`{job="vllm", namespace=~"inference-.*", pod!="x", env!~"dev|test"}`,
			[]string{`job="vllm"`, `namespace=~"inference-.*"`, `pod!="x"`, `env!~"dev|test"`}},
		{`{job='vllm'}`, []string{`job="vllm"`}},
	} {
		t.Run(c.selector, func(t *testing.T) {
			got, err := ParseMatchers(c.selector)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseMatchersRejectsWhatIsNotASelector(t *testing.T) {
	for _, c := range []struct {
		selector string
		says     string
	}{
		{`{job=}`, "not a valid PromQL selector"},
		{`{job="vllm"`, "not a valid PromQL selector"},
		{`job=~"(unclosed"`, "not a valid PromQL selector"},
		{`up{job="vllm"}`, "not a valid PromQL selector"},
		{`{__name__="vllm:num_requests_running"}`, "must not select a metric name"},
	} {
		t.Run(c.selector, func(t *testing.T) {
			_, err := ParseMatchers(c.selector)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
		})
	}
}

func TestWindowHoldsFourScrapesAndAtLeastOneStep(t *testing.T) {
	for _, c := range []struct {
		scrape, step, want time.Duration
	}{
		{15 * time.Second, 15 * time.Second, time.Minute},
		{15 * time.Second, 30 * time.Second, time.Minute},
		{15 * time.Second, time.Minute, time.Minute},
		{15 * time.Second, 5 * time.Minute, 5 * time.Minute},
		{30 * time.Second, 15 * time.Second, 2 * time.Minute},
		{time.Minute, 90 * time.Second, 4 * time.Minute},
		{15 * time.Second, 61500 * time.Millisecond, 62 * time.Second},
	} {
		if got := Window(c.scrape, c.step); got != c.want {
			t.Errorf("Window(scrape %s, step %s) = %s, want %s", c.scrape, c.step, got, c.want)
		}
	}
}

func TestBucketOfReturnsTheBucketHoldingAQuantile(t *testing.T) {
	bounds := vllm.TTFTBuckets // 0.001 ... 0.1, 0.25, 0.5, 0.75, 1, 2.5 ... 640, 2560
	inf := math.Inf(1)
	for _, c := range []struct {
		name         string
		v            float64
		lower, upper float64
	}{
		{"inside a bucket", 0.3, 0.25, 0.5},
		{"on a bound: the bucket it closes", 0.5, 0.25, 0.5},
		{"on a bound computed with rounding error", 0.1 + 0.2 + 0.2, 0.25, 0.5},
		{"just above a bound", 0.5000001, 0.5, 0.75},
		{"in the first bucket", 0.0005, 0, 0.001},
		{"on the first bound", 0.001, 0, 0.001},
		{"zero", 0, 0, 0.001},
		{"inside the last finite bucket", 1000, 640, 2560},
		// histogram_quantile answers the top finite bound when the quantile is in +Inf.
		{"on the top finite bound", 2560, 640, inf},
		{"above the top finite bound", 5000, 2560, inf},
	} {
		t.Run(c.name, func(t *testing.T) {
			lo, up := bucketOf(c.v, bounds)
			if lo != c.lower || up != c.upper {
				t.Errorf("bucketOf(%g) = (%g, %g], want (%g, %g]", c.v, lo, up, c.lower, c.upper)
			}
		})
	}
	t.Run("NaN has no bucket", func(t *testing.T) {
		if lo, up := bucketOf(math.NaN(), bounds); !math.IsNaN(lo) || !math.IsNaN(up) {
			t.Errorf("bucketOf(NaN) = (%g, %g], want NaN bounds", lo, up)
		}
	})
	t.Run("no bounds, no bucket", func(t *testing.T) {
		if lo, up := bucketOf(0.3, nil); !math.IsNaN(lo) || !math.IsNaN(up) {
			t.Errorf("bucketOf with no bounds = (%g, %g], want NaN bounds", lo, up)
		}
	})
}
