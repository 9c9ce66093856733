package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/gtime"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// Output formats.
const (
	outTable      = "table"
	outJSON       = "json"
	outPrometheus = "prometheus"
)

// options are the flags of every command.
type options struct {
	conn connection

	since    time.Duration
	from, to string
	instance string
	model    string
	output   string
	step     time.Duration
	timeout  time.Duration

	watch bool
	every time.Duration

	fromDir string
	scrape  string
	save    string

	baseline      string
	optimisations []string
	rule          string

	slosFile string
	slo      string
}

// rootCommand is the command tree with the exit code its run left.
type rootCommand struct {
	root   *cobra.Command
	code   int
	opts   options
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// terminal says whether a writer is a terminal; tests replace it to take both of --watch's
	// paths.
	terminal func(io.Writer) bool
}

func (c *rootCommand) SetArgs(args []string) { c.root.SetArgs(args) }

func (c *rootCommand) execute() (int, error) {
	if err := c.root.ExecuteContext(c.ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within --timeout %s (%v): raise --timeout or narrow the range", c.opts.timeout, err)
		}
		return exitError, err
	}
	return c.code, nil
}

func newRootCommand(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string) *rootCommand {
	c := &rootCommand{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv, now: time.Now, terminal: isTerminal}
	o := &c.opts
	root := &cobra.Command{
		Use:   "vllm-diagnose",
		Short: "Diagnose vLLM servers from Prometheus (and Tempo or Jaeger) with the vLLM Diagnosis plugin's engine",
		Long: `vllm-diagnose prints the findings of a time range: one headline per instance (its likely
bottleneck), worst first, then the other findings with cause, action (the vLLM flag to change),
evidence and confidence, and the rules that did not apply or lacked data.

Secrets never come from flags: ` + envPromPassword + ` or --prometheus-password-file,
` + envPromToken + ` or --prometheus-token-file, ` + envTracesPassword + ` or
--traces-password-file, ` + envTracesToken + ` or --traces-token-file.

Exit codes: 0 nothing firing, 1 warnings, 2 critical findings, 3 a backend unreachable or bad input.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.refuseIgnored(cmd); err != nil {
				return err
			}
			return c.runDiagnosis(cmd.Context())
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	defaults := plugin.SettingsContract().Defaults
	pf.StringVar(&o.conn.prometheus, "prometheus", "", "Prometheus base URL (Prometheus, Thanos, Mimir, VictoriaMetrics)")
	pf.StringVar(&o.conn.tempo, "tempo", "", "Tempo base URL (port 3200), for traces")
	pf.StringVar(&o.conn.jaeger, "jaeger", "", "Jaeger query API base URL (port 16686), for traces")
	pf.DurationVar(&o.since, "since", time.Hour, "the range: the last DURATION (ignored with --from; --scrape, --from-dir, --watch and demo choose their own range and refuse it)")
	pf.StringVar(&o.from, "from", "", "range start: RFC 3339 (2026-08-01T10:00:00Z), epoch milliseconds, or relative (now-2h)")
	pf.StringVar(&o.to, "to", "", "range end, as --from (default now)")
	pf.StringVar(&o.instance, "instance", "", "instances: exact value or regular expression (default all)")
	pf.StringVar(&o.model, "model", "", "models: exact value or regular expression (default all)")
	pf.StringVar(&o.conn.labelMatchers, "label-matchers", "", `extra PromQL matchers for vLLM series, such as '{job="vllm"}'`)
	pf.StringVar(&o.conn.thresholdsFile, "thresholds", "", `JSON file: rule id → parameter → number, such as {"kv_cache_saturated": {"kv_usage": 0.9}}`)
	pf.StringVarP(&o.output, "output", "o", outTable, "table, json or prometheus (OpenMetrics alert series for a textfile collector)")
	pf.StringVar(&o.conn.scrapeInterval, "scrape-interval", defaults.ScrapeInterval, "Prometheus scrape interval of the vLLM targets")
	pf.DurationVar(&o.step, "step", 0, "evaluation step (default: the scrape interval)")
	pf.DurationVar(&o.timeout, "timeout", defaultTimeout, "give up on the backends after this long; with --scrape, counted from the first scrape, and by default the scraping the quickest rule needs plus this default; --watch has none (it runs until interrupted)")
	pf.StringVar(&o.conn.promUser, "prometheus-user", "", "basic auth user for Prometheus (password from "+envPromPassword+" or --prometheus-password-file)")
	pf.StringVar(&o.conn.promPasswordFile, "prometheus-password-file", "", "file holding Prometheus's basic auth password")
	pf.StringVar(&o.conn.promTokenFile, "prometheus-token-file", "", "file holding a bearer token for Prometheus (or "+envPromToken+")")
	pf.StringArrayVar(&o.conn.headers, "header", nil, "extra header to Prometheus, NAME=VALUE or NAME=@FILE, such as X-Scope-OrgID=tenant-1 (repeatable)")
	pf.StringVar(&o.conn.caFile, "ca-file", "", "PEM file of the CA that signed Prometheus's certificate")
	pf.BoolVar(&o.conn.skipVerify, "insecure-skip-verify", false, "do not verify Prometheus's TLS certificate")
	pf.StringVar(&o.conn.tracesUser, "traces-user", "", "basic auth user for the trace backend (password from "+envTracesPassword+" or --traces-password-file)")
	pf.StringVar(&o.conn.tracesPasswordFile, "traces-password-file", "", "file holding the trace backend's basic auth password")
	pf.StringVar(&o.conn.tracesTokenFile, "traces-token-file", "", "file holding a bearer token for the trace backend (or "+envTracesToken+")")
	pf.StringVar(&o.conn.instanceLabel, "instance-label", "", "Prometheus label naming the instance (default "+defaults.InstanceLabel+")")
	pf.StringVar(&o.conn.modelLabel, "model-label", "", "Prometheus label naming the model (default "+defaults.ModelLabel+")")
	pf.StringVar(&o.conn.serviceName, "service-name", "", "service name of vLLM's spans (default "+defaults.ServiceName+")")
	pf.StringVar(&o.conn.spanName, "span-name", "", "name of vLLM's request span (default "+defaults.SpanName+")")
	pf.StringVar(&o.conn.spanInstanceAttr, "span-instance-attribute", "", "span attribute equal to the instance label (default "+defaults.SpanInstanceAttribute+")")
	pf.StringVar(&o.conn.spanModelAttr, "span-model-attribute", "", "span attribute holding the model (default "+defaults.SpanModelAttribute+")")
	root.Flags().BoolVar(&o.watch, "watch", false, "evaluate on the rule clock and print only state changes (pending, firing, resolved), or on a terminal redraw a table of each instance's headline; with --from, replay that range")
	root.Flags().StringVar(&o.fromDir, "from-dir", "", "diagnose a TSDB directory (demo --save, --scrape --save) in an embedded Prometheus instead of --prometheus; default range: all its data, which --from (and --to) narrow")
	root.Flags().StringVar(&o.scrape, "scrape", "", "scrape these vLLM /metrics URLs (http://HOST:PORT, comma-separated) into an embedded Prometheus every --scrape-interval, then diagnose once the quickest rule has data")
	root.Flags().StringVar(&o.save, "save", "", "with --scrape: keep the TSDB in this new directory, for --from-dir or a Prometheus's --storage.tsdb.path")
	root.Flags().DurationVar(&o.every, "every", time.Minute, "rule clock of --watch")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%v (see vllm-diagnose --help)", err) })

	explain := &cobra.Command{
		Use:   "explain TRACE_ID",
		Short: "Explain one request: queue, prefill or decode, the findings of its moment and the action",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("explain needs one trace id: vllm-diagnose explain TRACE_ID --jaeger URL (or --tempo URL)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return c.runExplain(cmd.Context(), args[0]) },
	}
	verdictCmd := &cobra.Command{
		Use:   "verdict --baseline FROM..TO",
		Short: "Did each optimisation work: the baseline window against the range",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.runVerdict(cmd.Context()) },
	}
	verdictCmd.Flags().StringVar(&o.baseline, "baseline", "", "the window to compare with, FROM..TO (each as --from), such as now-7d..now-6d")
	verdictCmd.Flags().StringSliceVar(&o.optimisations, "optimisations", nil, "optimisations deployed between the windows: "+optimisationNames())
	verdictCmd.Flags().StringVar(&o.rule, "rule", "", "a diagnosis rule whose advice was applied between the windows: did the signal it promises to move (preemptions for kv_cache_saturated, …) move? Exit 1 when it did not move or got worse: "+strings.Join(diagnosis.IDs(), ", "))
	root.AddCommand(explain, verdictCmd, c.demoCommand(), c.sloCommand())
	c.root = root
	return c
}

// defaultTimeout is --timeout's default.
const defaultTimeout = 2 * time.Minute

// refuse is the error for the flags among names given on the command line, when a mode of the
// command decides what they would say (why): a flag is refused, never silently ignored.
func refuse(cmd *cobra.Command, why string, names ...string) error {
	var given []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			given = append(given, "--"+n)
		}
	}
	if len(given) == 0 {
		return nil
	}
	return fmt.Errorf("%s: drop %s", why, strings.Join(given, ", "))
}

// refuseIgnored refuses the root command's flags that its mode would ignore.
func (c *rootCommand) refuseIgnored(cmd *cobra.Command) error {
	o := c.opts
	for _, m := range []struct {
		when  bool
		why   string
		flags []string
	}{
		{o.scrape == "", "--save needs --scrape: it keeps the TSDB --scrape fills (demo --save keeps a demo's)", []string{"save"}},
		{!o.watch, "--every needs --watch: it is --watch's rule clock", []string{"every"}},
		{o.watch, "--watch has no --timeout: it runs until interrupted, or with --from to the range's end", []string{"timeout"}},
		{o.scrape != "", "--scrape diagnoses what it scrapes from now on", []string{"since", "from", "to"}},
		{o.fromDir != "" && o.from == "", "--from-dir diagnoses all the directory's data unless --from (and --to) narrow it", []string{"since", "to"}},
		{o.watch && o.from == "", "--watch follows the clock from now (--from replays a range instead)", []string{"since", "to"}},
		{o.fromDir != "" && o.from == "", "--watch on --from-dir needs --from (and --to) to replay: the directory holds no data from now on", []string{"watch"}},
	} {
		if !m.when {
			continue
		}
		if err := refuse(cmd, m.why, m.flags...); err != nil {
			return err
		}
	}
	return nil
}

// scrapeInterval is --scrape-interval: at least 1s, as the evaluation steps in whole seconds.
func (c *rootCommand) scrapeInterval() (time.Duration, error) {
	d, err := time.ParseDuration(c.opts.conn.scrapeInterval)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--scrape-interval %q is not a positive duration such as 15s", c.opts.conn.scrapeInterval)
	}
	if d < time.Second {
		return 0, fmt.Errorf("--scrape-interval %s is shorter than the evaluation's step of at least 1s: choose 1s or more", d)
	}
	return d, nil
}

// timeForms is how the messages say a time may be written.
const timeForms = "RFC 3339 such as 2026-08-01T10:00:00Z, epoch milliseconds, or relative such as now-2h"

// timeRange is the range the flags ask for.
func (c *rootCommand) timeRange() (time.Time, time.Time, error) {
	o := c.opts
	now := c.now()
	if o.from == "" {
		if o.to != "" {
			return time.Time{}, time.Time{}, errors.New("--to needs --from: give both, or --since alone")
		}
		if o.since <= 0 {
			return time.Time{}, time.Time{}, fmt.Errorf("--since %s is not a positive duration such as 30m", o.since)
		}
		return now.Add(-o.since), now, nil
	}
	tr := gtime.TimeRange{From: strings.TrimSpace(o.from), To: strings.TrimSpace(o.to), Now: now}
	from, err := tr.ParseFrom()
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("--from %q is not a time: write %s", o.from, timeForms)
	}
	to := now
	if tr.To != "" {
		if to, err = tr.ParseTo(); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("--to %q is not a time: write %s", o.to, timeForms)
		}
	}
	if !from.Before(to) {
		return time.Time{}, time.Time{}, fmt.Errorf("--from (%s) is not before --to (%s): swap them", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return from, to, nil
}

// start checks the flags, builds the plugin's instance and runs its health check, under
// --timeout (none with --watch, which runs until interrupted): the command asks the engine
// within the context start returns, and calls stop when it is done.
func (c *rootCommand) start(ctx context.Context) (context.Context, context.CancelFunc, *engine, error) {
	switch c.opts.output {
	case outTable, outJSON, outPrometheus:
	default:
		return nil, nil, nil, fmt.Errorf("--output %q is not one of table, json, prometheus", c.opts.output)
	}
	s, err := c.opts.conn.instanceSettings(c.getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	step := c.opts.step
	if step == 0 {
		if step, err = c.scrapeInterval(); err != nil {
			return nil, nil, nil, err
		}
	}
	var stop context.CancelFunc
	if c.opts.watch {
		ctx, stop = context.WithCancel(ctx)
	} else {
		ctx, stop = context.WithTimeout(ctx, c.opts.timeout)
	}
	e, err := newEngine(ctx, s, step, &progress{w: c.stderr, on: isTerminal(c.stderr)})
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	if err := e.check(ctx); err != nil {
		e.progress.set("")
		stop()
		return nil, nil, nil, err
	}
	return ctx, stop, e, nil
}

func isTerminal(w io.Writer) bool {
	if l, ok := w.(*lockedWriter); ok {
		w = l.w
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// colours: on a terminal, unless NO_COLOR is set (https://no-color.org).
func (c *rootCommand) painter() painter {
	return painter{on: isTerminal(c.stdout) && c.getenv("NO_COLOR") == ""}
}

// optimisationNames lists the optimisations a verdict knows, for the flag's help.
func optimisationNames() string {
	names := make([]string, len(verdict.All))
	for i, o := range verdict.All {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// scope is the instance and model part of every query.
func (c *rootCommand) scope() plugin.Scope {
	return plugin.Scope{Instance: c.opts.instance, Model: c.opts.model}
}

// timeline asks for every rule's state of every instance, quiet ones included.
func (c *rootCommand) timeline() plugin.DiagnosisQuery {
	return plugin.DiagnosisQuery{Scope: c.scope(), Format: plugin.FormatTimeline, AllRules: true}
}

// runDiagnosis answers the root command: the findings of the range, or --watch.
func (c *rootCommand) runDiagnosis(ctx context.Context) error {
	if c.opts.scrape != "" {
		return c.runScrape(ctx)
	}
	if c.opts.fromDir != "" {
		return c.runFromDir(ctx)
	}
	from, to, err := c.timeRange()
	if err != nil {
		return err
	}
	return c.diagnose(ctx, from, to)
}

// diagnose prints the findings of the range from the Prometheus of the flags, or --watch.
func (c *rootCommand) diagnose(ctx context.Context, from, to time.Time) error {
	ctx, stop, e, err := c.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if c.opts.watch {
		return c.runWatch(ctx, e)
	}
	qs := []query{
		{refID: "findings", model: plugin.DiagnosisQuery{Scope: c.scope(), Format: plugin.FormatFindings}, from: from, to: to},
		{refID: "timeline", model: c.timeline(), from: from, to: to},
	}
	if c.opts.output == outPrometheus {
		qs = append(qs, query{refID: "alert", model: plugin.DiagnosisQuery{Scope: c.scope(), Format: plugin.FormatAlert}, from: from, to: to})
	}
	ans, err := e.ask(ctx, "evaluating the diagnosis matrix over "+to.Sub(from).String(), qs...)
	if err != nil {
		return err
	}
	if len(ans["findings"]) == 0 {
		return errors.New("internal error: the plugin answered the diagnosis without a findings frame")
	}
	rep := newDiagnosisReport(ans["findings"][0], ans["timeline"], from, to)
	c.code = rep.ExitCode
	switch c.opts.output {
	case outJSON:
		return writeJSON(c.stdout, rep)
	case outPrometheus:
		return writeOpenMetrics(c.stdout, ans["alert"], to)
	}
	return writeDiagnosisTable(c.stdout, rep, c.painter())
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
