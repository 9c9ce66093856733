package plugin

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/seed/vllm-datasource/pkg/diagnosis"
	"github.com/seed/vllm-datasource/pkg/signals"
)

// routes are the resource routes: instances and models for editors and template variables,
// the signal catalog and the rule catalog with the thresholds in force.
func (d *Datasource) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /instances", d.listing(func(r *http.Request, start, end time.Time) ([]string, error) {
		return d.prom.Instances(r.Context(), r.URL.Query().Get("model"), start, end)
	}))
	mux.HandleFunc("GET /models", d.listing(func(r *http.Request, start, end time.Time) ([]string, error) {
		return d.prom.Models(r.Context(), r.URL.Query().Get("instance"), start, end)
	}))
	mux.HandleFunc("GET /signals", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, signals.Catalog)
	})
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, _ *http.Request) {
		catalog, err := diagnosis.Catalog(d.settings.Thresholds)
		if err != nil {
			writeError(w, http.StatusBadRequest, "thresholds: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, catalog)
	})
	return mux
}

type listFunc func(r *http.Request, start, end time.Time) ([]string, error)

// listing serves a list of label values; from and to (unix milliseconds, as Grafana's
// variable queries send them) bound the search, else the last 24 hours.
func (d *Datasource) listing(list listFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d.settingsErr != nil {
			writeError(w, http.StatusBadRequest, "data source settings: "+d.settingsErr.Error())
			return
		}
		end := time.Now()
		start := end.Add(-24 * time.Hour)
		if ms, ok := millis(r.URL.Query().Get("from")); ok {
			start = ms
		}
		if ms, ok := millis(r.URL.Query().Get("to")); ok {
			end = ms
		}
		vals, err := list(r, start, end)
		if err != nil {
			// A filter that is not a valid regex is the caller's; only Prometheus's failures are a bad gateway.
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

func millis(s string) (time.Time, bool) {
	var ms int64
	if err := json.Unmarshal([]byte(s), &ms); err != nil || s == "" {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
