package plugin

import (
	"runtime/debug"
	"sync"
	"time"
)

// releaseAfter is how long the plugin holds no evaluation before it gives their memory back.
const releaseAfter = time.Minute

// memoryRelease gives the memory of expired evaluations back to the system once the process
// has held none for a while. An evaluation of a fleet is tens of megabytes at 50 instances and
// hundreds at 500, and the Go runtime keeps freed memory for minutes: it collects only every two
// minutes when nothing allocates, gRPC's pooled message buffers go only at the collection after
// that, and the scavenger then returns pages slowly. A dashboard refreshing more often than releaseAfter
// keeps its memory, as faulting it in again at every refresh would cost more than it saves.
type memoryRelease struct {
	after   time.Duration
	release func()

	mu   sync.Mutex
	live int
	// armed counts the timers started, so that a timer overtaken by a newer hold does nothing.
	armed int
}

// processMemory is the process's: evaluations of every data source instance count.
var processMemory = &memoryRelease{after: releaseAfter, release: freeOSMemory}

// hold counts an evaluation kept in memory.
func (m *memoryRelease) hold() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live++
	m.armed++
}

// drop counts an evaluation let go; the last one starts the wait before the release.
func (m *memoryRelease) drop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live--
	if m.live > 0 {
		return
	}
	m.armed++
	armed := m.armed
	time.AfterFunc(m.after, func() {
		m.mu.Lock()
		idle := m.live == 0 && m.armed == armed
		m.mu.Unlock()
		if idle {
			m.release()
		}
	})
}

// freeOSMemory collects twice and returns the free memory to the system: the first collection
// moves the sync.Pool contents (gRPC's buffers among them) to their victim caches, the second
// frees them.
func freeOSMemory() {
	debug.FreeOSMemory()
	debug.FreeOSMemory()
}
