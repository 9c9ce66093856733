package plugin

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// maxEvaluations bounds the evaluations a data source instance keeps: a dashboard refresh needs
// one or two (its panels' steps), an alert group one per distinct range.
const maxEvaluations = 16

// evalKey identifies one evaluation within a data source instance. Grafana makes a new instance
// whenever the data source's settings change (its uid and updated time), so the thresholds and
// matchers in force are the instance's; the rest is the query's.
type evalKey struct {
	rules, signals  string
	instance, model string
	step            time.Duration
	from, to        int64 // unix ms, aligned on the step
}

func newEvalKey(rules []string, signals []string, instance, model string, step time.Duration, from, to time.Time) evalKey {
	r := slices.Clone(rules)
	slices.Sort(r)
	s := slices.Clone(signals)
	slices.Sort(s)
	return evalKey{rules: strings.Join(r, ","), signals: strings.Join(s, ","), instance: instance, model: model,
		step: step, from: from.UnixMilli(), to: to.UnixMilli()}
}

func (k evalKey) String() string {
	return strings.Join([]string{k.rules, k.signals, k.instance, k.model, k.step.String(),
		time.UnixMilli(k.from).UTC().Format(time.RFC3339Nano), time.UnixMilli(k.to).UTC().Format(time.RFC3339Nano)}, "\x00")
}

type evalEntry struct {
	diag *Diagnosis
	at   time.Time
}

// evalCache lets the queries of one dashboard refresh (headline, findings, timeline,
// annotations; a requests table only with another over the same range, its plan being its own:
// plan.NewRequests) and alert rules evaluated together share one evaluation: concurrent
// askers wait for the one in flight, later ones within the TTL reuse its answer. The answer is
// read-only to its users. Errors are never kept.
type evalCache struct {
	ttl    time.Duration
	flight singleflight.Group

	mu      sync.Mutex
	entries map[evalKey]evalEntry
	// memory is told of every entry kept and let go, to give memory back once none is left.
	memory *memoryRelease
}

func newEvalCache(ttl time.Duration) *evalCache {
	return &evalCache{ttl: ttl, entries: map[evalKey]evalEntry{}, memory: processMemory}
}

// get returns the evaluation of key, computing it once however many ask at the same time;
// shared says whether this answer was also given to another query.
func (c *evalCache) get(ctx context.Context, key evalKey, compute func(context.Context) (*Diagnosis, error)) (diag *Diagnosis, shared bool, err error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && now.Sub(e.at) < c.ttl {
		c.mu.Unlock()
		return e.diag, true, nil
	}
	c.mu.Unlock()
	v, err, shared := c.flight.Do(key.String(), func() (any, error) {
		// The evaluation outlives a caller that gives up while others wait for it, but not the
		// caller's deadline.
		cctx := context.WithoutCancel(ctx)
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			cctx, cancel = context.WithDeadline(cctx, dl)
			defer cancel()
		}
		d, err := compute(cctx)
		if err == nil {
			c.put(key, d)
		}
		return d, err
	})
	if err != nil {
		return nil, false, err
	}
	return v.(*Diagnosis), shared, nil
}

func (c *evalCache) put(key evalKey, d *Diagnosis) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if now.Sub(e.at) >= c.ttl {
			c.remove(k)
		}
	}
	for len(c.entries) >= maxEvaluations {
		var oldest evalKey
		first := true
		for k, e := range c.entries {
			if first || e.at.Before(c.entries[oldest].at) {
				oldest, first = k, false
			}
		}
		c.remove(oldest)
	}
	c.remove(key)
	c.entries[key] = evalEntry{diag: d, at: now}
	c.memory.hold()
	// An idle data source keeps nothing: an evaluation holds every fetched series of its
	// range (megabytes on a fleet), so it leaves when it expires, not at the next put.
	time.AfterFunc(c.ttl, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if e, ok := c.entries[key]; ok && e.at.Equal(now) {
			c.remove(key)
		}
	})
}

// remove lets an entry go, if there is one; c.mu is held.
func (c *evalCache) remove(key evalKey) {
	if _, ok := c.entries[key]; ok {
		delete(c.entries, key)
		c.memory.drop()
	}
}
