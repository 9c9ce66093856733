package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// keys are a JSON object's keys in the order written.
func keys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestEveryReportOpensWithTheHeader: each JSON answer writes the schema's properties of its
// kind, in the schema's order, the shared header's first.
func TestEveryReportOpensWithTheHeader(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("schema", "output.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Properties json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind string
		doc  any
	}{
		{"diagnosis", diagnosisReport{header: headerOf("diagnosis")}},
		{"explain", explainReport{header: headerOf("explain")}},
		{"verdict", verdictReport{header: headerOf("verdict"), Rule: "kv_cache_saturated", Promises: []row{{}}}},
		{"slo", sloReport{header: headerOf("slo")}},
		{"transition", transition{header: headerOf("transition")}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			doc, err := json.Marshal(c.doc)
			if err != nil {
				t.Fatal(err)
			}
			want := keys(t, schema.Defs[c.kind].Properties)
			if got := keys(t, doc); !slices.Equal(got, want) || len(want) < 3 || want[0] != "schemaVersion" || want[1] != "kind" {
				t.Fatalf("%s writes the keys %v, its schema lists %v", c.kind, got, want)
			}
		})
	}
}
