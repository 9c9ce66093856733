package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// defaultWidth is the live table's width when $COLUMNS does not say the terminal's.
const defaultWidth = 80

// liveWidth is the terminal's width as $COLUMNS gives it, else defaultWidth.
func liveWidth(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// liveScreen redraws the live table in place: the cursor goes back up over the lines drawn
// last, each line is cleared as it is rewritten, and what the last table left below is erased.
type liveScreen struct {
	w     io.Writer
	lines int
}

func (s *liveScreen) draw(table string) error {
	_, err := io.WriteString(s.w, redraw(s.lines, table))
	s.lines = strings.Count(table, "\n")
	return err
}

// redraw is what replaces the prev lines above the cursor with table.
func redraw(prev int, table string) string {
	var b strings.Builder
	if prev > 0 {
		fmt.Fprintf(&b, "\033[%dA", prev)
	}
	for _, line := range strings.SplitAfter(table, "\n") {
		if line != "" {
			b.WriteString("\r\033[2K" + line)
		}
	}
	b.WriteString("\033[J")
	return b.String()
}
