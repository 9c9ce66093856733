package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/seed/vllm-datasource/pkg/plugin/contract"
)

// The command writes each of the contract's files under the root it is given, as Files has them.
func TestWrite(t *testing.T) {
	root := t.TempDir()
	if err := write(root); err != nil {
		t.Fatal(err)
	}
	files, err := contract.Files()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: wrote %d bytes (%v), want %d", name, len(got), err, len(want))
		}
	}
}
