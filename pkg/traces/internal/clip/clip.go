// Package clip shortens text quoted in error messages, so that an id, a URL or a backend's
// answer cannot flood a message shown to the user.
package clip

// To returns s cut to n bytes, marked with "..." when cut.
func To(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
