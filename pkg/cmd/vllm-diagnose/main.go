// Command vllm-diagnose runs the vLLM Diagnosis plugin's engine from a terminal or a CI job:
// the findings of a time range, one request explained, the verdict of an optimisation, or the
// service-level objectives' status and burn-rate alerts.
//
//	vllm-diagnose --prometheus URL [--jaeger URL | --tempo URL] [--since 30m | --from T --to T]
//	    [--instance RE] [--model RE] [--label-matchers '{job="vllm"}'] [--thresholds FILE]
//	    [--output table|json|prometheus] [--watch [--every 1m]]
//	vllm-diagnose explain TRACE_ID --prometheus URL --jaeger URL
//	vllm-diagnose verdict --baseline FROM..TO --prometheus URL [--since 1h | --from T --to T] [--rule RULE]
//	vllm-diagnose slo --slos FILE [--slo NAME] --prometheus URL [--since 1h | --from T --to T]
//	vllm-diagnose --scrape URL[,URL…] [--scrape-interval 15s] [--watch] [--save DIR]
//	vllm-diagnose --from-dir DIR [--from T --to T]
//	vllm-diagnose demo [--scenario NAME] [--generation v0|v1] [--list] [--save DIR]
//
// Without a Prometheus, --scrape, --from-dir and demo run an embedded one (package embedprom):
// scraping vLLM's /metrics, reading a saved TSDB directory, or holding a simulated scenario.
// A flag its mode would ignore (--since with one that chooses its own range, --save without
// --scrape, …) is bad input rather than silently dropped.
//
// It does not re-implement the diagnosis: it builds the data source settings Grafana would
// send (the names of README's Settings), creates the plugin's own instance in-process with
// plugin.NewDatasource, checks its health, and renders the frames its QueryData returns. The
// terminal and Grafana therefore cannot disagree.
//
// Exit codes: 0 nothing firing, 1 warnings (or an optimisation that did not work; with verdict
// --rule, the signal the rule's advice promises to move did not move or got worse on some
// instance; or a ticket burn-rate alert), 2 critical findings (or a page burn-rate alert), 3 a
// backend unreachable or bad input. Every error is one line on stderr.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// Exit codes, documented in the README.
const (
	exitOK       = 0
	exitWarning  = 1
	exitCritical = 2
	exitError    = 3
)

func main() {
	// The plugin's SDK logs to stderr as a plugin does to Grafana; a command's stderr is for
	// its one-line messages, so the SDK's log is kept only when asked for.
	if os.Getenv("VLLM_DIAGNOSE_DEBUG") == "" {
		log.DefaultLogger = log.NewNullLogger()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run is the command, with its outside world passed in so that tests drive it the same way.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd := newRootCommand(ctx, stdout, stderr, getenv)
	cmd.SetArgs(args)
	code, err := cmd.execute()
	if err != nil {
		fmt.Fprintln(stderr, "vllm-diagnose: "+oneLine(err.Error()))
		return exitError
	}
	return code
}

// oneLine folds a message onto one line: CI logs and terminals show one line per error.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")), " ")
}
