// Command settings-defaults writes the data source settings' defaults, from their one Go home
// (pkg/plugin's settingsDefaults), to the JSON file that the front end's test of its
// SETTINGS_DEFAULTS reads (src/types.test.ts). pkg/plugin's TestSettingsDefaultsFile fails
// while the committed file differs from the Go defaults. After a change of a default:
//
//	go generate ./pkg/plugin
//
// or, from the repository's root, go run ./pkg/cmd/settings-defaults.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/seed/vllm-datasource/pkg/plugin"
)

func main() {
	out := flag.String("o", "pkg/plugin/testdata/settings_defaults.json", "the file to write")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "settings-defaults:", err)
		os.Exit(1)
	}
}

func write(path string) error {
	b, err := plugin.SettingsDefaultsJSON()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
