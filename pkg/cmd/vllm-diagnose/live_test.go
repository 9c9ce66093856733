package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/sim"
	"github.com/seed/vllm-datasource/pkg/testbed"
)

var liveNow = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// firingRow is a findings-frame row of a rule firing on instance since start.
func firingRow(instance, rule, severity string, start time.Duration, headline bool) row {
	return row{"instance": instance, "model_name": "m", "rule": rule, "severity": severity, "headline": headline,
		"secondary_to": "", "time": liveNow.Add(-start).Format(time.RFC3339Nano), "flag": "--max-num-seqs",
		"change": "lower", "recommended": 128.0}
}

func keysOf(instances ...string) []instanceKey {
	out := make([]instanceKey, len(instances))
	for i, in := range instances {
		out[i] = instanceKey{Instance: in, Model: "m"}
	}
	return out
}

func TestLiveTable(t *testing.T) {
	// The ordering case relies on the diagnosis's headline order between these two rules.
	if diagnosis.HeadlineRank(diagnosis.EngineStalled) >= diagnosis.HeadlineRank(diagnosis.KVCacheSaturated) {
		t.Fatal("engine_stalled no longer ranks before kv_cache_saturated: choose two other rules")
	}
	many := make([]string, 60)
	var manyActive []row
	for i := range many {
		many[i] = fmt.Sprintf("10.0.%d.%d:8000", i/10, i%10)
		if i%20 == 7 {
			manyActive = append(manyActive, firingRow(many[i], diagnosis.KVCacheSaturated, "critical", time.Minute, true))
		}
	}
	manyOrder := append([]string{many[7], many[27], many[47]}, slices.DeleteFunc(slices.Clone(many), func(s string) bool {
		return s == many[7] || s == many[27] || s == many[47]
	})...)
	for _, c := range []struct {
		name   string
		keys   []instanceKey
		active []row
		width  int
		// order is the instances of the rows, top to bottom; rules their rules ("-" none).
		order, rules []string
		// cells are texts the table must show whole.
		cells []string
	}{
		{
			name: "most severe first, then the headline order of rules, then the instance",
			keys: keysOf("a:1", "b:1", "c:1", "d:1", "e:1"),
			active: []row{
				firingRow("a:1", diagnosis.QueueWithFreeCache, "warning", time.Hour, true),
				firingRow("b:1", diagnosis.KVCacheSaturated, "critical", time.Minute, true),
				firingRow("d:1", diagnosis.ClientTimeouts, "critical", time.Minute, true),
				firingRow("c:1", diagnosis.EngineStalled, "critical", time.Minute, true),
			},
			width: 200,
			order: []string{"c:1", "b:1", "d:1", "a:1", "e:1"},
			rules: []string{diagnosis.EngineStalled, diagnosis.KVCacheSaturated, diagnosis.ClientTimeouts, diagnosis.QueueWithFreeCache, "-"},
		},
		{
			name: "an instance's row is its headline, not its first finding",
			keys: keysOf("a:1"),
			active: []row{
				firingRow("a:1", diagnosis.EngineStalled, "critical", time.Minute, false),
				firingRow("a:1", diagnosis.KVCacheSaturated, "critical", 12*time.Minute+5*time.Second, true),
			},
			width: 200,
			order: []string{"a:1"},
			rules: []string{diagnosis.KVCacheSaturated},
			cells: []string{"12m05s", "lower --max-num-seqs to 128", "2 finding(s) firing"},
		},
		{
			name:  "no findings: every instance ok",
			keys:  keysOf("b:1", "a:1"),
			width: 80,
			order: []string{"a:1", "b:1"},
			rules: []string{"-", "-"},
			cells: []string{"2 instance(s), 0 finding(s) firing"},
		},
		{
			name:  "no instance",
			width: 80,
			cells: []string{"no vLLM instance in the range"},
		},
		{
			name:   "cells cut to a narrow terminal",
			keys:   []instanceKey{{Instance: "vllm-with-a-long-host-name.example.internal:8000", Model: "meta-llama/Llama-3.1-70B-Instruct"}},
			active: []row{{"instance": "vllm-with-a-long-host-name.example.internal:8000", "model_name": "meta-llama/Llama-3.1-70B-Instruct", "rule": diagnosis.KVCacheSaturated, "severity": "critical", "headline": true, "time": liveNow.Add(-3 * time.Hour).Format(time.RFC3339Nano), "flag": "--max-num-seqs", "change": "lower", "recommended": 96.0}},
			width:  60,
			cells:  []string{"…", "critical", "3h00m"},
		},
		{
			name:   "many instances: a row each, the firing ones first",
			keys:   keysOf(many...),
			active: manyActive,
			width:  80,
			order:  manyOrder,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := renderLive(c.keys, c.active, c.width, 0, liveNow)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > c.width {
					t.Errorf("a line of %d characters in a width of %d: %q", n, c.width, l)
				}
			}
			if !strings.HasPrefix(lines[0], "vllm-diagnose --watch 2026-08-01 12:00:00Z") {
				t.Errorf("the header does not open with the time: %q", lines[0])
			}
			if len(c.order) > 0 && len(lines) != len(c.order)+2 {
				t.Fatalf("%d lines for %d instances, want a header, the column names and a row each:\n%s", len(lines), len(c.order), out)
			}
			for i, want := range c.order {
				if f := strings.Fields(lines[2+i]); f[0] != want || (c.rules != nil && f[3] != c.rules[i]) {
					t.Errorf("row %d is %q, want %s with %s", i, lines[2+i], want, c.rules)
				}
			}
			for _, want := range c.cells {
				if !strings.Contains(out, want) {
					t.Errorf("the table lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestLiveInstancesKeepOnlyWhatFiresAtTheLastStep(t *testing.T) {
	labels := data.Labels{"instance": "a:1", "model_name": "m"}
	timeline := data.Frames{data.NewFrame("timeline", data.NewField("time", nil, make([]time.Time, 2)),
		data.NewField(diagnosis.KVCacheSaturated, labels, []string{"firing", "firing"}),
		data.NewField(diagnosis.EngineStalled, labels, []string{"firing", "ok"}),
		data.NewField(diagnosis.ClientTimeouts, labels, []string{"ok", "pending"}))}
	findings := []row{
		firingRow("a:1", diagnosis.KVCacheSaturated, "critical", time.Minute, false),
		firingRow("a:1", diagnosis.EngineStalled, "critical", time.Minute, true),
	}
	keys, active := liveInstances(timeline, findings)
	if !slices.Equal(keys, keysOf("a:1")) || len(active) != 1 || active[0]["rule"] != diagnosis.KVCacheSaturated {
		t.Fatalf("instances %v, active %v: want a:1 and only kv_cache_saturated, which fires at the last step", keys, active)
	}
}

func TestLiveSinceKeepsTheEarliestStartOfARun(t *testing.T) {
	s := liveSince{}
	tick := func(start time.Duration) string {
		r := []row{firingRow("a:1", diagnosis.KVCacheSaturated, "critical", start, true)}
		s.update(r)
		return since(str(r[0], "time"), liveNow)
	}
	// Each tick reaches back less far than the run: its start moves forward; then the run ends.
	got := []string{tick(time.Hour), tick(50 * time.Minute), tick(40 * time.Minute)}
	s.update(nil)
	got = append(got, tick(time.Minute))
	if want := []string{"1h00m", "1h00m", "1h00m", "1m00s"}; !slices.Equal(got, want) {
		t.Fatalf("since %v, want %v", got, want)
	}
}

func TestLiveRedraw(t *testing.T) {
	for _, c := range []struct {
		name  string
		prev  int
		table string
		want  string
	}{
		{"the first table is drawn where the cursor is", 0, "h\nr\n", "\r\033[2Kh\n\r\033[2Kr\n\033[J"},
		{"a later one goes back up over the last", 3, "h\nr\n", "\033[3A\r\033[2Kh\n\r\033[2Kr\n\033[J"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := redraw(c.prev, c.table); got != c.want {
				t.Fatalf("redraw(%d, %q) = %q, want %q", c.prev, c.table, got, c.want)
			}
		})
	}
}

// TestLiveSize: off a terminal, $COLUMNS and $LINES, else 80 columns and no height limit.
func TestLiveSize(t *testing.T) {
	for _, c := range []struct {
		columns, lines string
		width, height  int
	}{
		{"120", "40", 120, 40},
		{"", "", defaultWidth, 0},
		{"wide", "tall", defaultWidth, 0},
		{"0", "0", defaultWidth, 0},
	} {
		env := map[string]string{"COLUMNS": c.columns, "LINES": c.lines}
		if w, h := liveSize(io.Discard, func(k string) string { return env[k] }); w != c.width || h != c.height {
			t.Errorf("COLUMNS=%q LINES=%q: %d×%d, want %d×%d", c.columns, c.lines, w, h, c.width, c.height)
		}
	}
}

// TestLiveTableFitsTheHeight: a fleet taller than the terminal shows its most severe rows and
// counts the rest on one line, leaving the last line free so that the redraw does not scroll.
func TestLiveTableFitsTheHeight(t *testing.T) {
	many := make([]string, 30)
	var active []row
	for i := range many {
		many[i] = fmt.Sprintf("10.0.0.%d:8000", i)
		if i%10 == 3 {
			active = append(active, firingRow(many[i], diagnosis.KVCacheSaturated, "critical", time.Minute, true))
		}
	}
	for _, c := range []struct {
		name          string
		instances     []string
		height, lines int
		last          string
	}{
		{"fits", many[:5], 24, 7, "10.0.0."},
		{"taller than the terminal", many, 24, 23, "… 10 more instance(s) below the terminal's height: 0 firing, 10 ok"},
		{"the firing rows first, whatever the height", many, 6, 5, "… 28 more instance(s) below the terminal's height: 1 firing, 27 ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := renderLive(keysOf(c.instances...), active, 100, c.height, liveNow)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != c.lines || len(lines) >= c.height {
				t.Fatalf("%d lines in a height of %d, want %d:\n%s", len(lines), c.height, c.lines, out)
			}
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, c.last) {
				t.Errorf("last line %q, want %q", last, c.last)
			}
			if c.height > 10 && !strings.Contains(lines[2], "critical") {
				t.Errorf("the first row %q is not a firing instance", lines[2])
			}
		})
	}
}

// watchOn replays a range of a Prometheus with --watch in-process, its stdout a terminal or not.
func watchOn(t *testing.T, promURL string, rng timeRange, every time.Duration, terminal bool, columns string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	c := newRootCommand(context.Background(), &stdout, &stderr, func(k string) string {
		if k == "COLUMNS" {
			return columns
		}
		return ""
	})
	c.terminal = func(io.Writer) bool { return terminal }
	c.SetArgs([]string{"--prometheus", promURL, "--watch", "--every", every.String(), "--from", rng.From, "--to", rng.To})
	if code, err := c.execute(); code != exitOK || err != nil || stderr.String() != "" {
		t.Fatalf("exit %d, error %v, stderr %q", code, err, stderr.String())
	}
	return stdout.String()
}

// TestWatchOnAndOffATerminal replays a simulated fault in a real Prometheus with --watch: on a terminal the
// table is redrawn in place and shows the fault's rule on its instance while it fires; off a
// terminal the state changes are lines, without a terminal's escape sequences.
func TestWatchOnAndOffATerminal(t *testing.T) {
	tmp := t.TempDir()
	start := time.Now().Add(-demoRun).Truncate(time.Minute)
	var truth []sim.Finding
	om, err := testbed.SimBackfill(simBin, tmp, sim.Job, sim.Job, &truth, "--scenario", sim.RuleKVCacheSaturated,
		"--start", stamp(start), "--duration", demoRun.String(), "--scrape-interval", demoScrape.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(truth) == 0 {
		t.Fatal("the scenario injects no fault: the test would test nothing")
	}
	prom := testbed.Prometheus(t, om)
	tr, rng := truth[0], rangeOf(start, start.Add(demoRun))
	const every, columns = 10 * time.Minute, 100

	t.Run("on a terminal, one table redrawn in place", func(t *testing.T) {
		out := watchOn(t, prom.URL, rng, every, true, fmt.Sprint(columns))
		frames := strings.Split(out, "\r\033[2Kvllm-diagnose --watch ")[1:]
		if len(frames) < 2 {
			t.Fatalf("%d tables in a replay of %s every %s:\n%q", len(frames), rng, every, out)
		}
		shown := 0
		for i, f := range frames {
			lines := strings.Count(f, "\n")
			if i < len(frames)-1 && !strings.HasSuffix(f, fmt.Sprintf("\033[J\033[%dA", lines)) {
				t.Fatalf("table %d of %d lines is not followed by the cursor going back up over them: %q", i, lines, f)
			}
			plain := strings.NewReplacer("\r\033[2K", "", "\033[J", "").Replace(f)
			at, err := time.Parse("2006-01-02 15:04:05Z", plain[:len("2006-01-02 15:04:05Z")])
			if err != nil {
				t.Fatalf("table %d does not open with its tick: %q", i, plain)
			}
			for _, l := range strings.Split(plain, "\n") {
				if strings.HasPrefix(l, "\033[") {
					continue
				}
				if n := utf8.RuneCountInString(l); n > columns {
					t.Fatalf("a line of %d characters with COLUMNS=%d: %q", n, columns, l)
				}
				if f := strings.Fields(l); len(f) > 3 && f[0] == tr.Instance && f[3] == tr.Rule {
					shown++
					if at.Before(tr.Start) || at.After(tr.End.Add(every)) {
						t.Errorf("the table at %s shows %s firing on %s; the simulator injected it from %s to %s", at, tr.Rule, tr.Instance, tr.Start, tr.End)
					}
				}
			}
		}
		if shown == 0 {
			t.Fatalf("no table shows the injected %s on %s:\n%s", tr.Rule, tr.Instance, out)
		}
	})

	t.Run("off a terminal, the state changes as lines", func(t *testing.T) {
		out := watchOn(t, prom.URL, rng, every, false, fmt.Sprint(columns))
		if strings.Contains(out, "\033") {
			t.Fatalf("escape sequences written off a terminal: %q", out)
		}
		for _, state := range []string{"firing", "resolved"} {
			if !regexp.MustCompile(`(?m)^\S+  ` + state + ` +` + tr.Rule + ` on ` + regexp.QuoteMeta(tr.Instance) + ` `).MatchString(out) {
				t.Errorf("no line says %s became %s on %s:\n%s", tr.Rule, state, tr.Instance, out)
			}
		}
	})
}
