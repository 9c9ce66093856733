package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/embedprom"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// scrapeTargets reads --scrape: comma-separated vLLM URLs, http or https, /metrics when no
// path is given.
func scrapeTargets(list string) ([]*url.URL, error) {
	var out []*url.URL
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("--scrape %q is not a vLLM URL: write http://HOST:PORT[/metrics] (or https), comma-separated", raw)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/metrics"
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("--scrape names no target: write http://HOST:PORT[,http://HOST:PORT…]")
	}
	return out, nil
}

// dataNeeded is how long a scrape must run before the quickest rule can fire: its `for` (with
// --thresholds) after the first full rate window.
func (c *rootCommand) dataNeeded(interval time.Duration) (time.Duration, error) {
	var raw []byte
	if f := c.opts.conn.thresholdsFile; f != "" {
		var err error
		if raw, err = os.ReadFile(f); err != nil {
			return 0, fmt.Errorf("cannot read the thresholds file %s: %v", f, errors.Unwrap(err))
		}
	}
	th, err := diagnosis.ParseThresholds(raw)
	if err != nil {
		return 0, fmt.Errorf("the thresholds file %s: %w", c.opts.conn.thresholdsFile, err)
	}
	rules, err := diagnosis.Rules(nil, th)
	if err != nil {
		return 0, err
	}
	return signals.Window(interval, interval) + diagnosis.ShortestFor(rules), nil
}

// scrapeTimeout is --timeout with --scrape, counted from the first scrape: given, it must
// leave time to diagnose after the scraping the quickest rule needs; by default it is that
// scraping plus the default.
func (c *rootCommand) scrapeTimeout(need time.Duration) (time.Duration, error) {
	if !c.root.Flags().Changed("timeout") {
		return need + c.opts.timeout, nil
	}
	if c.opts.timeout <= need {
		return 0, fmt.Errorf("--timeout %s ends before the %s of scraping the quickest rule needs: give more than %s, or leave it out (then %s)",
			c.opts.timeout, need, need, need+defaultTimeout)
	}
	return c.opts.timeout, nil
}

// runScrape scrapes the --scrape targets into the embedded Prometheus until the quickest
// rule has the data it needs, reporting each bad target once, then diagnoses what it holds.
func (c *rootCommand) runScrape(ctx context.Context) error {
	if c.opts.conn.prometheus != "" || c.opts.fromDir != "" {
		return errors.New("--scrape serves its own Prometheus: drop --prometheus and --from-dir")
	}
	targets, err := scrapeTargets(c.opts.scrape)
	if err != nil {
		return err
	}
	interval, err := c.scrapeInterval()
	if err != nil {
		return err
	}
	need, err := c.dataNeeded(interval)
	if err != nil {
		return err
	}
	// --timeout bounds the whole run, the scraping included: the deadline start sets later
	// cannot extend this one.
	if !c.opts.watch {
		if c.opts.timeout, err = c.scrapeTimeout(need); err != nil {
			return err
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.timeout)
		defer cancel()
	}
	dir, cleanup, err := tsdbDir(c.opts.save, "vllm-diagnose-scrape-")
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := embedprom.Open(dir)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.Scrape(targets, interval); err != nil {
		return err
	}
	// The targets are watched for the whole run, the diagnosis's --watch included; their
	// lines and the progress line share stderr.
	c.stderr = &lockedWriter{w: c.stderr}
	start := c.now()
	allBad := make(chan struct{})
	reportCtx, stopReports := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		c.reportTargets(reportCtx, srv, len(targets), allBad)
	}()
	// No report line is written after the command returns.
	defer func() {
		stopReports()
		<-reported
	}()
	p := &progress{w: c.stderr, on: isTerminal(c.stderr)}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for elapsed := time.Duration(0); elapsed < need; elapsed = c.now().Sub(start) {
		p.set(fmt.Sprintf("scraping %d target(s) every %s: %s of the %s the quickest rule needs",
			len(targets), interval, elapsed.Truncate(time.Second), need))
		select {
		case <-ctx.Done():
			p.set("")
			return ctx.Err()
		case <-allBad:
			p.set("")
			return fmt.Errorf("none of the %d target(s) serves vLLM metrics (see the lines above)", len(targets))
		case <-tick.C:
		}
	}
	p.set("")
	c.opts.conn.prometheus = srv.URL()
	return c.diagnose(ctx, start, c.now())
}

// reportTargets prints one line for each target the first time it goes bad, every second
// until ctx ends, and closes allBad (once) when every target is bad.
func (c *rootCommand) reportTargets(ctx context.Context, srv *embedprom.Server, n int, allBad chan<- struct{}) {
	reported := map[string]bool{}
	closed := false
	// On a terminal a line first clears the progress line it interrupts.
	clear := ""
	if isTerminal(c.stderr) {
		clear = "\r\033[K"
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		bad := 0
		for _, t := range srv.Targets() {
			msg := targetProblem(ctx, srv, t)
			if msg == "" {
				continue
			}
			bad++
			if !reported[t.URL] {
				reported[t.URL] = true
				fmt.Fprintf(c.stderr, "%svllm-diagnose: %s: %s\n", clear, t.URL, oneLine(msg))
			}
		}
		if bad == n && !closed {
			close(allBad)
			closed = true
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// targetProblem says what is wrong with a target once it has been scraped: its scrape failed,
// or it answered metrics that are not vLLM's. Empty: nothing (yet).
func targetProblem(ctx context.Context, srv *embedprom.Server, t embedprom.Target) string {
	if !t.Scraped {
		return ""
	}
	if t.Err != nil {
		msg := t.Err.Error()
		if strings.Contains(msg, "Content-Type") {
			msg = "not a Prometheus /metrics endpoint (" + msg + ")"
		}
		return msg + "; the other targets go on"
	}
	has, err := srv.Has(ctx, labels.MustNewMatcher(labels.MatchEqual, "instance", t.Instance),
		labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, "vllm:.+"))
	if err != nil || has {
		return ""
	}
	return "serves metrics, but none of vLLM's (vllm:*): is it a vLLM server? the other targets go on"
}

// tsdbDir is --save's directory when given (new or empty), else a temporary one that cleanup
// removes.
func tsdbDir(save, tempPrefix string) (dir string, cleanup func(), err error) {
	if save != "" {
		return save, func() {}, saveDir(save)
	}
	dir, err = os.MkdirTemp("", tempPrefix)
	return dir, func() { _ = os.RemoveAll(dir) }, err
}

// lockedWriter serialises writes from the target reports and the command.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
