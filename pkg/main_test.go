package main

import (
	"testing"

	"google.golang.org/grpc/mem"
)

func TestAnswersOver32KiBAreMarshalledIntoBuffersLessThanTwiceTheirSize(t *testing.T) {
	for _, size := range []int{33_000, 45_000, 65_537, 100_000, 376_000, 1 << 20} {
		buf := mem.DefaultBufferPool().Get(size)
		if got := cap(*buf); got < size || got >= 2*size {
			t.Errorf("an answer of %d bytes gets a buffer of %d", size, got)
		}
		mem.DefaultBufferPool().Put(buf)
	}
}
