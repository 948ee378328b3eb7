package engine

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeFast decodes a NodeSnapshot document into w as json.Unmarshal
// would, without reflection, and reports whether it could. It reads what
// nodegc's own snapshots hold: the contract's fields, each once, spelt
// exactly; strings, integers, booleans, RFC 3339 times and null. Anything
// else (an unknown or differently cased key, a key given twice, a
// fraction where an integer goes, a value of the wrong type, bad JSON)
// makes it give up, and DecodeSnapshot decodes the document with
// encoding/json, whose behaviour and errors are the contract. It never
// gives up on what encoding/json accepts the same way: FuzzDecodeFast
// compares the two.
//
// Decoding a 78 MB snapshot with encoding/json costs twice as much as
// planning and explaining it (it scans the document twice, once to
// validate it, and allocates every string); this copies the document once
// into a string, and every string of the snapshot is a part of it.
func decodeFast(data []byte, w *wireSnapshot) bool {
	d := &fastDec{b: data, s: string(data)}
	d.ws()
	if !d.snapshot(w) {
		return false
	}
	d.ws()
	return d.i == len(d.s)
}

// fastDec is decodeFast's cursor over the document, held both as bytes
// (for time.Time's own parser) and as one string (for the strings).
type fastDec struct {
	b []byte
	s string
	i int
}

// ws skips JSON whitespace.
func (d *fastDec) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// eat consumes c, after whitespace, and reports whether it was there.
func (d *fastDec) eat(c byte) bool {
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// null consumes a null and reports whether there was one.
func (d *fastDec) null() bool {
	if len(d.s)-d.i >= 4 && d.s[d.i:d.i+4] == "null" {
		d.i += 4
		return true
	}
	return false
}

// once marks field n of an object as seen and reports whether it was not
// seen before (encoding/json merges a key given twice; decodeFast gives
// up).
func once(seen *uint32, n uint) bool {
	if *seen&(1<<n) != 0 {
		return false
	}
	*seen |= 1 << n
	return true
}

// object reads an object, handing each key to field, which reads the
// value; null leaves the target as it is, as encoding/json does.
func (d *fastDec) object(field func(key string) bool) bool {
	d.ws()
	if d.null() {
		return true
	}
	if !d.eat('{') {
		return false
	}
	if d.eat('}') {
		return true
	}
	for {
		d.ws()
		key, ok := d.plain()
		if !ok || !d.eat(':') {
			return false
		}
		d.ws()
		if !field(key) {
			return false
		}
		switch {
		case d.eat(','):
		case d.eat('}'):
			return true
		default:
			return false
		}
	}
}

// plain reads a string without escapes, control characters or bytes
// beyond ASCII, such as a key.
func (d *fastDec) plain() (string, bool) {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	for j := d.i + 1; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			s := d.s[d.i+1 : j]
			d.i = j + 1
			return s, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

// str reads a string into out. A string with escapes or with bytes that
// are not valid UTF-8 is decoded by encoding/json, alone.
func (d *fastDec) str(out *string) bool {
	if d.null() {
		return true
	}
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return false
	}
	ascii := true
	for j := d.i + 1; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			s := d.s[d.i+1 : j]
			if !ascii && !utf8.ValidString(s) {
				return d.slowString(out)
			}
			*out = s
			d.i = j + 1
			return true
		case c == '\\':
			return d.slowString(out)
		case c < 0x20:
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return false
}

// slowString decodes the string at the cursor with encoding/json.
func (d *fastDec) slowString(out *string) bool {
	j := d.i + 1
	for ; j < len(d.s) && d.s[j] != '"'; j++ {
		if d.s[j] == '\\' {
			j++
		}
	}
	if j >= len(d.s) || json.Unmarshal(d.b[d.i:j+1], out) != nil {
		return false
	}
	d.i = j + 1
	return true
}

// strs reads a list of strings: null is nil, [] is empty.
func (d *fastDec) strs(out *[]string) bool {
	return readList(d, out, func(s *string) bool { return d.str(s) })
}

// readList reads an array into out, each element with one (null is nil, []
// an empty slice, as encoding/json decodes them).
func readList[T any](d *fastDec, out *[]T, one func(*T) bool) bool {
	if d.null() {
		*out = nil
		return true
	}
	if !d.eat('[') {
		return false
	}
	items := make([]T, 0, 4)
	if !d.eat(']') {
		for {
			var zero T
			items = append(items, zero)
			d.ws()
			if !one(&items[len(items)-1]) {
				return false
			}
			if d.eat(']') {
				break
			}
			if !d.eat(',') {
				return false
			}
		}
	}
	*out = items
	return true
}

// integer reads an integer literal (no fraction or exponent, which
// encoding/json refuses for an integer field) as text.
func (d *fastDec) integer() (string, bool) {
	j := d.i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	start := j
	for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
		j++
	}
	if j == start || (d.s[start] == '0' && j-start > 1) {
		return "", false
	}
	if j < len(d.s) && (d.s[j] == '.' || d.s[j] == 'e' || d.s[j] == 'E') {
		return "", false
	}
	n := d.s[d.i:j]
	d.i = j
	return n, true
}

func (d *fastDec) int64(out *int64) bool {
	if d.null() {
		return true
	}
	lit, ok := d.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	*out = n
	return err == nil
}

func (d *fastDec) int32(out *int32) bool {
	if d.null() {
		return true
	}
	lit, ok := d.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(lit, 10, 32)
	*out = int32(n)
	return err == nil
}

func (d *fastDec) uint32(out *uint32) bool {
	if d.null() {
		return true
	}
	lit, ok := d.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(lit, 10, 32)
	*out = uint32(n)
	return err == nil
}

// int64Ptr reads a number into a new int64; null is nil.
func (d *fastDec) int64Ptr(out **int64) bool {
	if d.null() {
		*out = nil
		return true
	}
	*out = new(int64)
	return d.int64(*out)
}

func (d *fastDec) bool(out *bool) bool {
	switch {
	case d.null():
	case len(d.s)-d.i >= 4 && d.s[d.i:d.i+4] == "true":
		*out, d.i = true, d.i+4
	case len(d.s)-d.i >= 5 && d.s[d.i:d.i+5] == "false":
		*out, d.i = false, d.i+5
	default:
		return false
	}
	return true
}

// time reads a time with time.Time's own UnmarshalJSON, as encoding/json
// does.
func (d *fastDec) time(out *time.Time) bool {
	if d.null() {
		return true
	}
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return false
	}
	for j := d.i + 1; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			if out.UnmarshalJSON(d.b[d.i:j+1]) != nil {
				return false
			}
			d.i = j + 1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// timePtr reads a time into a new time.Time; null is nil.
func (d *fastDec) timePtr(out **time.Time) bool {
	if d.null() {
		*out = nil
		return true
	}
	*out = new(time.Time)
	return d.time(*out)
}

func (d *fastDec) snapshot(w *wireSnapshot) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "apiVersion":
			return once(&seen, 0) && d.str(&w.APIVersion)
		case "kind":
			return once(&seen, 1) && d.str(&w.Kind)
		case "takenAt":
			return once(&seen, 2) && d.time(&w.TakenAt)
		case "runtime":
			return once(&seen, 3) && d.runtime(&w.Runtime)
		case "imageFs":
			return once(&seen, 4) && d.wireFs(&w.ImageFs)
		case "rootFs":
			return once(&seen, 5) && d.fsPtr(&w.RootFs)
		case "images":
			return once(&seen, 6) && readList(d, &w.Images, d.image)
		case "imageRecords":
			return once(&seen, 7) && readList(d, &w.ImageRecords, d.record)
		case "sandboxes":
			return once(&seen, 8) && readList(d, &w.Sandboxes, d.sandbox)
		case "containers":
			return once(&seen, 9) && readList(d, &w.Containers, d.container)
		case "podSource":
			return once(&seen, 10) && d.podSource(&w.PodSource)
		case "logs":
			return once(&seen, 11) && d.logs(&w.Logs)
		}
		return false
	})
}

func (d *fastDec) runtime(r *RuntimeInfo) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "name":
			return once(&seen, 0) && d.str(&r.Name)
		case "version":
			return once(&seen, 1) && d.str(&r.Version)
		case "endpoint":
			return once(&seen, 2) && d.str(&r.Endpoint)
		case "sandboxImages":
			return once(&seen, 3) && d.strs(&r.SandboxImages)
		}
		return false
	})
}

func (d *fastDec) wireFs(out **wireFsStats) bool {
	if d.null() {
		*out = nil
		return true
	}
	f := new(wireFsStats)
	*out = f
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "mountpoint":
			return once(&seen, 0) && d.str(&f.Mountpoint)
		case "capacityBytes":
			return once(&seen, 1) && d.int64Ptr(&f.CapacityBytes)
		case "availableBytes":
			return once(&seen, 2) && d.int64Ptr(&f.AvailableBytes)
		case "usedBytes":
			return once(&seen, 3) && d.int64(&f.UsedBytes)
		case "inodes":
			return once(&seen, 4) && d.int64(&f.Inodes)
		case "inodesFree":
			return once(&seen, 5) && d.int64(&f.InodesFree)
		}
		return false
	})
}

func (d *fastDec) fsPtr(out **FsStats) bool {
	if d.null() {
		*out = nil
		return true
	}
	f := new(FsStats)
	*out = f
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "mountpoint":
			return once(&seen, 0) && d.str(&f.Mountpoint)
		case "capacityBytes":
			return once(&seen, 1) && d.int64(&f.CapacityBytes)
		case "availableBytes":
			return once(&seen, 2) && d.int64(&f.AvailableBytes)
		case "usedBytes":
			return once(&seen, 3) && d.int64(&f.UsedBytes)
		case "inodes":
			return once(&seen, 4) && d.int64(&f.Inodes)
		case "inodesFree":
			return once(&seen, 5) && d.int64(&f.InodesFree)
		}
		return false
	})
}

func (d *fastDec) image(im *Image) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "id":
			return once(&seen, 0) && d.str(&im.ID)
		case "repoTags":
			return once(&seen, 1) && d.strs(&im.RepoTags)
		case "repoDigests":
			return once(&seen, 2) && d.strs(&im.RepoDigests)
		case "sizeBytes":
			return once(&seen, 3) && d.int64(&im.SizeBytes)
		case "pinned":
			return once(&seen, 4) && d.bool(&im.Pinned)
		}
		return false
	})
}

func (d *fastDec) record(r *ImageRecord) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "id":
			return once(&seen, 0) && d.str(&r.ID)
		case "firstDetected":
			return once(&seen, 1) && d.time(&r.FirstDetected)
		case "lastUsed":
			return once(&seen, 2) && d.timePtr(&r.LastUsed)
		}
		return false
	})
}

func (d *fastDec) sandbox(sb *Sandbox) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "id":
			return once(&seen, 0) && d.str(&sb.ID)
		case "podUID":
			return once(&seen, 1) && d.str(&sb.PodUID)
		case "podName":
			return once(&seen, 2) && d.str(&sb.PodName)
		case "podNamespace":
			return once(&seen, 3) && d.str(&sb.PodNamespace)
		case "attempt":
			return once(&seen, 4) && d.uint32(&sb.Attempt)
		case "state":
			return once(&seen, 5) && d.str((*string)(&sb.State))
		case "createdAt":
			return once(&seen, 6) && d.time(&sb.CreatedAt)
		case "logDirectory":
			return once(&seen, 7) && d.str(&sb.LogDirectory)
		case "configSource":
			return once(&seen, 8) && d.str(&sb.ConfigSource)
		}
		return false
	})
}

func (d *fastDec) container(c *Container) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "id":
			return once(&seen, 0) && d.str(&c.ID)
		case "podSandboxId":
			return once(&seen, 1) && d.str(&c.PodSandboxID)
		case "podUID":
			return once(&seen, 2) && d.str(&c.PodUID)
		case "name":
			return once(&seen, 3) && d.str(&c.Name)
		case "attempt":
			return once(&seen, 4) && d.uint32(&c.Attempt)
		case "imageId":
			return once(&seen, 5) && d.str(&c.ImageID)
		case "imageRef":
			return once(&seen, 6) && d.str(&c.ImageRef)
		case "state":
			return once(&seen, 7) && d.str((*string)(&c.State))
		case "createdAt":
			return once(&seen, 8) && d.time(&c.CreatedAt)
		case "finishedAt":
			return once(&seen, 9) && d.timePtr(&c.FinishedAt)
		case "exitCode":
			return once(&seen, 10) && d.int32(&c.ExitCode)
		case "logPath":
			return once(&seen, 11) && d.str(&c.LogPath)
		}
		return false
	})
}

func (d *fastDec) podSource(p *PodSource) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "ready":
			return once(&seen, 0) && d.bool(&p.Ready)
		case "removablePodUIDs":
			return once(&seen, 1) && d.strs(&p.RemovablePodUIDs)
		case "description":
			return once(&seen, 2) && d.str(&p.Description)
		}
		return false
	})
}

func (d *fastDec) logs(out **LogFiles) bool {
	if d.null() {
		*out = nil
		return true
	}
	l := new(LogFiles)
	*out = l
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "podLogsDir":
			return once(&seen, 0) && d.str(&l.PodLogsDir)
		case "podDirs":
			return once(&seen, 1) && d.strs(&l.PodDirs)
		case "containerLogsDir":
			return once(&seen, 2) && d.str(&l.ContainerLogsDir)
		case "containerLinks":
			return once(&seen, 3) && readList(d, &l.ContainerLinks, d.logLink)
		}
		return false
	})
}

func (d *fastDec) logLink(ln *LogLink) bool {
	var seen uint32
	return d.object(func(k string) bool {
		switch k {
		case "path":
			return once(&seen, 0) && d.str(&ln.Path)
		case "target":
			return once(&seen, 1) && d.str(&ln.Target)
		case "containerId":
			return once(&seen, 2) && d.str(&ln.ContainerID)
		case "dangling":
			return once(&seen, 3) && d.bool(&ln.Dangling)
		}
		return false
	})
}
