// Package clip shortens text quoted in error messages, so that an id, a URL, a setting or a
// backend's answer cannot flood a message shown to the user.
package clip

import "unicode/utf8"

// To returns s cut to at most n bytes, at a character boundary, marked with "…" when cut.
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
