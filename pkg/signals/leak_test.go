package signals

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (a fan-out nobody waited for).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
