package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The file written is a JSON object of the defaults by their jsonData names, ending in a
// newline as the front end's formatter keeps it.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "defaults.json")
	if err := write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s is not a JSON object of strings: %v", b, err)
	}
	if got["tracesBackend"] != "none" || got["scrapeInterval"] == "" || b[len(b)-1] != '\n' {
		t.Errorf("wrote %s", b)
	}
}
