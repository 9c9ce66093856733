package plugin

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// releases counts a memoryRelease's releases on a channel.
func releases(after time.Duration) (*memoryRelease, chan struct{}) {
	ch := make(chan struct{}, 16)
	return &memoryRelease{after: after, release: func() { ch <- struct{}{} }}, ch
}

func released(ch chan struct{}, within time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(within):
		return false
	}
}

func TestMemoryReleasedOnceNoEvaluationIsHeld(t *testing.T) {
	m, ch := releases(10 * time.Millisecond)
	m.hold()
	m.hold()
	m.drop()
	if released(ch, 100*time.Millisecond) {
		t.Fatal("released while an evaluation is still held")
	}
	m.drop()
	if !released(ch, 5*time.Second) {
		t.Fatal("not released once the last evaluation went")
	}
}

func TestMemoryNotReleasedWhenAnEvaluationComesBackInTime(t *testing.T) {
	m, ch := releases(200 * time.Millisecond)
	m.hold()
	m.drop()
	m.hold()
	if released(ch, 400*time.Millisecond) {
		t.Fatal("released although a new evaluation came before the wait ended")
	}
	m.drop()
	if !released(ch, 5*time.Second) {
		t.Fatal("not released after the second evaluation went")
	}
}

func TestEvalCacheCountsWhatItHolds(t *testing.T) {
	m, ch := releases(10 * time.Millisecond)
	c := newEvalCache(20 * time.Millisecond)
	c.memory = m
	compute := func(context.Context) (*Diagnosis, error) { return &Diagnosis{}, nil }
	for i := range maxEvaluations + 4 {
		key := newEvalKey(nil, nil, strconv.Itoa(i), "", time.Minute, time.Unix(0, 0), time.Unix(3600, 0))
		if _, _, err := c.get(context.Background(), key, compute); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	held, kept := m.live, len(c.entries)
	c.mu.Unlock()
	if held != kept {
		t.Errorf("%d evaluations counted as held, %d kept", held, kept)
	}
	if !released(ch, 5*time.Second) {
		t.Fatal("not released once every evaluation expired")
	}
}
