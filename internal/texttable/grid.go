package texttable

import (
	"bytes"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nodegc/nodegc/internal/format"
)

// Grid aligns rows of cells the way Table does (each cell padded to the
// widest of its column plus two spaces, no blanks at the end of a line)
// without a tabwriter: the dead containers table can have 100,000 rows,
// and a tabwriter keeps a cell struct per cell and writes padding a cell
// at a time. The cells go one after the other into one buffer; a row is
// the next ncol cells. Add and the Add* methods append to the current
// cell, End ends it, Cell does both.
type Grid struct {
	ncol  int
	buf   []byte // the text of every cell
	ends  []int  // where each cell ends in buf
	width []int  // the widest cell of each column, in runes
	ascii bool   // every cell is ASCII, so a cell's width is its length
	plain bool   // no cell holds a byte a tabwriter gives a meaning to
}

// NewGrid starts a grid of ncol columns with room for about rows rows.
func NewGrid(ncol, rows int) *Grid {
	return &Grid{
		ncol:  ncol,
		buf:   make([]byte, 0, rows*ncol*8),
		ends:  make([]int, 0, rows*ncol),
		width: make([]int, ncol),
		ascii: true,
		plain: true,
	}
}

// Add appends s to the current cell.
func (g *Grid) Add(s string) { g.buf = append(g.buf, s...) }

// AddInt appends n in decimal to the current cell.
func (g *Grid) AddInt(n int64) { g.buf = strconv.AppendInt(g.buf, n, 10) }

// AddUint appends n in decimal to the current cell.
func (g *Grid) AddUint(n uint64) { g.buf = strconv.AppendUint(g.buf, n, 10) }

// AddBytes appends format.Bytes(n) to the current cell.
func (g *Grid) AddBytes(n int64) { g.buf = format.AppendBytes(g.buf, n) }

// AddAgo appends format.Ago(t, now) to the current cell.
func (g *Grid) AddAgo(t, now time.Time) { g.buf = format.AppendAgo(g.buf, t, now) }

// Cell appends s to the current cell and ends it.
func (g *Grid) Cell(s string) {
	g.Add(s)
	g.End()
}

// End ends the current cell: the text appended since the last End.
func (g *Grid) End() {
	start := 0
	if n := len(g.ends); n > 0 {
		start = g.ends[n-1]
	}
	text := g.buf[start:]
	ascii := true
	for _, c := range text {
		if c >= ' ' && c < utf8.RuneSelf {
			continue
		}
		switch c {
		case '\t', '\n', '\v', '\f', tabwriter.Escape:
			g.plain = false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	w := len(text)
	if !ascii {
		w = utf8.RuneCount(text)
		g.ascii = false
	}
	col := len(g.ends) % g.ncol
	g.width[col] = max(g.width[col], w)
	g.ends = append(g.ends, len(g.buf))
}

// spaces is padding to copy from.
const spaces = "                                                                "

// WriteTo appends the aligned rows to b, byte for byte what Table writes
// for the same cells. Cells holding tabs, line breaks or the tabwriter
// escape go through a Table, which gives those bytes their meaning. It
// panics if the cells do not make whole rows: a renderer's bug.
func (g *Grid) WriteTo(b *bytes.Buffer) {
	if len(g.ends)%g.ncol != 0 {
		panic(fmt.Sprintf("texttable: %d cells do not make rows of %d", len(g.ends), g.ncol))
	}
	var line []byte
	if !g.plain {
		t := NewTable(b)
		start := 0
		for i, end := range g.ends {
			line = append(line, g.buf[start:end]...)
			start = end
			if i%g.ncol < g.ncol-1 {
				line = append(line, '\t')
				continue
			}
			t.Write(append(line, '\n'))
			line = line[:0]
		}
		t.Flush()
		return
	}
	rowMax := 0
	for _, w := range g.width {
		rowMax += w + 2
	}
	b.Grow(len(g.buf) + len(g.ends)/g.ncol*(rowMax+1))
	line = make([]byte, 0, 4*rowMax)
	start := 0
	for i, end := range g.ends {
		text := g.buf[start:end]
		start = end
		line = append(line, text...)
		if col := i % g.ncol; col < g.ncol-1 {
			w := len(text)
			if !g.ascii {
				w = utf8.RuneCount(text)
			}
			for pad := g.width[col] + 2 - w; pad > 0; pad -= len(spaces) {
				line = append(line, spaces[:min(pad, len(spaces))]...)
			}
			continue
		}
		b.Write(bytes.TrimRight(line, " "))
		b.WriteByte('\n')
		line = line[:0]
	}
}
