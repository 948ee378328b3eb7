package engine

import (
	"encoding/json"
	"io"
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
// and 100,000 dead containers), so it is written as it is made, in small
// chunks, instead of in one buffer grown to the whole document: every
// value goes through encoding/json, the long lists (the container and
// sandbox removals, the explanation's rows) one element at a time.
func WritePlanJSON(w io.Writer, p Plan, x Explanation) error {
	e := &jsonWriter{w: w, b: make([]byte, 0, 2*jsonChunk)}
	e.byte('{')
	e.key("apiVersion", true)
	e.marshal(p.APIVersion)
	e.key("kind", false)
	e.marshal(p.Kind)
	e.key("evaluatedAt", false)
	e.marshal(p.EvaluatedAt)
	e.key("pass", false)
	e.marshal(p.Pass)
	e.key("policy", false)
	e.marshal(p.Policy)
	e.key("imageGC", false)
	e.marshal(p.ImageGC)
	e.key("containerGC", false)
	e.byte('{')
	e.key("remove", true)
	writeList(e, p.ContainerGC.Remove)
	e.byte('}')
	e.key("sandboxGC", false)
	e.byte('{')
	e.key("remove", true)
	writeList(e, p.SandboxGC.Remove)
	e.byte('}')
	e.key("logGC", false)
	e.marshal(p.LogGC)
	e.key("diskReserve", false)
	e.marshal(p.DiskReserve)
	e.key("explanation", false)
	e.byte('{')
	e.key("images", true)
	writeList(e, x.Images)
	e.key("cutLine", false)
	e.marshal(x.Cut)
	e.key("containers", false)
	writeList(e, x.Containers)
	e.key("sandboxes", false)
	writeList(e, x.Sandboxes)
	e.key("logs", false)
	writeList(e, x.Logs)
	e.byte('}')
	e.byte('}')
	e.byte('\n')
	e.flush()
	return e.err
}

// jsonChunk is how many bytes WritePlanJSON gathers before it writes.
const jsonChunk = 64 << 10

// jsonWriter appends JSON to b and hands it to w a chunk at a time. The
// first error sticks; later writes do nothing.
type jsonWriter struct {
	w   io.Writer
	b   []byte
	err error
}

func (e *jsonWriter) flush() {
	if e.err == nil && len(e.b) > 0 {
		_, e.err = e.w.Write(e.b)
	}
	e.b = e.b[:0]
}

// maybeFlush writes the chunk out once it is full.
func (e *jsonWriter) maybeFlush() {
	if len(e.b) >= jsonChunk {
		e.flush()
	}
}

func (e *jsonWriter) byte(c byte) { e.b = append(e.b, c) }

// key writes `"name":`, after a comma unless it is the object's first.
func (e *jsonWriter) key(name string, first bool) {
	if !first {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

// marshal writes v through encoding/json (Marshal escapes HTML, as the
// Encoder does by default).
func (e *jsonWriter) marshal(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		e.fail(err)
		return
	}
	e.b = append(e.b, b...)
}

func (e *jsonWriter) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// writeList writes items as encoding/json writes a slice (nil is null,
// empty is []), each element marshalled on its own so that the output
// goes out a chunk at a time.
func writeList[T any](e *jsonWriter, items []T) {
	if items == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.byte('[')
	for i := range items {
		if i > 0 {
			e.byte(',')
		}
		e.marshal(&items[i])
		e.maybeFlush()
	}
	e.byte(']')
}
