package plugin

import (
	"bytes"
	"os"
	"testing"
)

// The front end's settings defaults (src/settings_defaults.json, read by src/types.ts) are the
// backend's: the committed file must be what the generator writes now.
func TestSettingsDefaultsFileIsCurrent(t *testing.T) {
	committed, err := os.ReadFile(SettingsDefaultsFile)
	if err != nil {
		t.Fatalf("%v: run `go generate ./pkg/plugin` to write it", err)
	}
	if want := EditorDefaultsJSON(); !bytes.Equal(committed, want) {
		t.Errorf("%s is stale: run `go generate ./pkg/plugin`\ncommitted:\n%s\nthe backend's defaults:\n%s", SettingsDefaultsFile, committed, want)
	}
}
