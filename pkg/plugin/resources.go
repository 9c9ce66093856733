package plugin

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/plan"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// routes are the resource routes: instances and models for editors and template variables,
// the signal catalog and the rule catalog with the thresholds in force.
func (d *Datasource) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /instances", d.listing(plan.VariableInstances, "model"))
	mux.HandleFunc("GET /models", d.listing(plan.VariableModels, "instance"))
	mux.HandleFunc("GET /signals", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, signals.Catalog)
	})
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, _ *http.Request) {
		// The thresholds in force are those of valid settings: with invalid ones, no query runs.
		if d.settingsFailed(w) {
			return
		}
		catalog, err := diagnosis.Catalog(d.settings.Thresholds)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, catalog)
	})
	return mux
}

// settingsFailed answers a resource call with the settings' error, if they have one.
func (d *Datasource) settingsFailed(w http.ResponseWriter) bool {
	if d.settingsErr == nil {
		return false
	}
	writeError(w, http.StatusBadRequest, "data source settings: "+d.settingsErr.Error())
	return true
}

// listing serves a template variable's (or an editor picker's) values: the label values of
// kind, filtered by the filter parameter; from and to (unix milliseconds, as Grafana's
// variable queries send them) bound the search, else the last 24 hours (plan.NewVariables).
func (d *Datasource) listing(kind, filter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d.settingsFailed(w) {
			return
		}
		params := r.URL.Query()
		p, err := plan.NewVariables(d.planSettings(), kind, params.Get(filter), millis(params.Get("from")), millis(params.Get("to")), time.Now())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		vals, err := d.prom.LabelValues(r.Context(), p.Lookup)
		if err != nil {
			// Only Prometheus's failures are a bad gateway.
			status := http.StatusBadRequest
			if backend.IsDownstreamError(err) {
				status = http.StatusBadGateway
			}
			writeError(w, status, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, vals)
	}
}

// millis reads unix milliseconds; the zero time when s is empty or not a number.
func millis(s string) time.Time {
	var ms int64
	if err := json.Unmarshal([]byte(s), &ms); err != nil || s == "" {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
