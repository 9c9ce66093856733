package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// defaultWidth is the live table's width when neither $COLUMNS nor the terminal says it.
const defaultWidth = 80

// liveSize is the terminal's width and height: $COLUMNS and $LINES when set (shells keep them
// unexported, so a user sets them to override), else what the terminal reports, else
// defaultWidth and no height limit (0).
func liveSize(w io.Writer, getenv func(string) string) (width, height int) {
	width, height = defaultWidth, 0
	if l, ok := w.(*lockedWriter); ok {
		w = l.w
	}
	if f, ok := w.(*os.File); ok {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			width, height = cols, rows
		}
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		width = n
	}
	if n, err := strconv.Atoi(getenv("LINES")); err == nil && n > 0 {
		height = n
	}
	return width, height
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
