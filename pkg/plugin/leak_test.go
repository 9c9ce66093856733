package plugin

import (
	"fmt"
	"net/http"
	"os"

	"go.uber.org/goleak"
)

// leaked reports the goroutines the package's tests left behind, once the plugin server is
// shut down: a query that never returned, a backend call nobody waits for. The tests' own
// client's idle keep-alive connections are closed first: they are a pool, not a leak.
func leaked() int {
	http.DefaultClient.CloseIdleConnections()
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
		return 1
	}
	return 0
}
