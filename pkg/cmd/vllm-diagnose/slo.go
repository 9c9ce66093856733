package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/spf13/cobra"

	"github.com/seed/vllm-datasource/pkg/plugin"
	"github.com/seed/vllm-datasource/pkg/slo"
)

// sloExample is an objectives file, for the messages and the flag's help.
const sloExample = `[{"name": "ttft-2s", "indicator": "ttft", "threshold": 2, "objective": 0.99, "window": "28d"}]`

func (c *rootCommand) sloCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "slo --slos FILE",
		Short: "Each objective's status per instance and its burn-rate alerts: exit 2 when a page fires, 1 for a ticket",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.runSLO(cmd.Context()) },
	}
	cmd.Flags().StringVar(&c.opts.slosFile, "slos", "", "JSON file: the objectives, as the data source's slos setting, such as "+sloExample)
	cmd.Flags().StringVar(&c.opts.slo, "slo", "", "answer this objective of the file only (default all)")
	return cmd
}

// sloAlert is one burn-rate alert series of the plugin's burn format, at the range's end as an
// alert rule reads it (its last value).
type sloAlert struct {
	SLO      string `json:"slo"`
	Instance string `json:"instance"`
	Model    string `json:"model_name"`
	Severity string `json:"severity"`
	// Value is the series' last value (the burn rate of the pair that holds, else 0); null when
	// the series has none.
	Value   *float64 `json:"value"`
	Firing  bool     `json:"firing"`
	TopRule string   `json:"top_rule"`
}

// sloReport is the JSON output of an slo run.
type sloReport struct {
	header
	Range timeRange `json:"range"`
	// Status are the rows of the plugin's status frame, in its order, every column by name.
	Status []row `json:"status"`
	// Attribution are the rows of the plugin's attribution frame: each objective's misses on
	// each instance by the finding active when they happened, largest share first.
	Attribution []row      `json:"attribution"`
	Alerts      []sloAlert `json:"alerts"`
	Notices     []notice   `json:"notices"`
	ExitCode    int        `json:"exitCode"`
}

// readObjectives reads and checks the objectives file, and the objective --slo names.
func (c *rootCommand) readObjectives() (json.RawMessage, []string, error) {
	file := c.opts.slosFile
	if file == "" {
		return nil, nil, fmt.Errorf("slo needs the objectives: --slos FILE, a JSON list such as %s", sloExample)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the objectives file %s: %v", file, errors.Unwrap(err))
	}
	objectives, err := slo.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the objectives file %s: %v", file, err)
	}
	if len(objectives) == 0 {
		return nil, nil, fmt.Errorf("the objectives file %s holds no objective: write a list such as %s", file, sloExample)
	}
	names := make([]string, len(objectives))
	for i, o := range objectives {
		names[i] = o.Name
	}
	if c.opts.slo == "" {
		return raw, nil, nil
	}
	for _, n := range names {
		if n == c.opts.slo {
			return raw, []string{n}, nil
		}
	}
	return nil, nil, fmt.Errorf("--slo %q is not an objective of %s: they are %s", c.opts.slo, file, strings.Join(names, ", "))
}

// runSLO answers the slo command: the status and the burn-rate alerts of the objectives.
func (c *rootCommand) runSLO(ctx context.Context) error {
	if c.opts.output == outPrometheus {
		return errors.New("slo writes table or json: --output prometheus is for the diagnosis's alert series")
	}
	raw, names, err := c.readObjectives()
	if err != nil {
		return err
	}
	c.opts.conn.slos = raw
	from, to, err := c.timeRange()
	if err != nil {
		return err
	}
	ctx, stop, e, err := c.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	ans, err := e.ask(ctx, "reading the objectives over "+to.Sub(from).String(),
		query{refID: "status", model: plugin.SLOQuery{Scope: c.scope(), SLOs: names, Format: plugin.FormatSLOStatus}, from: from, to: to},
		query{refID: "burn", model: plugin.SLOQuery{Scope: c.scope(), SLOs: names, Format: plugin.FormatSLOBurn}, from: from, to: to},
		query{refID: "attribution", model: plugin.SLOQuery{Scope: c.scope(), SLOs: names, Format: plugin.FormatSLOAttribution}, from: from, to: to})
	if err != nil {
		return err
	}
	rep := sloReport{header: headerOf("slo"), Range: rangeOf(from, to),
		Status: rows(frameNamed(ans["status"], "slo_status")), Attribution: rows(frameNamed(ans["attribution"], "slo_attribution")),
		Alerts:  burnAlerts(ans["burn"]),
		Notices: noticesOf(append(append(append(data.Frames{}, ans["status"]...), ans["burn"]...), ans["attribution"]...))}
	for _, a := range rep.Alerts {
		switch {
		case a.Firing && a.Severity == string(slo.Page):
			rep.ExitCode = exitCritical
		case a.Firing && a.Severity == string(slo.Ticket):
			rep.ExitCode = max(rep.ExitCode, exitWarning)
		}
	}
	c.code = rep.ExitCode
	if c.opts.output == outJSON {
		return writeJSON(c.stdout, rep)
	}
	return writeSLOTable(c, rep)
}

// burnAlerts reads the burn format's series at their last value, as Grafana's reduce (last,
// dropping NaN and null) does before an alert rule's "> 0".
func burnAlerts(fs data.Frames) []sloAlert {
	out := []sloAlert{}
	for _, f := range fs {
		if len(f.Fields) < 2 || f.Fields[1].Len() == 0 {
			continue
		}
		v := f.Fields[1]
		a := sloAlert{SLO: v.Labels["slo"], Instance: v.Labels["instance"], Model: v.Labels["model_name"],
			Severity: v.Labels["severity"], TopRule: v.Labels["top_rule"]}
		for i := v.Len() - 1; i >= 0; i-- {
			if x, ok := v.ConcreteAt(i); ok && !math.IsNaN(x.(float64)) {
				last := x.(float64)
				a.Value, a.Firing = &last, last > 0
				break
			}
		}
		out = append(out, a)
	}
	return out
}

// writeSLOTable prints one line per objective, instance and model (a fleet line per objective
// and model), with the alerts that fire on it (their burn rate) and the finding most misses
// happened under (from the attribution, with its share), then the notices.
func writeSLOTable(c *rootCommand, rep sloReport) error {
	type key struct{ slo, instance, model string }
	alerts := map[key][]sloAlert{}
	for _, a := range rep.Alerts {
		if a.Firing {
			k := key{a.SLO, a.Instance, a.Model}
			alerts[k] = append(alerts[k], a)
		}
	}
	mostMisses := map[key]string{}
	for _, r := range rep.Attribution {
		k := key{str(r, "slo"), str(r, "instance"), str(r, "model_name")}
		if _, seen := mostMisses[k]; !seen { // the rows come largest share first
			mostMisses[k] = fmt.Sprintf("%s (%s)", str(r, "rule"), percent(r["share"]))
		}
	}
	fmt.Fprintf(c.stdout, "Objectives: %s → %s\n", clock(rep.Range.From), clock(rep.Range.To))
	t := newTable(c.stdout, "objective", "instance", "model", "attainment", "target", "budget left", "burn 1h", "burn 6h", "alert", "most misses under")
	for _, r := range rep.Status {
		k := key{str(r, "slo"), str(r, "instance"), str(r, "model_name")}
		alert, top := "—", mostMisses[k]
		var firing []string
		for _, a := range alerts[k] {
			firing = append(firing, fmt.Sprintf("%s (%.1f×)", a.Severity, *a.Value))
		}
		if len(firing) > 0 {
			alert = strings.Join(firing, " ")
		}
		if err := t.Append([]string{str(r, "slo"), str(r, "instance"), str(r, "model_name"),
			percentRange(r["attainment_low"], r["attainment_high"]), percent(r["objective"]), percent(r["budget_remaining"]),
			number(r["burn_rate_1h"]), number(r["burn_rate_6h"]), c.painter().paint(alert), top}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	writeNotices(c.stdout, rep.Notices)
	return nil
}

func percent(v any) string {
	x, ok := v.(float64)
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.2f %%", 100*x)
}

// percentRange shows an interval of shares, one number when it is exact.
func percentRange(low, high any) string {
	l, h := percent(low), percent(high)
	if l == h {
		return l
	}
	return strings.TrimSuffix(l, " %") + "–" + h
}

func number(v any) string {
	x, ok := v.(float64)
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}
