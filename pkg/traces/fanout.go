package traces

import (
	"context"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// Windows splits [from, to] into n sub-windows of equal length (n ≥ 1), so that a search over
// a long range returns requests from all of it rather than only its newest ones.
func Windows(from, to time.Time, n int) [][2]time.Time {
	n = max(n, 1)
	step := to.Sub(from) / time.Duration(n)
	out := make([][2]time.Time, n)
	for i := range n {
		out[i] = [2]time.Time{from.Add(time.Duration(i) * step), from.Add(time.Duration(i+1) * step)}
	}
	out[n-1][1] = to
	return out
}

// Answer is one search of a SearchAll.
type Answer struct {
	Query    Query
	Requests []Request
	Info     SearchInfo
}

// SearchAll runs the searches, at most parallel at a time, and merges their requests: a span
// found by several searches (adjacent windows share their bound; a threshold search and a
// plain one overlap) appears once. The first error fails the whole. The answers are in the
// order of qs; the merged info adds theirs up, with their queries one per line.
func SearchAll(ctx context.Context, src Source, qs []Query, parallel int) ([]Request, SearchInfo, []Answer, error) {
	answers := make([]Answer, len(qs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	for i, q := range qs {
		answers[i].Query = q
		g.Go(func() error {
			var err error
			answers[i].Requests, answers[i].Info, err = src.Search(gctx, q)
			return err
		})
	}
	err := g.Wait()
	out, info := Merge(answers)
	if err != nil {
		return nil, info, answers, err
	}
	return out, info, answers, nil
}

// Merge merges searches' answers as SearchAll does: a span that several found appears once,
// and the info adds theirs up, with their queries one per line.
func Merge(answers []Answer) ([]Request, SearchInfo) {
	var (
		info    SearchInfo
		out     []Request
		queries []string
	)
	seen := map[[2]string]bool{}
	for _, a := range answers {
		if a.Info.Query != "" {
			queries = append(queries, a.Info.Query)
		}
		info.Traces += a.Info.Traces
		info.SpansSkipped += a.Info.SpansSkipped
		info.Truncated = info.Truncated || a.Info.Truncated
		for _, r := range a.Requests {
			k := [2]string{r.TraceID, r.SpanID}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, r)
			if len(r.Missing()) > 0 {
				info.Incomplete++
			}
		}
	}
	info.Query = strings.Join(queries, "\n")
	return out, info
}
