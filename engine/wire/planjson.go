package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"sync"

	"github.com/nodegc/nodegc/engine/model"
)

// WritePlanJSON writes the plan p with its explanation x to w as one
// compact JSON object and a newline: the GCPlan contract with
// "explanation" beside the plan's fields. The bytes are exactly what
// encoding/json's Encoder writes for
//
//	struct {
//		Plan
//		Explanation Explanation `json:"explanation"`
//	}
//
// (TestWritePlanJSONMatchesEncodingJSON pins that over every field). A
// big node's plan is as large as its snapshot (80 MB for 10,000 images
// and 100,000 dead containers), so it is written as it is made, in
// pieces, instead of in one buffer grown to the whole document: every
// value goes through encoding/json, the long lists (the container and
// sandbox removals, the explanation's rows) a slice of elements at a
// time, encoded on every core and written in order.
func WritePlanJSON(w io.Writer, p model.Plan, x model.Explanation) error {
	return WritePlanJSONWith(w, p, func() model.Explanation { return x })
}

// WritePlanJSONWith is WritePlanJSON with the explanation that explain
// returns, called only once the plan's own fields are written: the
// explanation can be made while they are marshalled.
func WritePlanJSONWith(w io.Writer, p model.Plan, explain func() model.Explanation) error {
	e := newPieceWriter(w)
	e.lit(`{"apiVersion":`)
	e.value(p.APIVersion)
	e.lit(`,"kind":`)
	e.value(p.Kind)
	e.lit(`,"evaluatedAt":`)
	e.value(p.EvaluatedAt)
	e.lit(`,"pass":`)
	e.value(p.Pass)
	e.lit(`,"policy":`)
	e.value(p.Policy)
	e.lit(`,"imageGC":`)
	e.value(p.ImageGC)
	e.lit(`,"containerGC":{"remove":`)
	writeList(e, p.ContainerGC.Remove)
	e.lit(`},"sandboxGC":{"remove":`)
	writeList(e, p.SandboxGC.Remove)
	e.lit(`},"logGC":`)
	e.value(p.LogGC)
	e.lit(`,"diskReserve":`)
	e.value(p.DiskReserve)
	x := explain()
	e.lit(`,"explanation":{"images":`)
	writeList(e, x.Images)
	e.lit(`,"cutLine":`)
	e.value(x.Cut)
	e.lit(`,"containers":`)
	writeListAs(e, x.Containers, containerRowOf)
	e.lit(`,"sandboxes":`)
	writeList(e, x.Sandboxes)
	e.lit(`,"logs":`)
	writeList(e, x.Logs)
	e.lit("}}\n")
	return e.close()
}

// ListPiece is how many elements of a long list one piece marshals:
// tens of kilobytes, so that a piece's hand-offs do not show and the
// pieces in flight stay small. Tests lower it to cut small lists too.
var ListPiece = 256

// writeList writes items as encoding/json writes a slice (nil is null,
// empty is []).
func writeList[T any](e *pieceWriter, items []T) {
	writePieces(e, items, func(b *bytes.Buffer, part []T) error { return json.NewEncoder(b).Encode(part) })
}

// writeListAs is writeList of items written as the Us that conv makes
// of them: a U is a T whose JSON is the same bytes, made faster (a
// containerRow is a ContainerRow). A piece that fails is encoded again as
// Ts, so that what it writes, or its error, is encoding/json's own.
func writeListAs[T, U any](e *pieceWriter, items []T, conv func(*T) U) {
	writePieces(e, items, func(b *bytes.Buffer, part []T) error {
		us := make([]U, len(part))
		for i := range part {
			us[i] = conv(&part[i])
		}
		at := b.Len()
		if err := json.NewEncoder(b).Encode(us); err != nil {
			b.Truncate(at)
			return json.NewEncoder(b).Encode(part)
		}
		return nil
	})
}

// writePieces writes items as encoding/json writes a slice, each piece
// of ListPiece elements appended to a buffer by encode as a slice of its
// own, as an Encoder writes it: '[', the elements' JSON joined by
// commas, ']' and a newline. The first piece keeps its '[', each later
// one has its '[' turned into the comma before it, and none keeps its
// ']' but the last.
func writePieces[T any](e *pieceWriter, items []T, encode func(*bytes.Buffer, []T) error) {
	switch {
	case items == nil:
		e.lit("null")
		return
	case len(items) == 0:
		e.lit("[]")
		return
	}
	for lo := 0; lo < len(items); lo += ListPiece {
		part := items[lo:min(lo+ListPiece, len(items))]
		first := lo == 0
		e.job(func(b *bytes.Buffer) ([]byte, error) {
			at := b.Len()
			if err := encode(b, part); err != nil {
				return nil, err
			}
			j := b.Bytes() // [elements]\n from j[at]
			if !first {
				j[at] = ','
			}
			return j[:len(j)-2], nil
		})
	}
	e.lit("]")
}

// pieceWriter writes a document made of pieces in order, while the
// pieces that need encoding are encoded on every core. At most
// cap(order) pieces are in flight, each in a buffer used again once it
// is written, so the memory it holds is bounded whatever the document's
// size. The first error (an encoding's, in document order, or the
// writer's) is close's; the pieces after it are neither encoded nor
// written.
type pieceWriter struct {
	lits  []byte        // literal bytes not yet handed over
	order chan *piece   // every piece, in document order, to the writer
	work  chan *piece   // the pieces to encode, to the workers
	done  chan error    // the writer's result
	stop  chan struct{} // closed by the writer at the first error
	bufs  sync.Pool     // *bytes.Buffer
	wg    sync.WaitGroup
}

// piece is one part of the document: the literal bytes before it, and
// what encode appends to them, to be written once ready is closed.
type piece struct {
	lits   []byte
	encode func(*bytes.Buffer) ([]byte, error)
	buf    *bytes.Buffer
	out    []byte
	err    error
	ready  chan struct{}
}

func newPieceWriter(w io.Writer) *pieceWriter {
	n := runtime.GOMAXPROCS(0)
	e := &pieceWriter{
		order: make(chan *piece, 4*n),
		work:  make(chan *piece, 4*n),
		done:  make(chan error, 1),
		stop:  make(chan struct{}),
		bufs:  sync.Pool{New: func() any { return new(bytes.Buffer) }},
	}
	e.wg.Add(n)
	for range n {
		go func() {
			defer e.wg.Done()
			for pc := range e.work {
				select {
				case <-e.stop:
				default:
					pc.buf = e.bufs.Get().(*bytes.Buffer)
					pc.buf.Write(pc.lits)
					pc.out, pc.err = pc.encode(pc.buf)
				}
				close(pc.ready)
			}
		}()
	}
	go func() {
		bw := bufio.NewWriterSize(w, 64<<10)
		var err error
		for pc := range e.order {
			<-pc.ready
			if err == nil {
				err = pc.err
				if err == nil {
					_, err = bw.Write(pc.out)
				}
				if err != nil {
					close(e.stop)
				}
			}
			if pc.buf != nil {
				pc.buf.Reset()
				e.bufs.Put(pc.buf)
			}
		}
		if err == nil {
			err = bw.Flush()
		}
		e.done <- err
	}()
	return e
}

// lit appends literal bytes to the document.
func (e *pieceWriter) lit(s string) { e.lits = append(e.lits, s...) }

// value appends v, encoded by encoding/json.
func (e *pieceWriter) value(v any) {
	e.job(func(b *bytes.Buffer) ([]byte, error) {
		if err := json.NewEncoder(b).Encode(v); err != nil {
			return nil, err
		}
		return b.Bytes()[:b.Len()-1], nil // without Encode's newline
	})
}

// job appends a piece that encode makes, after the literal bytes
// gathered so far.
func (e *pieceWriter) job(encode func(*bytes.Buffer) ([]byte, error)) {
	pc := &piece{lits: e.lits, encode: encode, ready: make(chan struct{})}
	e.lits = nil
	e.order <- pc
	e.work <- pc
}

// close hands over the last literal bytes, waits until every piece is
// written and returns the first error.
func (e *pieceWriter) close() error {
	if len(e.lits) > 0 {
		pc := &piece{out: e.lits, ready: make(chan struct{})}
		close(pc.ready)
		e.order <- pc
	}
	close(e.work)
	close(e.order)
	e.wg.Wait()
	return <-e.done
}
