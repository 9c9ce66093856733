//go:build ignore

// Writes src/settings_defaults.json, the settings defaults the config editor shows, from the
// backend's (plugin.EditorDefaults). Run by `go generate ./pkg/plugin`.
package main

import (
	"log"
	"os"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

func main() {
	if err := os.WriteFile(plugin.SettingsDefaultsFile, plugin.EditorDefaultsJSON(), 0o644); err != nil {
		log.Fatal(err)
	}
}
