package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/gtime"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// verdictTiles is about how many rate windows each verdict window is cut into: enough that
// little is lost at the window's edges, few enough that the queries stay small.
const verdictTiles = 30

// minTilesPerWindow is the fewest rate windows a verdict window may hold: one whole tile must
// fit however the window's edges fall on the query grid.
const minTilesPerWindow = 2

func handleVerdict(ctx context.Context, d *Datasource, q backend.DataQuery, query Query) backend.DataResponse {
	current := verdict.Window{From: q.TimeRange.From, To: q.TimeRange.To}
	baseline, err := baselineWindow(query, current, time.Now())
	if err != nil {
		return badQuery(err)
	}
	declared, err := verdict.ParseOptimisations(query.Optimisations)
	if err != nil {
		return badQuery(err)
	}
	scrape := d.settings.ScrapeInterval
	for _, w := range []struct {
		name string
		w    verdict.Window
	}{{"baseline", baseline}, {"current (the query's time range)", current}} {
		if min := minTilesPerWindow * signals.Window(scrape, 0); w.w.To.Sub(w.w.From) < min {
			return badQuery(fmt.Errorf("the %s window lasts %s; a verdict needs at least %s per window (two rate windows of 4 scrape intervals each)", w.name, w.w.To.Sub(w.w.From), min))
		}
	}
	var results [2]*signals.Result
	windows := [2]verdict.Window{baseline, current}
	g, gctx := errgroup.WithContext(ctx)
	for i, w := range windows {
		g.Go(func() error {
			step := signals.Window(scrape, w.To.Sub(w.From)/verdictTiles)
			res, err := d.prom.Fetch(gctx, signals.Request{
				Signals: verdict.Signals, Start: w.From, End: w.To, Step: step,
				Instance: query.Instance, Model: query.Model, CacheConfig: true,
			})
			if err != nil {
				return err
			}
			if res.Window != step {
				return fmt.Errorf("internal error: the rate window %s differs from the step %s, so the windows would not tile", res.Window, step)
			}
			results[i] = res
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return errorResponse(err)
	}
	rows := verdict.Evaluate(verdict.Input{
		Baseline: results[0].Set, Current: results[1].Set,
		BaselineWindow: baseline, CurrentWindow: current,
		Declared: declared, Params: verdict.DefaultParams(),
	})
	return backend.DataResponse{Frames: frames.Verdict(rows, verdictExecuted(windows, results), verdictNotices(results))}
}

// baselineWindow reads the query's baseline (RFC 3339, epoch milliseconds, or Grafana's
// relative time such as now-7d) and checks it lies before the current window (verdict.
// CheckBaseline: windows that touch do not overlap). A baseline given by one end lasts as long
// as the current window; without either end it is the window just before the current one
// (verdict.Before), so a verdict panel answers with its defaults.
func baselineWindow(query Query, current verdict.Window, now time.Time) (verdict.Window, error) {
	const forms = "RFC 3339 such as 2026-08-01T10:00:00Z, or relative such as now-7d"
	tr := gtime.TimeRange{From: strings.TrimSpace(query.BaselineFrom), To: strings.TrimSpace(query.BaselineTo), Now: now}
	length := current.To.Sub(current.From)
	var b verdict.Window
	var err error
	switch {
	case tr.From == "" && tr.To == "":
		return verdict.Before(current), nil
	case tr.From == "":
		if b.To, err = tr.ParseTo(); err != nil {
			return verdict.Window{}, fmt.Errorf("baselineTo %q is not a time: write %s", query.BaselineTo, forms)
		}
		b.From = b.To.Add(-length)
	default:
		if b.From, err = tr.ParseFrom(); err != nil {
			return verdict.Window{}, fmt.Errorf("baselineFrom %q is not a time: write %s", query.BaselineFrom, forms)
		}
		b.To = b.From.Add(length)
		if tr.To != "" {
			if b.To, err = tr.ParseTo(); err != nil {
				return verdict.Window{}, fmt.Errorf("baselineTo %q is not a time: write %s", query.BaselineTo, forms)
			}
		}
	}
	return verdict.CheckBaseline(b, current)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func verdictExecuted(windows [2]verdict.Window, results [2]*signals.Result) string {
	var b strings.Builder
	for i, name := range []string{"baseline", "current"} {
		fmt.Fprintf(&b, "%s: %s to %s, rate window %s\n", name, stamp(windows[i].From), stamp(windows[i].To), results[i].Window)
	}
	b.WriteString(strings.Join(results[1].Queries, "\n"))
	return b.String()
}

// verdictNotices names the window of each notice, once for a notice both windows share.
func verdictNotices(results [2]*signals.Result) []string {
	in := map[string][2]bool{}
	var order []string
	for i, r := range results {
		for _, n := range r.Notices {
			seen, ok := in[n]
			if !ok {
				order = append(order, n)
			}
			seen[i] = true
			in[n] = seen
		}
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		switch in[n] {
		case [2]bool{true, true}:
			out = append(out, "both windows: "+n)
		case [2]bool{true, false}:
			out = append(out, "baseline window: "+n)
		default:
			out = append(out, "current window: "+n)
		}
	}
	return out
}
