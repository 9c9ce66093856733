package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/verdict"
)

// explainReport is the JSON output of explain.
type explainReport struct {
	header
	TraceID string `json:"traceId"`
	// Explanation is the one row of the plugin's explanation frame and its details frame,
	// every column by name.
	Explanation row   `json:"explanation"`
	Stages      []row `json:"stages"`
	// Findings are the findings frame's rows for the rules active while the request ran.
	Findings      []row    `json:"findings"`
	Notices       []notice `json:"notices"`
	WorstSeverity string   `json:"worstSeverity"`
	ExitCode      int      `json:"exitCode"`
}

func frameNamed(fs data.Frames, name string) *data.Frame {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// runExplain explains one request with the plugin's explain query, then reads the findings
// active while it ran, on its instance, with the plugin's diagnosis query.
func (c *rootCommand) runExplain(ctx context.Context, traceID string) error {
	if c.opts.output == outPrometheus {
		return errors.New("explain writes table or json: --output prometheus is for the diagnosis's alert series")
	}
	from, to, err := c.timeRange()
	if err != nil {
		return err
	}
	if c.opts.conn.tempo == "" && c.opts.conn.jaeger == "" {
		return errors.New("explain reads the request's spans: give --jaeger URL or --tempo URL")
	}
	ctx, stop, e, err := c.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	ans, err := e.ask(ctx, "explaining trace "+traceID,
		query{refID: "explain", model: plugin.ExplainQuery{TraceID: traceID}, from: from, to: to})
	if err != nil {
		return err
	}
	frames := ans["explain"]
	explFrame := explanationFrame(frames)
	expl := rows(explFrame)
	if len(expl) != 1 {
		return errors.New("internal error: the plugin's explain answer has no explanation row")
	}
	rep := explainReport{header: headerOf("explain"), TraceID: traceID, Explanation: expl[0],
		Stages: rows(frameNamed(frames, "stages")), Findings: []row{}, Notices: noticesOf(frames)}

	active := strings.FieldsFunc(str(expl[0], "findings"), func(r rune) bool { return r == ',' })
	if len(active) > 0 {
		start, err1 := time.Parse(time.RFC3339Nano, str(expl[0], "start"))
		end, err2 := time.Parse(time.RFC3339Nano, str(expl[0], "end"))
		if err1 != nil || err2 != nil {
			return errors.New("internal error: the explanation has no start or end time")
		}
		// The plugin evaluates at least one step; the findings reaching into the request are
		// those it reports over its interval.
		model := plugin.DiagnosisQuery{Format: plugin.FormatFindings, Rules: active,
			Scope: plugin.Scope{Instance: regexp.QuoteMeta(str(expl[0], "instance"))}}
		if m := str(expl[0], "model"); m != "" {
			model.Model = regexp.QuoteMeta(m)
		}
		fa, err := e.ask(ctx, "reading the findings of the request's moment",
			query{refID: "findings", model: model, from: start.Add(-e.step), to: end.Add(e.step)})
		if err != nil {
			return err
		}
		for _, f := range rows(fa["findings"][0]) {
			if slices.Contains(active, str(f, "rule")) && str(f, "instance") == str(expl[0], "instance") {
				rep.Findings = append(rep.Findings, f)
			}
		}
	}
	rep.WorstSeverity, rep.ExitCode = verdictOf(rep.Findings)
	c.code = rep.ExitCode
	if c.opts.output == outJSON {
		return writeJSON(c.stdout, rep)
	}
	return writeExplainTable(c.stdout, explFrame, rep, c.painter())
}

// explanationFrame is the plugin's explanation frame with its details frame's columns after
// its own (both one row): every column of the explanation, as one row of the report.
func explanationFrame(fs data.Frames) *data.Frame {
	f := frameNamed(fs, "explanation")
	if f == nil {
		return nil
	}
	out := data.NewFrame(f.Name, f.Fields...)
	if d := frameNamed(fs, "explanation_details"); d != nil {
		out.Fields = append(out.Fields, d.Fields...)
	}
	return out
}

// writeExplainTable shows every column of the explanation under its display name, then the
// findings of the request's moment.
func writeExplainTable(w io.Writer, f *data.Frame, rep explainReport, p painter) error {
	fmt.Fprintf(w, "Request %s\n", rep.TraceID)
	t := newTable(w, "", "")
	for _, fld := range f.Fields {
		name := fld.Name
		if fld.Config != nil && fld.Config.DisplayNameFromDS != "" {
			name = fld.Config.DisplayNameFromDS
		} else if fld.Config != nil && fld.Config.DisplayName != "" {
			name = fld.Config.DisplayName
		}
		v := text(rep.Explanation[fld.Name])
		if fld.Config != nil && fld.Config.Unit == "s" && v != "" {
			v += " s"
		}
		if fld.Type().Time() {
			v = clock(text(rep.Explanation[fld.Name]))
		}
		if err := t.Append([]string{name, v}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w, "\nFindings while it ran:")
		t := newTable(w, "severity", "rule", "when", "cause", "action", "evidence", "confidence")
		for _, f := range rep.Findings {
			if err := t.Append([]string{p.paint(str(f, "severity")), str(f, "rule"), span(f), str(f, "cause"), str(f, "action"),
				str(f, "evidence"), str(f, "confidence")}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	writeNotices(w, rep.Notices)
	return nil
}

// verdictReport is the JSON output of verdict.
type verdictReport struct {
	header
	Range    timeRange `json:"range"`
	Baseline string    `json:"baseline"`
	// Verdicts are the plugin's verdict frame's rows, every column by name.
	Verdicts []row `json:"verdicts"`
	// Rule is --rule; Promises the plugin's promise frame's rows, every column by name.
	Rule     string   `json:"rule,omitempty"`
	Promises []row    `json:"promises,omitempty"`
	Notices  []notice `json:"notices"`
	ExitCode int      `json:"exitCode"`
}

// runVerdict asks the plugin whether each optimisation did what it should, between the
// baseline window and the range; with --rule, whether the signal that rule's advice promises to
// move moved, which then alone sets the exit code: 1 when on some instance it did not move or
// got worse.
func (c *rootCommand) runVerdict(ctx context.Context) error {
	if c.opts.output == outPrometheus {
		return errors.New("verdict writes table or json: --output prometheus is for the diagnosis's alert series")
	}
	bFrom, bTo, ok := strings.Cut(c.opts.baseline, "..")
	if !ok || strings.TrimSpace(bFrom) == "" || strings.TrimSpace(bTo) == "" {
		return fmt.Errorf("--baseline %q is not FROM..TO: write it as now-7d..now-6d, or with times in %s", c.opts.baseline, timeForms)
	}
	from, to, err := c.timeRange()
	if err != nil {
		return err
	}
	ctx, stop, e, err := c.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	model := plugin.VerdictQuery{Scope: c.scope(), BaselineFrom: strings.TrimSpace(bFrom), BaselineTo: strings.TrimSpace(bTo), Rule: c.opts.rule}
	for _, o := range c.opts.optimisations {
		model.Optimisations = append(model.Optimisations, verdict.Optimisation(o))
	}
	ans, err := e.ask(ctx, "comparing the baseline window with the range", query{refID: "verdict", model: model, from: from, to: to})
	if err != nil {
		return err
	}
	frames := ans["verdict"]
	rep := verdictReport{header: headerOf("verdict"), Range: rangeOf(from, to), Baseline: c.opts.baseline,
		Verdicts: rows(frameNamed(frames, "verdict")), Notices: noticesOf(frames)}
	if c.opts.rule != "" {
		rep.Rule, rep.Promises = c.opts.rule, rows(frameNamed(frames, "promise"))
		for _, r := range rep.Promises {
			if o := str(r, "outcome"); o == string(verdict.DidNotMove) || o == string(verdict.GotWorse) {
				rep.ExitCode = exitWarning
			}
		}
	} else {
		for _, r := range rep.Verdicts {
			if str(r, "verdict") == string(verdict.DidNotWork) {
				rep.ExitCode = exitWarning
			}
		}
	}
	c.code = rep.ExitCode
	if c.opts.output == outJSON {
		return writeJSON(c.stdout, rep)
	}
	fmt.Fprintf(c.stdout, "Verdicts: baseline %s against %s → %s\n", c.opts.baseline, clock(rep.Range.From), clock(rep.Range.To))
	t := newTable(c.stdout, "instance", "model", "optimisation", "expected", "baseline", "current", "change", "verdict", "reason")
	for _, r := range rep.Verdicts {
		if err := t.Append([]string{str(r, "instance"), str(r, "model_name"), str(r, "optimisation"), str(r, "expected"),
			str(r, "baseline"), str(r, "current"), str(r, "change"), c.painter().paint(str(r, "verdict")), str(r, "reason")}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if rep.Rule != "" {
		if err := writePromiseTable(c.stdout, rep, c.painter()); err != nil {
			return err
		}
	}
	writeNotices(c.stdout, rep.Notices)
	return nil
}

// writePromiseTable prints, per instance and model, whether the signal --rule's advice
// promises to move moved.
func writePromiseTable(w io.Writer, rep verdictReport, p painter) error {
	fmt.Fprintf(w, "\nPromise of %s's advice:\n", rep.Rule)
	t := newTable(w, "instance", "model", "metric", "direction", "before", "after", "change", "outcome", "why")
	for _, r := range rep.Promises {
		change := ""
		if v, ok := r["change"].(float64); ok {
			change = fmt.Sprintf("%+.0f%%", 100*v)
		}
		if err := t.Append([]string{str(r, "instance"), str(r, "model_name"), str(r, "metric"), str(r, "direction"),
			text(r["before"]), text(r["after"]), change, p.paint(str(r, "outcome")), str(r, "sentence")}); err != nil {
			return err
		}
	}
	return t.Render()
}
