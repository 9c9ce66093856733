package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

// engine is the plugin's own data source instance, run in-process: the CLI asks it what
// Grafana would ask over gRPC.
type engine struct {
	settings backend.DataSourceInstanceSettings
	queries  backend.QueryDataHandler
	health   backend.CheckHealthHandler
	step     time.Duration
	progress *progress
}

func newEngine(ctx context.Context, s backend.DataSourceInstanceSettings, step time.Duration, p *progress) (*engine, error) {
	inst, err := plugin.NewDatasource(ctx, s)
	if err != nil {
		return nil, err
	}
	q, okQ := inst.(backend.QueryDataHandler)
	h, okH := inst.(backend.CheckHealthHandler)
	if !okQ || !okH {
		return nil, errors.New("internal error: the plugin's instance answers neither queries nor health checks")
	}
	return &engine{settings: s, queries: q, health: h, step: step, progress: p}, nil
}

func (e *engine) pluginContext() backend.PluginContext {
	return backend.PluginContext{PluginID: "seed-vllm-datasource", DataSourceInstanceSettings: &e.settings}
}

// check runs the data source's health check, as Grafana's Save & test does: an unreachable
// Prometheus, one that is not Prometheus or holds no vLLM metrics, and invalid settings all
// stop here with the check's message.
func (e *engine) check(ctx context.Context) error {
	e.progress.set("checking Prometheus")
	res, err := e.health.CheckHealth(ctx, &backend.CheckHealthRequest{PluginContext: e.pluginContext()})
	if err != nil {
		return err
	}
	if res.Status != backend.HealthStatusOk {
		return errors.New(res.Message)
	}
	return nil
}

// query is one query of the plugin's query model, built as its typed model: a misspelt field
// does not compile.
type query struct {
	refID    string
	model    plugin.Query
	from, to time.Time
}

// ask runs the queries in one request, as one Grafana panel refresh would, and returns each
// one's frames; any query's error is the answer's error.
func (e *engine) ask(ctx context.Context, what string, qs ...query) (map[string]data.Frames, error) {
	e.progress.set(what)
	defer e.progress.set("")
	req := &backend.QueryDataRequest{PluginContext: e.pluginContext()}
	for _, q := range qs {
		raw, err := plugin.MarshalQuery(q.model)
		if err != nil {
			return nil, err
		}
		req.Queries = append(req.Queries, backend.DataQuery{RefID: q.refID, QueryType: string(q.model.QueryType()), JSON: raw,
			Interval: e.step, MaxDataPoints: 43200, TimeRange: backend.TimeRange{From: q.from, To: q.to}})
	}
	resp, err := e.queries.QueryData(ctx, req)
	if err != nil {
		return nil, err
	}
	out := map[string]data.Frames{}
	for _, q := range qs {
		r, ok := resp.Responses[q.refID]
		if !ok {
			return nil, fmt.Errorf("internal error: the plugin did not answer query %s", q.refID)
		}
		if r.Error != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, r.Error
		}
		out[q.refID] = r.Frames
	}
	return out, nil
}

// row is one frame row by field name, in JSON's types: times as RFC 3339 in UTC, missing
// numbers and times as null. Reading by name means a column the plugin adds appears here too.
type row = map[string]any

func rows(f *data.Frame) []row {
	if f == nil {
		return []row{}
	}
	n := f.Rows()
	out := make([]row, n)
	for i := range n {
		r := row{}
		for _, fld := range f.Fields {
			r[fld.Name] = cell(fld, i)
		}
		out[i] = r
	}
	return out
}

func cell(f *data.Field, i int) any {
	v, ok := f.ConcreteAt(i)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		if x != x || x > 1.7e308 || x < -1.7e308 {
			return nil
		}
		return x
	case float32:
		return cell(data.NewField("", nil, []float64{float64(x)}), 0)
	default:
		return x
	}
}

// notice is a frame notice as the outputs show it.
type notice struct {
	Severity string `json:"severity"`
	Text     string `json:"text"`
}

func noticesOf(frames data.Frames) []notice {
	seen := map[string]bool{}
	out := []notice{}
	for _, f := range frames {
		if f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			if seen[n.Text] {
				continue
			}
			seen[n.Text] = true
			out = append(out, notice{Severity: n.Severity.String(), Text: n.Text})
		}
	}
	return out
}

func str(r row, key string) string {
	s, _ := r[key].(string)
	return s
}

// progress is the line that says what is being fetched, on stderr while it is a terminal;
// otherwise it writes nothing.
type progress struct {
	w  io.Writer
	on bool
}

func (p *progress) set(what string) {
	if p == nil || !p.on {
		return
	}
	// \r and the erase-line sequence rewrite the one line in place.
	if what == "" {
		fmt.Fprint(p.w, "\r\033[K")
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s…", what)
}
