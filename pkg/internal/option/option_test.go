package option

import (
	"testing"
	"time"
)

func TestPositiveOr(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"a positive int is kept", PositiveOr(7, 20), 7},
		{"zero is unset", PositiveOr(0, 20), 20},
		{"a negative number is unset", PositiveOr(-1, 20), 20},
		{"a positive fraction is kept", PositiveOr(0.05, 0.1), 0.05},
		{"a zero duration is unset", PositiveOr(time.Duration(0), time.Hour), time.Hour},
		{"a positive duration is kept", PositiveOr(time.Minute, time.Hour), time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
