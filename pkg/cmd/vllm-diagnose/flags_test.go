package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// rejection is a command line that must fail as bad input: exit 3 and one line on stderr
// saying want.
type rejection struct {
	name string
	args []string
	want string
}

func checkRejections(t *testing.T, cases []rejection) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr strings.Builder
			code := run(context.Background(), c.args, io.Discard, &stderr, func(string) string { return "" })
			if code != exitError || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q: want exit %d and one line saying %q", code, stderr.String(), exitError, c.want)
			}
		})
	}
}

// TestFlagsRefused: a flag that the command's mode would ignore is an error saying what to
// drop, before any backend is asked (none listens on port 9).
func TestFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	const prom = "http://127.0.0.1:9"
	checkRejections(t, []rejection{
		{"--save without --scrape", []string{"--prometheus", prom, "--save", dir}, "--save needs --scrape: it keeps the TSDB --scrape fills (demo --save keeps a demo's): drop --save"},
		{"--every without --watch", []string{"--prometheus", prom, "--every", "2m"}, "--every needs --watch"},
		{"--timeout with --watch", []string{"--prometheus", prom, "--watch", "--timeout", "5m"}, "--watch has no --timeout"},
		{"--since with --watch", []string{"--prometheus", prom, "--watch", "--since", "2h"}, "--watch follows the clock from now (--from replays a range instead): drop --since"},
		{"--since with --scrape", []string{"--scrape", "http://127.0.0.1:8000", "--since", "1h"}, "--scrape diagnoses what it scrapes from now on: drop --since"},
		{"--from and --to with --scrape", []string{"--scrape", "http://127.0.0.1:8000", "--from", "now-2h", "--to", "now-1h"}, "drop --from, --to"},
		{"--since with --from-dir", []string{"--from-dir", dir, "--since", "1h"}, "--from-dir diagnoses all the directory's data unless --from (and --to) narrow it: drop --since"},
		{"--to without --from with --from-dir", []string{"--from-dir", dir, "--to", "now"}, "drop --to"},
		{"--watch without --from with --from-dir", []string{"--from-dir", dir, "--watch"}, "--watch on --from-dir needs --from (and --to) to replay: the directory holds no data from now on: drop --watch"},
		{"--since with demo", []string{"demo", "--since", "30m"}, "demo simulates its own 2h0m0s up to now, scraped every 15s: drop --since"},
		{"--from and --to with demo", []string{"demo", "--from", "now-2h", "--to", "now"}, "drop --from, --to"},
		{"--scrape-interval with demo", []string{"demo", "--scrape-interval", "30s"}, "drop --scrape-interval"},
		{"a --timeout shorter than --scrape's wait", []string{"--scrape", "http://127.0.0.1:8000", "--timeout", "1m"},
			"--timeout 1m0s ends before the 2m30s of scraping the quickest rule needs: give more than 2m30s, or leave it out (then 4m30s)"},
	})
}

// TestScrapeIntervalUnderASecond: the evaluation steps in whole seconds, so a finer
// --scrape-interval is refused by its flag's name, reading Prometheus as scraping vLLM, before
// any backend is asked.
func TestScrapeIntervalUnderASecond(t *testing.T) {
	checkRejections(t, []rejection{
		{"with --prometheus", []string{"--prometheus", "http://127.0.0.1:9", "--scrape-interval", "400ms"}, "--scrape-interval 400ms is shorter than the evaluation's step of at least 1s"},
		{"with --scrape", []string{"--scrape", "http://127.0.0.1:8000", "--scrape-interval", "250ms"}, "choose 1s or more"},
	})
}

// TestFlagsAccepted: the flags a mode does read pass refuseIgnored.
func TestFlagsAccepted(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"--since with Prometheus", []string{"--prometheus", "http://p:9090", "--since", "2h"}},
		{"--save with --scrape", []string{"--scrape", "http://v:8000", "--save", "tsdb"}},
		{"--every and --since-less --watch", []string{"--prometheus", "http://p:9090", "--watch", "--every", "2m"}},
		{"--from and --to with --from-dir", []string{"--from-dir", "tsdb", "--from", "now-2h", "--to", "now-1h"}},
		{"--watch and --from with --from-dir", []string{"--from-dir", "tsdb", "--watch", "--from", "now-2h"}},
		{"--from and --to with --watch", []string{"--prometheus", "http://p:9090", "--watch", "--from", "now-2h", "--to", "now-1h"}},
		{"--timeout with --scrape", []string{"--scrape", "http://v:8000", "--timeout", "10m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := newRootCommand(context.Background(), io.Discard, io.Discard, func(string) string { return "" })
			if err := cmd.root.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			if err := cmd.refuseIgnored(cmd.root); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// TestScrapeTimeout: --timeout with --scrape counts from the first scrape, so by default it
// adds the scraping the quickest rule needs to its default; given, it is what it says.
func TestScrapeTimeout(t *testing.T) {
	const need = 150 * time.Second
	for _, c := range []struct {
		name string
		args []string
		want time.Duration
	}{
		{"by default, the scraping plus the default", nil, need + defaultTimeout},
		{"given, as given", []string{"--timeout", "10m"}, 10 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := newRootCommand(context.Background(), io.Discard, io.Discard, func(string) string { return "" })
			if err := cmd.root.ParseFlags(append([]string{"--scrape", "http://v:8000"}, c.args...)); err != nil {
				t.Fatal(err)
			}
			if got, err := cmd.scrapeTimeout(need); err != nil || got != c.want {
				t.Errorf("timeout %s (%v), want %s", got, err, c.want)
			}
		})
	}
}
