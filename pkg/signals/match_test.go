package signals

import "testing"

func TestParseMatch(t *testing.T) {
	cases := []struct {
		name, value string
		wantErr     bool
		exact       string
		// all: the filter reads as no filter (All).
		all        bool
		pass, fail []string
	}{
		{name: "empty passes everything", all: true, pass: []string{"", "vllm-00:8000"}},
		{name: "a dashboard's All, .*, is no filter", value: ".*", all: true, pass: []string{"", "vllm-00:8000"}},
		{name: "a star in a group is no filter", value: "(.*)", all: true, pass: []string{"vllm-00:8000"}},
		{name: "a star among alternatives is no filter", value: "vllm-00:8000|.*", all: true, pass: []string{"vllm-01:8000"}},
		{name: "a star that matches newlines is no filter", value: "(?s).*", all: true, pass: []string{"a\nb"}},
		{name: ".+ leaves out the empty value", value: ".+", pass: []string{"vllm-00:8000"}, fail: []string{""}},
		{name: "a prefix and a star is a filter", value: "vllm-.*", pass: []string{"vllm-00:8000"}, fail: []string{"x"}},
		{name: "an exact value with dots matches itself only", value: "10.0.0.1:8000", exact: "10.0.0.1:8000",
			pass: []string{"10.0.0.1:8000"}, fail: []string{"10.0.0.1:80001", "x10.0.0.1:8000"}},
		{name: "a regular expression is anchored", value: "vllm-0[12]:8000",
			pass: []string{"vllm-01:8000", "vllm-02:8000"}, fail: []string{"vllm-03:8000", "vllm-01:8000x"}},
		{name: "a multi-value variable's alternation", value: "(a|b)", pass: []string{"a", "b"}, fail: []string{"ab"}},
		{name: "invalid", value: "a[", wantErr: true},
		{name: "an unbalanced parenthesis that anchoring would close", value: `a)|(b`, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseMatch("instance", c.value)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if got, ok := m.Exact(); got != c.exact || ok != (c.exact != "") {
				t.Fatalf("Exact() = %q, %v; want %q", got, ok, c.exact)
			}
			if m.All() != c.all {
				t.Fatalf("All() = %v for %q", m.All(), c.value)
			}
			for _, v := range c.pass {
				if !m.Matches(v) {
					t.Errorf("%q does not match %q", v, c.value)
				}
			}
			for _, v := range c.fail {
				if m.Matches(v) {
					t.Errorf("%q matches %q", v, c.value)
				}
			}
		})
	}
}
