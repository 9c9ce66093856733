package plugin

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// logCapture records every line the plugin and the SDK log, with their key-value pairs, while
// still passing them to the original logger.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (c *logCapture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

func (c *logCapture) add(level, msg string, args []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, level+" "+msg+" "+fmt.Sprint(args...))
}

// pkgLogs holds every log line of the package's tests: TestMain installs it before the plugin
// server starts, since the SDK's middlewares keep the logger they were built with.
var pkgLogs = &logCapture{}

// installLogCapture swaps the SDK's loggers (the plugin's log.DefaultLogger and the SDK's own
// backend.Logger) for ones that record into pkgLogs and pass each line on.
func installLogCapture() {
	log.DefaultLogger = &capturingLogger{c: pkgLogs, next: log.DefaultLogger}
	backend.Logger = &capturingLogger{c: pkgLogs, next: backend.Logger}
}

type capturingLogger struct {
	c    *logCapture
	next log.Logger
	with []any
}

func (l *capturingLogger) log(level, msg string, args []any) {
	l.c.add(level, msg, append(append([]any{}, l.with...), args...))
}

func (l *capturingLogger) Debug(msg string, args ...any) {
	l.log("debug", msg, args)
	l.next.Debug(msg, args...)
}
func (l *capturingLogger) Info(msg string, args ...any) {
	l.log("info", msg, args)
	l.next.Info(msg, args...)
}
func (l *capturingLogger) Warn(msg string, args ...any) {
	l.log("warn", msg, args)
	l.next.Warn(msg, args...)
}
func (l *capturingLogger) Error(msg string, args ...any) {
	l.log("error", msg, args)
	l.next.Error(msg, args...)
}
func (l *capturingLogger) Level() log.Level { return log.Debug }
func (l *capturingLogger) With(args ...any) log.Logger {
	return &capturingLogger{c: l.c, next: l.next.With(args...), with: append(append([]any{}, l.with...), args...)}
}
func (l *capturingLogger) FromContext(ctx context.Context) log.Logger {
	return &capturingLogger{c: l.c, next: l.next.FromContext(ctx), with: l.with}
}
