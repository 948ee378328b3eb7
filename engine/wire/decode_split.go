package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nodegc/nodegc/engine/model"
)

// decodeSplit decodes a snapshot with the long lists' elements split
// into pieces that encoding/json decodes on every core, in order. It is
// only a faster way to the same result as json.Unmarshal(data, &w): it
// reports false, and the caller decodes the whole document with
// json.Unmarshal as before (whose errors are the contract), whenever the
// document is not one it can prove it split right.
//
// How it splits, and why the result is encoding/json's. One tokenizer
// pass (findSpans: strings with their escapes, and nesting depth, so
// whatever the whitespace: compact, `json.dump`'s `}, {`, indented, CRLF)
// finds each list's value, the first top-level key spelt as its name
// (`"images"`, `"imageRecords"`, …), and cuts it into pieces of about
// SplitPiece bytes at commas between elements. Each piece, bracketed, is
// decoded by json.Unmarshal, and the rest of the document, with each
// list replaced by a string no input can know (a random nonce), by
// json.Unmarshal too. The tokenizer does not check the grammar; the
// decodes do, and when all of them succeed the split was right: each
// piece is a valid array of at least one element, so the pieces joined
// by the cut commas are one valid array value; and the rest decodes with
// each nonce in its own list's top-level field (checked), so each value
// was that field's, the only one the document gives it (a list named
// twice, in any letter case, is left to json.Unmarshal, which merges the
// two).
func decodeSplit(data []byte) (wireSnapshot, bool) {
	var w wireSnapshot
	lists := []splitList{
		&pieces[model.Image]{key: "images", dst: &w.Images},
		&pieces[model.ImageRecord]{key: "imageRecords", dst: &w.ImageRecords},
		&pieces[model.Sandbox]{key: "sandboxes", dst: &w.Sandboxes},
		&pieces[model.Container]{key: "containers", dst: &w.Containers},
	}
	d := &splitDecoder{data: data, lists: lists, mark: splitMark(),
		jobs: make(chan splitJob, min(len(data)/max(SplitPiece, 1)+8, 1024))}
	if !d.run() {
		return wireSnapshot{}, false
	}
	for _, sp := range d.spans {
		if !lists[sp.list].join() {
			return wireSnapshot{}, false
		}
	}
	r := &d.rest
	w.APIVersion, w.Kind, w.TakenAt, w.Runtime = r.APIVersion, r.Kind, r.TakenAt, r.Runtime
	w.ImageFs, w.RootFs, w.PodSource, w.Logs = r.ImageFs, r.RootFs, r.PodSource, r.Logs
	return w, true
}

// splitMark is the start of the placeholders that stand for the lists in
// the rest of the document: a random nonce, so that no input can know it.
func splitMark() string {
	var nonce [16]byte
	rand.Read(nonce[:])
	return `"nodegc-split-` + hex.EncodeToString(nonce[:])
}

// splitJob is one piece to decode: data[lo:hi], by decode, a list's
// piece; a nil decode is the rest of the document.
type splitJob struct {
	decode func(piece []byte) error
	lo, hi int
}

// splitDecoder decodes one document's pieces on every core, each as soon
// as the tokenizer has cut it. The first failure makes every worker skip
// the jobs left.
type splitDecoder struct {
	data  []byte
	lists []splitList
	mark  string
	// spans are the tokenizer's, set before the rest's job is sent.
	spans []span
	jobs  chan splitJob
	// failed is set by any job that fails, or by the tokenizer.
	failed atomic.Bool
	// rest is the document without its lists, decoded by the rest's job.
	rest restSnapshot
}

// run tokenizes the document, handing each piece to the workers (one per
// core but the tokenizer's, which joins them once done) as it is cut,
// and the rest last; it reports whether all decoded and the rest proves
// the lists' guesses right (restSnapshot.holds).
func (d *splitDecoder) run() bool {
	var wg sync.WaitGroup
	n := max(runtime.GOMAXPROCS(0)-1, 1)
	wg.Add(n)
	for range n {
		go d.work(&wg)
	}
	spans, ok := findSpans(d.data, d.lists, SplitPiece, func(list, lo, hi int) {
		d.jobs <- splitJob{decode: d.lists[list].add(), lo: lo, hi: hi}
	})
	if ok {
		d.spans = spans
		d.jobs <- splitJob{}
	} else {
		d.failed.Store(true)
	}
	close(d.jobs)
	wg.Add(1)
	d.work(&wg)
	wg.Wait()
	return !d.failed.Load() && d.rest.holds(d.lists, d.spans, d.mark)
}

// work decodes jobs until they are closed, skipping them once one has
// failed (the tokenizer does not wait on a worker that stopped).
func (d *splitDecoder) work(wg *sync.WaitGroup) {
	defer wg.Done()
	var buf []byte
	for j := range d.jobs {
		if d.failed.Load() {
			continue
		}
		if j.decode == nil {
			d.decodeRest()
			continue
		}
		buf = append(append(append(buf[:0], '['), d.data[j.lo:j.hi]...), ']')
		if j.decode(buf) != nil {
			d.failed.Store(true)
		}
	}
}

// decodeRest decodes the document with each list replaced by its
// placeholder, and lists its top-level keys for holds.
func (d *splitDecoder) decodeRest() {
	skel := skeleton(d.data, d.spans, d.mark)
	keys, ok := topKeys(skel)
	if !ok || json.Unmarshal(skel, &d.rest) != nil {
		d.failed.Store(true)
	}
	d.rest.keys = keys
}

// SplitPiece is about how many bytes of a list one piece holds: small
// enough that the cores share the work evenly, large enough that a
// piece's own cost (a goroutine's turn, a slice grown) does not show.
// Tests lower it to cut small lists too.
var SplitPiece = 1 << 20

// splitList is one long list of the snapshot, decoded in pieces.
type splitList interface {
	name() string
	// add makes room for the list's next piece and returns the decode
	// of that piece, which a worker calls.
	add() func(piece []byte) error
	// join puts the decoded pieces in the list's field, once every
	// piece is decoded; false when a piece of several is empty.
	join() bool
}

// pieces decodes a list of T in pieces and joins them into dst. Only
// the tokenizer's goroutine adds parts; each worker writes its part's
// slot alone.
type pieces[T any] struct {
	key   string
	dst   *[]T
	parts []*[]T
}

func (p *pieces[T]) name() string { return p.key }

func (p *pieces[T]) add() func(piece []byte) error {
	part := new([]T)
	p.parts = append(p.parts, part)
	return func(piece []byte) error { return json.Unmarshal(piece, part) }
}

// join puts the pieces together in order: an empty list is an empty
// slice, not nil, as json.Unmarshal leaves `[]`. Of several pieces, each
// must hold an element: an empty one stands beside a comma with no
// element on its other side (`[{…}, ]`), which the whole document's
// decode rejects.
func (p *pieces[T]) join() bool {
	n := 0
	for _, part := range p.parts {
		if len(p.parts) > 1 && len(*part) == 0 {
			return false
		}
		n += len(*part)
	}
	out := make([]T, 0, n)
	for _, part := range p.parts {
		out = append(out, *part...)
	}
	*p.dst, p.parts = out, nil
	return true
}

// skeleton is data with each span's value replaced by mark and the
// span's list index, as a JSON string.
func skeleton(data []byte, spans []span, mark string) []byte {
	var b []byte
	at := 0
	for _, sp := range spans {
		b = append(b, data[at:sp.open]...)
		b = append(b, placeholder(mark, sp.list)...)
		at = sp.close + 1
	}
	return append(b, data[at:]...)
}

func placeholder(mark string, list int) string {
	return mark + "-" + string(rune('0'+list)) + `"`
}

// restSnapshot is the snapshot without its long lists, which it holds as
// they are written, to be checked.
type restSnapshot struct {
	wireSnapshot
	Images       json.RawMessage `json:"images"`
	ImageRecords json.RawMessage `json:"imageRecords"`
	Sandboxes    json.RawMessage `json:"sandboxes"`
	Containers   json.RawMessage `json:"containers"`
	// keys are the document's top-level keys, in order, repeats kept.
	keys []string
}

// topKeys lists the keys of the JSON object b, in order, repeats kept
// (a map would fold them).
func topKeys(b []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		k, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil, false
		}
	}
	return keys, true
}

// holds reports whether the rest took each split list's placeholder in
// that list's own field, and names no list otherwise: twice, under
// another letter case, or not split at all.
func (r *restSnapshot) holds(lists []splitList, spans []span, mark string) bool {
	raws := []json.RawMessage{r.Images, r.ImageRecords, r.Sandboxes, r.Containers}
	for i, l := range lists {
		split := slices.ContainsFunc(spans, func(sp span) bool { return sp.list == i })
		named := 0
		for _, k := range r.keys {
			if strings.EqualFold(k, l.name()) {
				named++
			}
		}
		if !split {
			if named > 0 {
				return false
			}
			continue
		}
		if named != 1 || string(raws[i]) != placeholder(mark, i) {
			return false
		}
	}
	return true
}

// Splits reports whether DecodeSnapshot decodes data's lists in pieces
// (it proved the split right), rather than the document whole.
func Splits(data []byte) bool {
	_, ok := decodeSplit(data)
	return ok
}
