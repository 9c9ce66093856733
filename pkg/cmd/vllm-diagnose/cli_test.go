package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/sim"
)

var (
	schemaOnce sync.Once
	theSchema  *jsonschema.Schema
	schemaErr  error
)

// validate checks one JSON document against the documented schema.
func validate(t *testing.T, doc []byte) {
	t.Helper()
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		theSchema, schemaErr = c.Compile(filepath.Join("schema", "output.schema.json"))
	})
	if schemaErr != nil {
		t.Fatalf("compiling the schema: %v", schemaErr)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("the output is not JSON: %v\n%s", err, doc)
	}
	if err := theSchema.Validate(inst); err != nil {
		t.Fatalf("the output does not follow schema/output.schema.json: %v", err)
	}
}

// decodeReport decodes the command's JSON answer after checking that it exited with at most
// maxCode, wrote nothing on stderr and follows the output schema.
func decodeReport[R any](t *testing.T, r result, maxCode int) R {
	t.Helper()
	if r.code > maxCode || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	validate(t, []byte(r.stdout))
	var rep R
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// sameRows checks that the CLI's rows hold the plugin frame's rows, field by field: the same
// columns, the same values (times to the nanosecond, numbers exactly).
func sameRows(t *testing.T, what string, frame *data.Frame, got []map[string]any) {
	t.Helper()
	if frame.Rows() != len(got) {
		t.Fatalf("%s: the CLI has %d rows, the plugin over gRPC %d", what, len(got), frame.Rows())
	}
	for i, g := range got {
		if len(g) != len(frame.Fields) {
			t.Fatalf("%s row %d: the CLI has %d columns, the plugin %d: %v", what, i, len(g), len(frame.Fields), g)
		}
		for _, f := range frame.Fields {
			v, present := g[f.Name]
			if !present {
				t.Fatalf("%s row %d: the CLI lacks column %s", what, i, f.Name)
			}
			want, ok := f.ConcreteAt(i)
			if !ok {
				if v != nil {
					t.Fatalf("%s row %d %s: the CLI has %v, the plugin nothing", what, i, f.Name, v)
				}
				continue
			}
			switch w := want.(type) {
			case time.Time:
				s, _ := v.(string)
				at, err := time.Parse(time.RFC3339Nano, s)
				if err != nil || !at.Equal(w) {
					t.Fatalf("%s row %d %s: the CLI has %v, the plugin %s", what, i, f.Name, v, w)
				}
			case float64:
				if math.IsNaN(w) || math.IsInf(w, 0) {
					if v != nil {
						t.Fatalf("%s row %d %s: the CLI has %v, the plugin %v", what, i, f.Name, v, w)
					}
				} else if v != w {
					t.Fatalf("%s row %d %s: the CLI has %v, the plugin %v", what, i, f.Name, v, w)
				}
			default:
				if v != want {
					t.Fatalf("%s row %d %s: the CLI has %v (%T), the plugin %v (%T)", what, i, f.Name, v, v, want, want)
				}
			}
		}
	}
}

// matchers selects one scenario's series in the shared Prometheus.
func matchers(run *scenarioRun) string { return fmt.Sprintf(`{job=%q}`, run.job) }

// TestAgainstRealBackends runs the built command against a real Prometheus holding every
// simulated scenario and a real Jaeger holding one scenario's spans, and compares each answer
// with the plugin's answer over gRPC for the same settings and range.
func TestAgainstRealBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates every scenario and starts Prometheus and Jaeger")
	}
	b := newBed(t)
	from, to := runStart, runStart.Add(runFor)
	severity := map[string]string{}
	rules, err := diagnosis.Rules(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		severity[r.ID] = string(r.Severity)
	}

	t.Run("json findings equal the plugin's diagnosis answer, and follow the schema", func(t *testing.T) {
		for _, name := range scenarioNames() {
			run := b.runs[name]
			t.Run(name, func(t *testing.T) {
				r := cli(t, nil, "--prometheus", b.prom.URL, "--label-matchers", matchers(run),
					"--from", stamp(from), "--to", stamp(to), "--output", "json")
				rep := decodeReport[diagnosisReport](t, r, exitCritical)
				g := grafanaFor(t, b.prom.URL, map[string]any{"labelMatchers": matchers(run)})
				answer := g.ask(t, map[string]any{"queryType": "diagnosis"}, from, to)
				if len(answer.Frames) != 1 {
					t.Fatalf("the plugin answers %d frames", len(answer.Frames))
				}
				sameRows(t, "findings", answer.Frames[0], rep.Findings)
				// The exit code follows the plugin's findings: their worst severity.
				want := exitOK
				sev, _ := answer.Frames[0].FieldByName("severity")
				for i := range answer.Frames[0].Rows() {
					switch sev.At(i) {
					case "critical":
						want = exitCritical
					case "warning":
						want = max(want, exitWarning)
					}
				}
				if r.code != want || rep.ExitCode != want {
					t.Fatalf("exit %d (document says %d), want %d from the plugin's findings", r.code, rep.ExitCode, want)
				}
				// Every ground-truth fault is among the findings, on its instance.
				for _, tr := range run.truth {
					if !slices.ContainsFunc(rep.Findings, func(f row) bool { return f["rule"] == tr.Rule && f["instance"] == tr.Instance }) {
						t.Errorf("the injected %s on %s is not among the findings", tr.Rule, tr.Instance)
					}
				}
				if name == sim.FleetPrefix+fmt.Sprint(fleetSize) && len(rep.Instances) != fleetSize {
					t.Fatalf("%d instances evaluated, want the fleet's %d", len(rep.Instances), fleetSize)
				}
			})
		}
	})

	t.Run("exit codes 0, 1 and 2 on healthy, warning and critical scenarios", func(t *testing.T) {
		for _, c := range []struct {
			scenario string
			code     int
		}{
			{scenarioHealthy, exitOK},
			{sim.RulePrefixCacheMiss, exitWarning},
			{sim.RuleKVCacheSaturated, exitCritical},
		} {
			run := b.runs[c.scenario]
			// The injected fault says what to expect: none, or its rule's severity.
			want := exitOK
			for _, tr := range run.truth {
				want = max(want, map[string]int{"warning": exitWarning, "critical": exitCritical}[severity[tr.Rule]])
			}
			if want != c.code {
				t.Fatalf("%s injects %v: its severity gives exit %d, the test expects %d", c.scenario, run.truth, want, c.code)
			}
			for _, output := range []string{"table", "json", "prometheus"} {
				r := cli(t, nil, "--prometheus", b.prom.URL, "--label-matchers", matchers(run),
					"--from", stamp(from), "--to", stamp(to), "--output", output)
				if r.code != c.code {
					t.Errorf("%s --output %s: exit %d, want %d (stderr %q)", c.scenario, output, r.code, c.code, r.stderr)
				}
			}
		}
	})

	t.Run("the table puts each instance's headline first, worst first, and lists rules once", func(t *testing.T) {
		run := b.runs[sim.FleetPrefix+fmt.Sprint(fleetSize)]
		r := cli(t, nil, "--prometheus", b.prom.URL, "--label-matchers", matchers(run), "--from", stamp(from), "--to", stamp(to))
		if r.code != exitCritical {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		head, rest, ok := strings.Cut(r.stdout, "Findings, headlines first:")
		if !ok {
			t.Fatalf("no findings section:\n%s", r.stdout)
		}
		var severities []string
		for faulty, rule := range sim.FleetFaulty(fleetSize) {
			line := lineWith(head, faulty)
			if line == "" || !strings.Contains(line, rule) {
				t.Errorf("the headline of %s is not %s: %q", faulty, rule, line)
			}
		}
		for _, l := range strings.Split(head, "\n") {
			if m := regexp.MustCompile(`│ (critical|warning|info) +│`).FindStringSubmatch(l); m != nil {
				severities = append(severities, m[1])
			}
		}
		if len(severities) != len(sim.FleetFaulty(fleetSize)) {
			t.Fatalf("%d headlines, want one per faulty instance: %v", len(severities), severities)
		}
		if !slices.IsSortedFunc(severities, func(a, b string) int { return severityRank[b] - severityRank[a] }) {
			t.Fatalf("headlines not worst first: %v", severities)
		}
		for _, want := range []string{"cause:", "action:", "evidence:", "confidence:"} {
			if !strings.Contains(rest, want) {
				t.Fatalf("the findings lack %q:\n%s", want, rest)
			}
		}
		_, rules, _ := strings.Cut(r.stdout, "Rules not evaluated everywhere")
		seen := map[string]bool{}
		for _, l := range strings.Split(rules, "\n") {
			if m := regexp.MustCompile(`^│ ([a-z_]+) +│ ([a-z ]+?) +│`).FindStringSubmatch(l); m != nil {
				if seen[m[1]+m[2]] {
					t.Fatalf("rule %s listed twice as %s", m[1], m[2])
				}
				seen[m[1]+m[2]] = true
			}
		}
		// The fleet has no speculative decoding outside its one faulty instance: the rule does
		// not apply elsewhere, said once.
		if !seen["spec_decode_inefficientnot applicable"] {
			t.Fatalf("spec_decode_inefficient's not applicable row is missing:\n%s", rules)
		}
	})

	t.Run("prometheus output holds the alert series' last values", func(t *testing.T) {
		run := b.runs[sim.RuleKVCacheSaturated]
		tr := run.truth[0]
		at := tr.Start.Add(15 * time.Minute).Truncate(time.Second)
		r := cli(t, nil, "--prometheus", b.prom.URL, "--label-matchers", matchers(run),
			"--from", stamp(at.Add(-10*time.Minute)), "--to", stamp(at), "--output", "prometheus")
		if r.code != exitCritical {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if !strings.HasSuffix(r.stdout, "# EOF\n") {
			t.Fatalf("not OpenMetrics (no # EOF):\n%s", r.stdout)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(r.stdout))
		if err != nil {
			t.Fatalf("a textfile collector could not read it: %v\n%s", err, r.stdout)
		}
		got := map[string]float64{}
		for _, m := range families[alertMetric].GetMetric() {
			if m.TimestampMs != nil {
				t.Fatal("a sample carries a timestamp: the textfile collector refuses them")
			}
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[l["rule"]+"|"+l["severity"]+"|"+l["instance"]+"|"+l["model_name"]] = m.GetGauge().GetValue()
		}
		g := grafanaFor(t, b.prom.URL, map[string]any{"labelMatchers": matchers(run)})
		answer := g.ask(t, map[string]any{"queryType": "diagnosis", "format": "alert"}, at.Add(-10*time.Minute), at)
		if len(answer.Frames) != len(got) {
			t.Fatalf("%d series written, the plugin answers %d", len(got), len(answer.Frames))
		}
		for _, f := range answer.Frames {
			v := f.Fields[1]
			k := v.Labels["rule"] + "|" + v.Labels["severity"] + "|" + v.Labels["instance"] + "|" + v.Labels["model_name"]
			if want := v.At(v.Len() - 1).(float64); got[k] != want {
				t.Fatalf("%s: written %v, the plugin's last value %v", k, got[k], want)
			}
		}
		if got[tr.Rule+"|critical|"+tr.Instance+"|"+tr.Model] != 1 {
			t.Fatalf("the injected %s on %s is not 1 a quarter of an hour into the fault: %v", tr.Rule, tr.Instance, got)
		}
	})

	t.Run("watch replays the rule clock: pending, firing, resolved", func(t *testing.T) {
		run := b.runs[sim.RuleKVCacheSaturated]
		tr := run.truth[0]
		every := 2 * time.Minute
		r := cli(t, nil, "--prometheus", b.prom.URL, "--label-matchers", matchers(run), "--watch", "--every", every.String(),
			"--from", stamp(tr.Start.Add(-10*time.Minute)), "--to", stamp(tr.End.Add(20*time.Minute)), "--output", "json")
		if r.code != exitOK || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		var states []string
		var firingAt time.Time
		sc := bufio.NewScanner(strings.NewReader(r.stdout))
		for sc.Scan() {
			validate(t, sc.Bytes())
			var tt transition
			if err := json.Unmarshal(sc.Bytes(), &tt); err != nil {
				t.Fatal(err)
			}
			if tt.Rule == tr.Rule && tt.Instance == tr.Instance {
				states = append(states, tt.State)
				if tt.State == "firing" {
					firingAt, _ = time.Parse(time.RFC3339, tt.Time)
				}
			}
		}
		if !slices.Equal(states, []string{"pending", "firing", "resolved"}) {
			t.Fatalf("the injected rule went %v, want pending, firing, resolved:\n%s", states, r.stdout)
		}
		if firingAt.Before(tr.Start) || firingAt.After(tr.Start.Add(3*time.Minute+2*every)) {
			t.Fatalf("firing at %s; the fault starts %s and the rule's for is 3m", firingAt, tr.Start)
		}
		table := cli(t, nil, "--prometheus", b.prom.URL, "--label-matchers", matchers(run), "--watch", "--every", every.String(),
			"--from", stamp(tr.Start.Add(-10*time.Minute)), "--to", stamp(tr.End.Add(20*time.Minute)))
		if got := strings.Count(table.stdout, "\n"); got != strings.Count(r.stdout, "\n") {
			t.Fatalf("the table watch prints %d lines, the json one %d", got, strings.Count(r.stdout, "\n"))
		}
	})

	t.Run("explain equals the plugin's explain answer", func(t *testing.T) {
		run := b.runs[spansScenario]
		tr := run.truth[0]
		id := b.traceIn(t, tr.Instance, tr.Start.Add(10*time.Minute), tr.Start.Add(12*time.Minute))
		qFrom, qTo := tr.Start.Add(9*time.Minute), tr.Start.Add(13*time.Minute)
		r := cli(t, nil, "explain", id, "--prometheus", b.prom.URL, "--jaeger", b.jaeger.QueryURL, "--label-matchers", matchers(run),
			"--from", stamp(qFrom), "--to", stamp(qTo), "--output", "json")
		rep := decodeReport[explainReport](t, r, exitCritical)
		g := grafanaFor(t, b.prom.URL, map[string]any{"labelMatchers": matchers(run), "tracesBackend": "jaeger", "tracesUrl": b.jaeger.QueryURL})
		answer := g.ask(t, map[string]any{"queryType": "explain", "traceId": id}, qFrom, qTo)
		sameRows(t, "explanation", explanationFrame(answer.Frames), []map[string]any{rep.Explanation})
		sameRows(t, "stages", frameNamed(answer.Frames, "stages"), rep.Stages)
		if !strings.Contains(str(rep.Explanation, "findings"), tr.Rule) {
			t.Fatalf("a request in the middle of the fault does not list %s: %v", tr.Rule, rep.Explanation)
		}
		if !slices.ContainsFunc(rep.Findings, func(f row) bool { return f["rule"] == tr.Rule }) || r.code != exitCritical {
			t.Fatalf("exit %d; the findings of its moment lack %s: %v", r.code, tr.Rule, rep.Findings)
		}
		table := cli(t, nil, "explain", id, "--prometheus", b.prom.URL, "--jaeger", b.jaeger.QueryURL, "--label-matchers", matchers(run),
			"--from", stamp(qFrom), "--to", stamp(qTo))
		// The table wraps long cells: look for the short ones.
		if !strings.Contains(table.stdout, "Request "+id) || !strings.Contains(table.stdout, str(rep.Explanation, "findings")) ||
			!strings.Contains(table.stdout, "Findings while it ran") {
			t.Fatalf("the table lacks the explanation or the findings:\n%s", table.stdout)
		}
	})

	t.Run("verdict equals the plugin's verdict answer", func(t *testing.T) {
		run := b.runs[sim.RuleKVCacheSaturated]
		tr := run.truth[0]
		baseline := stamp(runStart.Add(5*time.Minute)) + ".." + stamp(runStart.Add(35*time.Minute))
		cFrom, cTo := tr.Start.Add(5*time.Minute), tr.Start.Add(35*time.Minute)
		r := cli(t, nil, "verdict", "--baseline", baseline, "--prometheus", b.prom.URL, "--label-matchers", matchers(run),
			"--from", stamp(cFrom), "--to", stamp(cTo), "--output", "json")
		rep := decodeReport[verdictReport](t, r, exitWarning)
		base := strings.Split(baseline, "..")
		g := grafanaFor(t, b.prom.URL, map[string]any{"labelMatchers": matchers(run)})
		answer := g.ask(t, map[string]any{"queryType": "verdict", "baselineFrom": base[0], "baselineTo": base[1]}, cFrom, cTo)
		sameRows(t, "verdicts", frameNamed(answer.Frames, "verdict"), rep.Verdicts)
		if len(rep.Verdicts) == 0 {
			t.Fatal("no verdict rows")
		}
	})

	t.Run("bad input is one line on stderr and exit 3", func(t *testing.T) {
		run := b.runs[scenarioHealthy]
		notProm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>a web server, not Prometheus</body></html>")
		}))
		defer notProm.Close()
		closed := httptest.NewServer(http.NotFoundHandler())
		closedURL := closed.URL
		closed.Close()
		dir := t.TempDir()
		unknownRule := filepath.Join(dir, "unknown.json")
		if err := os.WriteFile(unknownRule, []byte(`{"kv_cache_saturatd": {"kv_usage": 0.9}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		base := []string{"--prometheus", b.prom.URL, "--label-matchers", matchers(run), "--from", stamp(from), "--to", stamp(to)}
		for _, c := range []struct {
			name string
			args []string
			// says is what the message must name, so the user knows what to fix.
			says string
		}{
			{"unreachable Prometheus", []string{"--prometheus", closedURL}, "Prometheus at " + closedURL},
			{"a URL that is not Prometheus", []string{"--prometheus", notProm.URL}, "Prometheus at " + notProm.URL},
			{"a bad regular expression", append(slices.Clone(base), "--instance", "vllm-(0"), "regular expression"},
			{"a bad time", append([]string{"--prometheus", b.prom.URL, "--to", "yesterday"}, "--from", "noon"), `--from "noon" is not a time`},
			{"--from after --to", []string{"--prometheus", b.prom.URL, "--from", stamp(to), "--to", stamp(from)}, "is not before --to"},
			{"an unknown rule id in thresholds", append(slices.Clone(base), "--thresholds", unknownRule), "kv_cache_saturatd"},
			{"an invalid trace id", append([]string{"explain", "not-a-trace-id", "--jaeger", b.jaeger.QueryURL}, base...), "not-a-trace-id"},
			{"no Prometheus", []string{"--since", "1h"}, "--prometheus is required"},
			{"an unknown output", append(slices.Clone(base), "--output", "yaml"), `--output "yaml"`},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := cli(t, nil, c.args...)
				if r.code != exitError {
					t.Fatalf("exit %d, want 3; stdout %q, stderr %q", r.code, r.stdout, r.stderr)
				}
				if r.stdout != "" {
					t.Fatalf("stdout %q: an error writes no document", r.stdout)
				}
				if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "vllm-diagnose: ") {
					t.Fatalf("stderr %q is not one line", r.stderr)
				}
				if !strings.Contains(r.stderr, c.says) {
					t.Fatalf("stderr %q does not name %q", r.stderr, c.says)
				}
			})
		}
	})

	t.Run("credentials come from the environment or files, headers from flags", func(t *testing.T) {
		run := b.runs[scenarioHealthy]
		target, err := url.Parse(b.prom.URL)
		if err != nil {
			t.Fatal(err)
		}
		// An authenticating gateway in front of the real Prometheus, as Mimir's would be.
		proxy := httputil.NewSingleHostReverseProxy(target)
		gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user, pw, ok := r.BasicAuth()
			if !ok || user != "ops" || pw != "s3cret-pw" || r.Header.Get("X-Scope-OrgID") != "tenant-1" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		defer gateway.Close()
		args := []string{"--prometheus", gateway.URL, "--prometheus-user", "ops", "--header", "X-Scope-OrgID=tenant-1",
			"--label-matchers", matchers(run), "--from", stamp(from), "--to", stamp(to), "--output", "json"}
		r := cli(t, []string{envPromPassword + "=s3cret-pw"}, args...)
		if r.code != exitOK || strings.Contains(r.stdout+r.stderr, "s3cret-pw") {
			t.Fatalf("exit %d, stderr %q; the secret shows: %v", r.code, r.stderr, strings.Contains(r.stdout+r.stderr, "s3cret-pw"))
		}
		pwFile := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := cli(t, nil, append(args, "--prometheus-password-file", pwFile)...); r.code != exitOK {
			t.Fatalf("with the password file: exit %d, stderr %q", r.code, r.stderr)
		}
		r = cli(t, []string{envPromPassword + "="}, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "401") {
			t.Fatalf("without the password: exit %d, stderr %q; want 3 and the gateway's refusal", r.code, r.stderr)
		}
	})
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// scenarioHealthy is the catalogue's scenario without a fault.
const scenarioHealthy = "healthy"
