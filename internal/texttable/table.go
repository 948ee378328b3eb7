package texttable

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Table is a tabwriter whose lines lose the padding tabwriter leaves after
// their last cell: cells are separated by tabs, rows end with a newline,
// and each cell is padded to the widest of its column plus two spaces.
type Table struct {
	out *bytes.Buffer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

// NewTable starts a table that Flush appends to out.
func NewTable(out *bytes.Buffer) *Table {
	t := &Table{out: out}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// Write adds tab-separated cells and newline-ended rows.
func (t *Table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush aligns the rows written so far and appends them to the output.
func (t *Table) Flush() {
	t.tw.Flush()
	for line := range bytes.Lines(t.buf.Bytes()) {
		t.out.Write(bytes.TrimRight(line, " \n"))
		t.out.WriteByte('\n')
	}
	t.buf.Reset()
}

// RuleMarker, as the first cell of a row (the other cells empty), marks
// the row WriteRuled replaces with a rule across the table.
const RuleMarker = "\x1e"

// WriteRuled appends the aligned table to dst, each line without its
// trailing blanks, with every RuleMarker row replaced by
// "  ──── text ─────…", as wide as the widest other line.
func WriteRuled(dst *bytes.Buffer, table []byte, text string) {
	width := 0
	for line := range bytes.Lines(table) {
		if !bytes.HasPrefix(line, []byte(RuleMarker)) {
			width = max(width, utf8.RuneCount(bytes.TrimRight(line, " \n")))
		}
	}
	dst.Grow(len(table) + len(text) + 3*width)
	for line := range bytes.Lines(table) {
		if !bytes.HasPrefix(line, []byte(RuleMarker)) {
			dst.Write(bytes.TrimRight(line, " \n"))
			dst.WriteByte('\n')
			continue
		}
		rule := "  ──── " + text + " "
		dst.WriteString(rule)
		if pad := width - utf8.RuneCountInString(rule); pad > 0 {
			dst.WriteString(strings.Repeat("─", pad))
		} else {
			dst.WriteString("────")
		}
		dst.WriteByte('\n')
	}
}

// FitLines cuts every line of text longer than width columns to width,
// its last column an ellipsis.
func FitLines(text []byte, width int) []byte {
	out := make([]byte, 0, len(text))
	for line := range bytes.Lines(text) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		if utf8.RuneCount(body) > width {
			n, i := 0, 0
			for i < len(body) && n < width-1 {
				_, size := utf8.DecodeRune(body[i:])
				i += size
				n++
			}
			body = append(body[:i:i], "…"...)
		}
		out = append(out, body...)
		if bytes.HasSuffix(line, []byte("\n")) {
			out = append(out, '\n')
		}
	}
	return out
}

// Printable returns text with every control character but the newline
// and the tab (C0, DEL and C1) written as a visible \xNN escape, and
// every invalid UTF-8 byte likewise: the tables print names that come
// from a runtime or a snapshot file, and an escape sequence in an image
// tag would otherwise reach the operator's terminal (retitle it, recolour
// or rewrite the rows they read). Text with none is returned as it is.
func Printable(text []byte) []byte { return escape(text, true) }

// PrintableLine is Printable for text that must stay on one line (a
// table cell, a status line, an error): the newline and the tab are
// escaped too. A string with nothing to escape is returned as it is,
// without a copy.
func PrintableLine(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unprintable(r, size, false) {
			return string(escape([]byte(s), false))
		}
		i += size
	}
	return s
}

// escape is Printable, keeping the newline and the tab when layout is
// set.
func escape(text []byte, layout bool) []byte {
	clean := true
	for i := 0; i < len(text) && clean; {
		r, size := utf8.DecodeRune(text[i:])
		clean = !unprintable(r, size, layout)
		i += size
	}
	if clean {
		return text
	}
	out := make([]byte, 0, len(text)+16)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if unprintable(r, size, layout) {
			for _, c := range text[i : i+size] {
				out = fmt.Appendf(out, `\x%02x`, c)
			}
		} else {
			out = append(out, text[i:i+size]...)
		}
		i += size
	}
	return out
}

// unprintable reports whether the rune (size bytes, utf8.RuneError of
// size 1 for an invalid byte) is one Printable escapes; the newline and
// the tab are not when layout is set.
func unprintable(r rune, size int, layout bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case layout && (r == '\n' || r == '\t'):
		return false
	}
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f
}
