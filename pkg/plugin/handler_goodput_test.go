package plugin

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// denseSource holds requests in memory and answers a search as the backends do: those that
// started in its range, newest first, at most its limit, truncated when the limit was reached.
type denseSource struct{ reqs []traces.Request }

func (s denseSource) Search(_ context.Context, q traces.Query) ([]traces.Request, traces.SearchInfo, error) {
	var out []traces.Request
	for _, r := range s.reqs {
		if !r.Start.Before(q.From) && !r.Start.After(q.To) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b traces.Request) int { return b.Start.Compare(a.Start) })
	info := traces.SearchInfo{Truncated: len(out) >= q.Limit}
	return out[:min(len(out), q.Limit)], info, nil
}

func (denseSource) Get(context.Context, string) (traces.Request, error) {
	return traces.Request{}, traces.ErrNotFound
}

func (denseSource) Check(context.Context) (traces.Health, error) { return traces.Health{}, nil }

// A search that stops at its limit is run again in halves, so that every request of the range
// is read, until the searches' budget is spent: then the windows still cut are counted.
func TestSampledSpansHalveSearchesAtTheirLimit(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name         string
		requests     int
		limit        int
		read, capped int
		moreSearches bool
	}{
		{"within the limit: one search each", 50, 100, 50, 0, false},
		{"over the limit: halves until each fits", 1000, 100, 1000, 0, true},
		{"over what the budget can halve: the windows left cut are counted", 20_000, 10, -1, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var src denseSource
			for i := range c.requests {
				at := t0.Add(time.Duration(i) * time.Hour / time.Duration(c.requests))
				src.reqs = append(src.reqs, traces.Request{TraceID: fmt.Sprint(i), Start: at, End: at})
			}
			qs := traces.Windows(t0, t0.Add(time.Hour), 4)
			var queries []traces.Query
			for _, w := range qs {
				queries = append(queries, traces.Query{From: w[0], To: w[1], Limit: c.limit})
			}
			reqs, _, sent, capped, err := sampledSpans(context.Background(), src, queries)
			if err != nil {
				t.Fatal(err)
			}
			if (c.read >= 0 && len(reqs) != c.read) || (c.capped == 0) != (capped == 0) || (sent > len(queries)) != c.moreSearches || sent > plan.MaxGoodputSearches {
				t.Errorf("%d requests read, %d searches of which %d still cut; want %d read, some cut %v, more searches %v, at most %d",
					len(reqs), sent, capped, c.read, c.capped > 0, c.moreSearches, plan.MaxGoodputSearches)
			}
		})
	}
}
