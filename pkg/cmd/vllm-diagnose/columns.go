package main

import (
	"strings"
	"unicode/utf8"
)

// columns lays out cells (the first row the header) two spaces apart, narrowing the widest
// column a character at a time until a line fits in width; a cell longer than its column ends
// in "…".
func columns(cells [][]string, width int) []string {
	const gap = 2
	widths := make([]int, len(cells[0]))
	for _, r := range cells {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	total := func() int {
		n := gap * (len(widths) - 1)
		for _, w := range widths {
			n += w
		}
		return n
	}
	for total() > width {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= 1 {
			break
		}
		widths[widest]--
	}
	out := make([]string, len(cells))
	for j, r := range cells {
		var line strings.Builder
		for i, c := range r {
			c = fit(c, widths[i])
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+gap))
			}
		}
		out[j] = fit(line.String(), width)
	}
	return out
}

// fit cuts s to at most n characters, its last one "…" when cut.
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
