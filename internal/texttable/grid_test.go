package texttable

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGridMatchesTable checks the grid against the tabwriter it replaced:
// the same cells give the same bytes.
func TestGridMatchesTable(t *testing.T) {
	words := []string{"", "a", "nginx", "default/web-7d9", "日本-é", strings.Repeat("n", 150), "remove #12 node-limit"}
	tests := []struct {
		name  string
		extra string // a cell mixed into the words
		plain bool   // the grid aligns it itself
	}{
		{name: "ASCII cells are padded by length", plain: true},
		{name: "non-ASCII cells are padded by runes, not bytes", extra: "é日", plain: true},
		{name: "a tab in a cell is a cell break, as the tabwriter makes it", extra: "a\tb"},
		{name: "a line break in a cell splits the table, as the tabwriter does", extra: "two\nlines"},
		{name: "the tabwriter escape byte is kept as the tabwriter keeps it", extra: "x\xffy\xffz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(5) {
				rng := rand.New(rand.NewPCG(seed, 1))
				const ncol, nrow = 5, 60
				g := NewGrid(ncol, nrow)
				var want bytes.Buffer
				tab := NewTable(&want)
				for r := range nrow {
					cells := make([]string, ncol)
					for c := range cells {
						cells[c] = words[rng.IntN(len(words))]
						if tt.extra != "" && (r*ncol+c)%17 == 3 {
							cells[c] = tt.extra
						}
						g.Cell(cells[c])
					}
					tab.Write([]byte(strings.Join(cells, "\t") + "\n"))
				}
				tab.Flush()
				var got bytes.Buffer
				g.WriteTo(&got)
				if got.String() != want.String() {
					t.Fatalf("seed %d: grid\n%s\ntable\n%s", seed, got.String(), want.String())
				}
				if g.plain != tt.plain {
					t.Errorf("seed %d: aligned by the grid itself %v, want %v", seed, g.plain, tt.plain)
				}
			}
		})
	}
}

func TestWriteRuled(t *testing.T) {
	var tb bytes.Buffer
	tab := NewTable(&tb)
	tab.Write([]byte("  #\tNAME\tSIZE\n  1\tweb:1\t1.0 GiB\n" + RuleMarker + "\t\t\n  2\tapp:1\t2.0 GiB\n"))
	tab.Flush()
	var got bytes.Buffer
	WriteRuled(&got, tb.Bytes(), "cut line")
	want := "  #  NAME   SIZE\n  1  web:1  1.0 GiB\n  ──── cut line ───\n  2  app:1  2.0 GiB\n"
	if got.String() != want {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want)
	}
}

func TestFitLines(t *testing.T) {
	tests := []struct {
		name, in, want string
		width          int
	}{
		{"a short line is kept", "abc\n", "abc\n", 5},
		{"a long line ends in an ellipsis at the width", "abcdefgh\n", "abcd…\n", 5},
		{"runes count, not bytes", "ééééééé\n", "éééé…\n", 5},
		{"a last line without a newline stays without one", "abcdefgh", "abcd…", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(FitLines([]byte(tt.in), tt.width)); got != tt.want {
				t.Errorf("FitLines(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
			}
		})
	}
}

func TestPrintableEscapesControlCharacters(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text, tabs, newlines and non-ASCII letters pass as they are", "nginx:1.27\tüber\n", "nginx:1.27\tüber\n"},
		{"an OSC title sequence and a colour are escaped", "a\x1b]0;owned\x07b\x1b[31mc", `a\x1b]0;owned\x07b\x1b[31mc`},
		{"a carriage return cannot rewrite the row", "keep\rremove", `keep\x0dremove`},
		{"DEL and the C1 CSI are escaped", "x\x7fy\u009bz", `x\x7fy\xc2\x9bz`},
		{"an invalid UTF-8 byte is escaped", "a\xffb", `a\xffb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Printable([]byte(tc.in))); got != tc.want {
				t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
