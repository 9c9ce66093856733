package clip

import "testing"

func TestTo(t *testing.T) {
	for _, c := range []struct {
		name, s string
		n       int
		want    string
	}{
		{"short text stays whole", "abc", 3, "abc"},
		{"long text is cut and marked", "abcdef", 3, "abc…"},
		{"a character is never split", "aé€", 4, "aé…"},
		{"a cut inside the first character leaves the mark", "€uro", 2, "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := To(c.s, c.n); got != c.want {
				t.Errorf("To(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
			}
		})
	}
}
