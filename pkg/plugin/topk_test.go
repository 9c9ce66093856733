package plugin

import "testing"

func TestParseTopK(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", 0, false},
		{" 5 ", 5, false},
		{"0", 0, false},
		{"-1", 0, true},
		{"five", 0, true},
		{"$topk", 0, true},
	} {
		got, err := parseTopK(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseTopK(%q) = %d, %v; want %d, error %t", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
