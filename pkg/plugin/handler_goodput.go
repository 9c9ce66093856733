package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"golang.org/x/sync/errgroup"

	"github.com/seed/vllm-datasource/pkg/correlate"
	"github.com/seed/vllm-datasource/pkg/frames"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/series"
	"github.com/seed/vllm-datasource/pkg/signals"
	"github.com/seed/vllm-datasource/pkg/slo"
	"github.com/seed/vllm-datasource/pkg/traces"
)

// goodput answers the goodput format: the objectives' events over the range bound it, and,
// with a trace backend, the range's sampled request spans, searched at the same time, give each
// step's joint share exactly (slo.SampledGoodput). The spans never fail the query: without a
// trace backend, or when they cannot be read, the bounds answer alone and a notice says why.
func goodput(ctx context.Context, d *Datasource, p plan.SLO) backend.DataResponse {
	var (
		res          []*signals.Result
		merr, serr   error
		spans        []traces.Request
		info         traces.SearchInfo
		sent, capped int
		g            errgroup.Group
	)
	g.Go(func() error {
		res, merr = d.prom.FetchAll(ctx, p.Goodput())
		return nil
	})
	if d.traces != nil {
		g.Go(func() error {
			spans, info, sent, capped, serr = sampledSpans(ctx, d.traces, p.GoodputSearches())
			return nil
		})
	}
	_ = g.Wait()
	if merr != nil {
		return errorResponse(merr)
	}
	set := res[0].Set
	rows, leftOut := slo.Goodputs(p.Objectives, set, p.From)
	executed := fmt.Sprintf("Goodput from %s to %s.\n%s", series.Stamp(p.From), series.Stamp(p.To), res[0].Plan)
	notices := append([]string(nil), res[0].Notices...)
	switch {
	case d.traces == nil:
		notices = append(notices, "No trace backend is configured, so goodput is bounded from the metrics alone: with Tempo or Jaeger in the data source's settings (tracesBackend, tracesUrl), the sampled requests' spans give each step's joint share exactly (sampled_share).")
	case serr != nil:
		notices = append(notices, fmt.Sprintf("The sampled requests' spans could not be read from %s, so goodput is bounded from the metrics alone: %v", d.settings.tracesName(), serr))
	default:
		instance, _ := signals.ParseMatch("instance", p.Recent.Instance)
		samples, left := samplesOf(spans, rows, instance)
		unjudged := slo.SampledGoodput(p.Objectives, samples, rows, set)
		notices = append(notices, spanNotices(samples, unjudged, left, capped)...)
		executed += fmt.Sprintf("\n%d sampled request span(s), from %d trace search(es):\n%s", len(samples), sent, info.Query)
	}
	return backend.DataResponse{Frames: frames.SLOGoodput(rows, leftOut, executed, notices)}
}

// sampledSpans runs the goodput's span searches, searchParallel at a time, and runs each that
// stopped at its limit again in halves (its older requests were missing), while
// plan.MaxGoodputSearches lasts, so that the shares rest on every sampled request of the range
// rather than on each window's newest. It returns the requests, the searches' info, how many
// searches were sent and how many still stopped at their limit.
func sampledSpans(ctx context.Context, src traces.Source, qs []traces.Query) (reqs []traces.Request, info traces.SearchInfo, sent, capped int, err error) {
	var kept []traces.Answer
	for len(qs) > 0 {
		_, _, answers, err := traces.SearchAll(ctx, src, qs, searchParallel)
		if err != nil {
			return nil, info, sent, capped, err
		}
		sent += len(qs)
		var halves []traces.Query
		for _, a := range answers {
			if a.Info.Truncated && sent+len(halves)+2 <= plan.MaxGoodputSearches && a.Query.To.Sub(a.Query.From) > time.Second {
				for _, w := range traces.Windows(a.Query.From, a.Query.To, 2) {
					h := a.Query
					h.From, h.To = w[0], w[1]
					halves = append(halves, h)
				}
				continue
			}
			if a.Info.Truncated {
				capped++
			}
			kept = append(kept, a)
		}
		qs = halves
	}
	reqs, info = traces.Merge(kept)
	return reqs, info, sent, capped, nil
}

// samplesOf keys the spans as the goodput's series are keyed: by instance, and by the span's
// model, or else its instance's only model in the metrics (vLLM's current spans carry none).
// The spans of instances outside the query's instance filter are dropped; left counts, by why,
// those that cannot be keyed.
func samplesOf(reqs []traces.Request, rows []slo.Goodput, instance signals.Match) ([]slo.Sample, map[string]int) {
	models := map[string][]string{}
	for _, r := range rows {
		if r.Key.Instance != slo.Fleet {
			models[r.Key.Instance] = append(models[r.Key.Instance], r.Key.Model)
		}
	}
	left := map[string]int{}
	var out []slo.Sample
	for _, r := range reqs {
		if !instance.Matches(r.Instance) {
			continue
		}
		ms, ok := models[r.Instance]
		model := r.Model
		switch {
		case !ok:
			left["of instances without goodput series in the metrics (outside the model filter, or without the objectives' metrics)"]++
			continue
		case model == "" && len(ms) > 1:
			left["without a model, of instances serving several"]++
			continue
		case model == "":
			model = ms[0]
		}
		tpot := correlate.DecodePerToken(&r)
		if r.Present.Has(traces.FieldOutputTokens) && r.OutputTokens < 2 {
			// No token after the first to be slow: vLLM's time per output token does not
			// observe such a request, and it misses no objective on it.
			tpot = 0
		}
		out = append(out, slo.Sample{Key: series.Key{Instance: r.Instance, Model: model}, End: r.End,
			Request: slo.Request{TTFT: r.TTFT, TPOT: tpot, E2E: r.E2E, FinishReasons: r.FinishReason}})
	}
	return out, left
}

// spanNotices say what the sampled shares rest on and what they leave out.
func spanNotices(samples []slo.Sample, unjudged slo.Unjudged, left map[string]int, capped int) []string {
	var out []string
	if capped > 0 {
		out = append(out, fmt.Sprintf("%d span search(es) stopped at their limit of %d spans with no search left to split them (at most %d a query): the steps of those windows rest on their newest sampled requests only.", capped, traces.DefaultMaxLimit, plan.MaxGoodputSearches))
	}
	if reasons := unjudged.Reasons(); len(reasons) > 0 {
		out = append(out, "Sampled requests not judged, an objective being unknown for them, and left out of sampled_share: "+strings.Join(reasons, "; ")+".")
	}
	for _, why := range slices.Sorted(maps.Keys(left)) {
		out = append(out, fmt.Sprintf("%d span(s) %s are left out of sampled_share.", left[why], why))
	}
	reasons := false
	for _, s := range samples {
		reasons = reasons || s.Request.FinishReasons != ""
	}
	if len(samples) > 0 && !reasons {
		out = append(out, "No span carries its finish reasons (Tempo's searches do not return them): an errored request counts as served in sampled_share.")
	}
	return out
}
