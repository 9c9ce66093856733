package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/seed/vllm-datasource/pkg/embedprom"
)

// runFromDir diagnoses a TSDB directory (one demo or --scrape saved with --save, or a
// Prometheus's own) through the embedded Prometheus: by default its whole span.
func (c *rootCommand) runFromDir(ctx context.Context) error {
	if c.opts.conn.prometheus != "" {
		return errors.New("--from-dir and --prometheus both given: --from-dir serves the directory itself, so drop one")
	}
	dir := c.opts.fromDir
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--from-dir %s is not a directory: give the directory demo --save or --scrape --save wrote", dir)
	}
	srv, err := embedprom.Open(dir)
	if err != nil {
		return fmt.Errorf("--from-dir: %w", err)
	}
	defer srv.Close()
	first, last, ok := srv.Span()
	if !ok {
		return fmt.Errorf("--from-dir %s holds no samples: give the directory demo --save or --scrape --save wrote", dir)
	}
	from, to := first, last
	if c.opts.from != "" {
		if from, to, err = c.timeRange(); err != nil {
			return err
		}
	}
	c.opts.conn.prometheus = srv.URL()
	return c.diagnose(ctx, from, to)
}

// saveDir checks that dir can receive a new TSDB: it is absent or empty.
func saveDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("--save %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--save %s is not empty: give a new directory (read a saved one with --from-dir)", dir)
	}
	return nil
}
