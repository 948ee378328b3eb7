package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
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
// chunks, instead of in one buffer grown to the whole document, and its
// long lists (the removals, the keeps, the order, the rows) without
// reflection; the small parts (the policy, the events, the disk reserve,
// the cut line) go through encoding/json.
func WritePlanJSON(w io.Writer, p Plan, x Explanation) error {
	e := &jsonWriter{w: w, b: make([]byte, 0, 2*jsonChunk)}
	e.byte('{')
	e.key("apiVersion", true)
	e.str(p.APIVersion)
	e.key("kind", false)
	e.str(p.Kind)
	e.key("evaluatedAt", false)
	e.time(p.EvaluatedAt)
	e.key("pass", false)
	e.str(string(p.Pass))
	e.key("policy", false)
	e.marshal(p.Policy)
	e.key("imageGC", false)
	e.imagePlan(&p.ImageGC)
	e.key("containerGC", false)
	e.byte('{')
	e.key("remove", true)
	writeList(e, p.ContainerGC.Remove, (*jsonWriter).containerRemoval)
	e.byte('}')
	e.key("sandboxGC", false)
	e.byte('{')
	e.key("remove", true)
	writeList(e, p.SandboxGC.Remove, (*jsonWriter).sandboxRemoval)
	e.byte('}')
	e.key("logGC", false)
	e.marshal(p.LogGC)
	e.key("diskReserve", false)
	e.marshal(p.DiskReserve)
	e.key("explanation", false)
	e.byte('{')
	e.key("images", true)
	writeList(e, x.Images, (*jsonWriter).imageRow)
	e.key("cutLine", false)
	e.marshal(x.Cut)
	e.key("containers", false)
	writeList(e, x.Containers, (*jsonWriter).containerRow)
	e.key("sandboxes", false)
	writeList(e, x.Sandboxes, (*jsonWriter).sandboxRow)
	e.key("logs", false)
	writeList(e, x.Logs, (*jsonWriter).logRow)
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

// str writes s as encoding/json does. Plain ASCII (the IDs, names and
// reasons of a plan) is copied; anything else (escapes, <, >, &, other
// than ASCII) is left to encoding/json, whose escaping is the contract.
func (e *jsonWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			e.marshal(s)
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

// plainJSON reports the bytes encoding/json writes as they are in a
// string: printable ASCII but for ", \\, <, > and &.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != 0x7f
	}
	return t
}()

// strs writes a string list; nil is null, as encoding/json writes it.
func (e *jsonWriter) strs(ss []string) {
	if ss == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.byte('[')
	for i, s := range ss {
		if i > 0 {
			e.byte(',')
		}
		e.str(s)
		e.maybeFlush()
	}
	e.byte(']')
}

// time writes t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted; an error for a year it cannot write).
func (e *jsonWriter) time(t time.Time) {
	e.b = append(e.b, '"')
	b, err := t.AppendText(e.b)
	if err != nil {
		e.fail(fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err))
		return
	}
	e.b = append(b, '"')
}

func (e *jsonWriter) int(n int64)   { e.b = strconv.AppendInt(e.b, n, 10) }
func (e *jsonWriter) uint(n uint64) { e.b = strconv.AppendUint(e.b, n, 10) }
func (e *jsonWriter) bool(v bool)   { e.b = strconv.AppendBool(e.b, v) }

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

// writeList writes items with one, as encoding/json writes a slice: nil is
// null, empty is [].
func writeList[T any](e *jsonWriter, items []T, one func(*jsonWriter, *T)) {
	if items == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.byte('[')
	for i := range items {
		if i > 0 {
			e.byte(',')
		}
		one(e, &items[i])
		e.maybeFlush()
	}
	e.byte(']')
}

func (e *jsonWriter) imagePlan(g *ImagePlan) {
	e.byte('{')
	e.key("usagePercent", true)
	e.int(int64(g.UsagePercent))
	e.key("capacityBytes", false)
	e.int(g.CapacityBytes)
	e.key("triggered", false)
	e.bool(g.Triggered)
	e.key("bytesToFree", false)
	e.int(g.BytesToFree)
	e.key("bytesFreed", false)
	e.int(g.BytesFreed)
	e.key("remove", false)
	writeList(e, g.Remove, (*jsonWriter).imageRemoval)
	e.key("keep", false)
	writeList(e, g.Keep, (*jsonWriter).imageKeep)
	e.key("events", false)
	e.marshal(g.Events)
	if len(g.Order) > 0 {
		e.key("order", false)
		e.strs(g.Order)
	}
	e.key("cutLine", false)
	e.int(int64(g.CutLine))
	e.byte('}')
}

func (e *jsonWriter) imageRemoval(r *ImageRemoval) {
	e.byte('{')
	e.key("id", true)
	e.str(r.ID)
	e.key("sizeBytes", false)
	e.int(r.SizeBytes)
	e.key("reason", false)
	e.str(string(r.Reason))
	if len(r.RepoTags) > 0 {
		e.key("repoTags", false)
		e.strs(r.RepoTags)
	}
	if len(r.RepoDigests) > 0 {
		e.key("repoDigests", false)
		e.strs(r.RepoDigests)
	}
	if r.Detail != "" {
		e.key("detail", false)
		e.str(r.Detail)
	}
	e.byte('}')
}

func (e *jsonWriter) imageKeep(k *ImageKeep) {
	e.byte('{')
	e.key("id", true)
	e.str(k.ID)
	e.key("reason", false)
	e.str(string(k.Reason))
	e.key("detail", false)
	e.str(k.Detail)
	e.optTime("eligibleAt", k.EligibleAt)
	e.byte('}')
}

// optTime writes an omitempty *time.Time field (never first).
func (e *jsonWriter) optTime(name string, t *time.Time) {
	if t != nil {
		e.key(name, false)
		e.time(*t)
	}
}

func (e *jsonWriter) containerRemoval(r *ContainerRemoval) {
	e.byte('{')
	e.key("id", true)
	e.str(r.ID)
	e.key("podUID", false)
	e.str(r.PodUID)
	e.key("podNamespace", false)
	e.str(r.PodNamespace)
	e.key("podName", false)
	e.str(r.PodName)
	e.key("name", false)
	e.str(r.Name)
	e.key("reason", false)
	e.str(string(r.Reason))
	if r.State != "" {
		e.key("state", false)
		e.str(string(r.State))
	}
	if r.PodSandboxID != "" {
		e.key("podSandboxId", false)
		e.str(r.PodSandboxID)
	}
	e.key("attempt", false)
	e.uint(uint64(r.Attempt))
	if r.Detail != "" {
		e.key("detail", false)
		e.str(r.Detail)
	}
	e.byte('}')
}

func (e *jsonWriter) sandboxRemoval(r *SandboxRemoval) {
	e.byte('{')
	e.key("id", true)
	e.str(r.ID)
	e.key("podUID", false)
	e.str(r.PodUID)
	e.key("reason", false)
	e.str(r.Reason)
	if r.State != "" {
		e.key("state", false)
		e.str(string(r.State))
	}
	e.byte('}')
}

func (e *jsonWriter) imageRow(r *ImageRow) {
	e.byte('{')
	e.key("rank", true)
	e.int(int64(r.Rank))
	e.key("image", false)
	e.byte('{')
	e.key("id", true)
	e.str(r.Image.ID)
	e.key("repoTags", false)
	e.strs(r.Image.RepoTags)
	e.key("repoDigests", false)
	e.strs(r.Image.RepoDigests)
	e.key("sizeBytes", false)
	e.int(r.Image.SizeBytes)
	e.key("pinned", false)
	e.bool(r.Image.Pinned)
	e.byte('}')
	e.key("name", false)
	e.str(r.Name)
	e.key("action", false)
	e.str(string(r.Action))
	if r.Step != 0 {
		e.key("step", false)
		e.int(int64(r.Step))
	}
	e.key("reason", false)
	e.str(r.Reason)
	e.key("detail", false)
	e.str(r.Detail)
	e.optTime("firstDetected", r.FirstDetected)
	e.optTime("lastUsed", r.LastUsed)
	e.optTime("eligibleAt", r.EligibleAt)
	if len(r.UsedBy) > 0 {
		e.key("usedBy", false)
		e.strs(r.UsedBy)
	}
	if r.SandboxImage {
		e.key("sandboxImage", false)
		e.bool(true)
	}
	e.byte('}')
}

func (e *jsonWriter) containerRow(r *ContainerRow) {
	e.byte('{')
	e.key("pod", true)
	e.str(r.Pod)
	e.key("rank", false)
	e.int(int64(r.Rank))
	e.key("id", false)
	e.str(r.ID)
	e.key("name", false)
	e.str(r.Name)
	e.key("attempt", false)
	e.uint(uint64(r.Attempt))
	e.key("state", false)
	e.str(string(r.State))
	if !r.CreatedAt.IsZero() {
		e.key("createdAt", false)
		e.time(r.CreatedAt)
	}
	e.optTime("finishedAt", r.FinishedAt)
	e.key("action", false)
	e.str(string(r.Action))
	if r.Step != 0 {
		e.key("step", false)
		e.int(int64(r.Step))
	}
	if r.Reason != "" {
		e.key("reason", false)
		e.str(r.Reason)
	}
	if r.Detail != "" {
		e.key("detail", false)
		e.str(r.Detail)
	}
	e.byte('}')
}

func (e *jsonWriter) sandboxRow(r *SandboxRow) {
	e.byte('{')
	e.key("step", true)
	e.int(int64(r.Step))
	e.key("id", false)
	e.str(r.ID)
	e.key("pod", false)
	e.str(r.Pod)
	if r.State != "" {
		e.key("state", false)
		e.str(string(r.State))
	}
	e.key("action", false)
	e.str(string(r.Action))
	e.key("reason", false)
	e.str(r.Reason)
	e.byte('}')
}

func (e *jsonWriter) logRow(r *LogRow) {
	e.byte('{')
	e.key("step", true)
	e.int(int64(r.Step))
	e.key("path", false)
	e.str(r.Path)
	e.key("action", false)
	e.str(string(r.Action))
	e.key("reason", false)
	e.str(r.Reason)
	e.byte('}')
}
