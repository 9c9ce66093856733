// Command contract-files writes pkg/plugin's contract, from its Go declarations, to the files
// the front end and Grafana read: the JSON schema of the query types and of the settings
// (src/schema/v0alpha1/) and the TypeScript types (src/types.gen.ts); see pkg/plugin/contract.
// pkg/plugin/contract's TestFilesAreCurrent fails while a committed file differs. After a change
// of a query model, an enumeration or a setting:
//
//	go generate ./pkg/plugin
//
// or, from the repository's root, go run ./pkg/cmd/contract-files.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seed/vllm-datasource/pkg/plugin/contract"
)

func main() {
	root := flag.String("root", ".", "the repository's root, where the files are written")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "contract-files:", err)
		os.Exit(1)
	}
}

func write(root string) error {
	files, err := contract.Files()
	if err != nil {
		return err
	}
	for name, body := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
