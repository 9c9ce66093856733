package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

// transition is one state change that --watch prints.
type transition struct {
	header
	Time     string `json:"time"`
	Rule     string `json:"rule"`
	Instance string `json:"instance"`
	Model    string `json:"model_name"`
	// State is pending, firing or resolved; Previous what it was (ok when it was not active).
	State    string `json:"state"`
	Previous string `json:"previous"`
}

type watchKey struct{ rule, instance, model string }

// runWatch evaluates on the rule clock, at each multiple of --every, and prints the changes
// into pending and firing, and the resolution of what was pending or firing; a table written
// to a terminal is instead redrawn in place at each tick (renderLive). With --from it replays
// the range's ticks without waiting and stops at its end; otherwise it follows the wall clock
// until interrupted.
func (c *rootCommand) runWatch(ctx context.Context, e *engine) error {
	o := c.opts
	if o.output == outPrometheus {
		return errors.New("--watch prints state changes as table or json lines: drop --output prometheus, or drop --watch and run vllm-diagnose from a timer")
	}
	if o.every < e.step {
		return fmt.Errorf("--every %s is shorter than the evaluation step %s: choose at least %s", o.every, e.step, e.step)
	}
	var replayTo time.Time
	tick := c.now().Truncate(o.every)
	if o.from != "" {
		from, to, err := c.timeRange()
		if err != nil {
			return err
		}
		tick, replayTo = from.Truncate(o.every).Add(o.every), to
	}
	last := map[watchKey]string{}
	live := c.opts.output == outTable && c.terminal(c.stdout)
	screen, started := &liveScreen{w: c.stdout}, liveSince{}
	for {
		if !replayTo.IsZero() && tick.After(replayTo) {
			return nil
		}
		if replayTo.IsZero() {
			if err := sleepUntil(ctx, tick); err != nil {
				return nil // interrupted: a watch ends by Ctrl-C
			}
		}
		qs := []query{{refID: "timeline", model: c.timeline(), from: tick.Add(-o.every), to: tick}}
		if live {
			qs = append(qs, query{refID: "findings", model: plugin.DiagnosisQuery{Scope: c.scope(), Format: plugin.FormatFindings},
				from: tick.Add(-o.every), to: tick})
		}
		ans, err := e.ask(ctx, "evaluating at "+tick.UTC().Format("15:04:05"), qs...)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil && !replayTo.IsZero():
			return err
		case err != nil:
			// Following the clock, a backend's hiccup is said and the watch goes on.
			fmt.Fprintln(c.stderr, "vllm-diagnose: at "+tick.UTC().Format(time.RFC3339)+": "+oneLine(err.Error()))
			// The next table is drawn below the message rather than over it.
			screen.lines = 0
		case live:
			keys, active := liveInstances(ans["timeline"], rows(frameNamed(ans["findings"], "findings")))
			started.update(active)
			width, height := liveSize(c.stdout, c.getenv)
			if err := screen.draw(renderLive(keys, active, width, height, tick)); err != nil {
				return err
			}
		default:
			for _, t := range changes(last, ans["timeline"], tick) {
				if err := c.writeTransition(t); err != nil {
					return err
				}
			}
		}
		tick = tick.Add(o.every)
	}
}

// changes compares each rule's state at the tick's last step with the last one seen. Steps
// without data (insufficient data, not applicable) change nothing, as an unknown step neither
// fires nor clears a rule in the evaluation itself.
func changes(last map[watchKey]string, timeline data.Frames, at time.Time) []transition {
	var out []transition
	for _, f := range timeline {
		for _, fld := range f.Fields {
			if fld.Type() != data.FieldTypeString || fld.Len() == 0 {
				continue
			}
			k := watchKey{fld.Name, fld.Labels["instance"], fld.Labels["model_name"]}
			now := fld.At(fld.Len() - 1).(string)
			prev := last[k]
			if prev == "" {
				prev = "ok"
			}
			var state string
			switch now {
			case "pending", "firing":
				if now != prev {
					state = now
				}
			case "ok":
				if prev == "pending" || prev == "firing" {
					state = "resolved"
				}
			default:
				continue
			}
			last[k] = now
			if state != "" {
				out = append(out, transition{header: headerOf("transition"), Time: at.UTC().Format(time.RFC3339),
					Rule: k.rule, Instance: k.instance, Model: k.model, State: state, Previous: prev})
			}
		}
	}
	return out
}

func (c *rootCommand) writeTransition(t transition) error {
	if c.opts.output == outJSON {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", b)
		return err
	}
	return writeTransitionLine(c.stdout, t, c.painter())
}

func writeTransitionLine(w io.Writer, t transition, p painter) error {
	model := ""
	if t.Model != "" {
		model = " (" + t.Model + ")"
	}
	pad := strings.Repeat(" ", max(0, len("resolved")-len(t.State)))
	_, err := fmt.Fprintf(w, "%s  %s%s  %s on %s%s (was %s)\n", t.Time, p.paint(t.State), pad, t.Rule, t.Instance, model, t.Previous)
	return err
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
