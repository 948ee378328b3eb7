package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// SnapshotError is a NodeSnapshot that breaks the contract. Field is the
// path of the offending field, such as "images[3].id" or
// "imageFs.capacityBytes" ("" for the document as a whole), so that the
// error line tells the operator exactly what to fix.
type SnapshotError struct {
	Field string
	Msg   string
}

func (e *SnapshotError) Error() string {
	if e.Field == "" {
		return "snapshot: " + e.Msg
	}
	return "snapshot: " + e.Field + ": " + e.Msg
}

// wireSnapshot is Snapshot as it is decoded: the image filesystem's
// numbers are pointers so that a missing capacity or available is told
// apart from a zero one (capacity 0 is valid input: InvalidDiskCapacity).
type wireSnapshot struct {
	APIVersion   string        `json:"apiVersion"`
	Kind         string        `json:"kind"`
	TakenAt      time.Time     `json:"takenAt"`
	Runtime      RuntimeInfo   `json:"runtime"`
	ImageFs      *wireFsStats  `json:"imageFs"`
	RootFs       *FsStats      `json:"rootFs"`
	Images       []Image       `json:"images"`
	ImageRecords []ImageRecord `json:"imageRecords"`
	Sandboxes    []Sandbox     `json:"sandboxes"`
	Containers   []Container   `json:"containers"`
	PodSource    PodSource     `json:"podSource"`
	Logs         *LogFiles     `json:"logs"`
}

type wireFsStats struct {
	Mountpoint     string `json:"mountpoint"`
	CapacityBytes  *int64 `json:"capacityBytes"`
	AvailableBytes *int64 `json:"availableBytes"`
	UsedBytes      int64  `json:"usedBytes"`
	Inodes         int64  `json:"inodes"`
	InodesFree     int64  `json:"inodesFree"`
}

// DecodeSnapshot reads a NodeSnapshot document strictly: apiVersion must
// be nodegc/v1 and kind NodeSnapshot; takenAt, imageFs.capacityBytes and
// imageFs.availableBytes, each image's id, each image record's id and
// firstDetected, each container's id, state and createdAt, and each
// sandbox's id and state are required; states must be CRI values; IDs must
// be unique. Unknown fields are ignored. Every error is a *SnapshotError
// that names the field, such as
//
//	snapshot: images[3].id: required
//	snapshot: containers[0].state: unknown value "FOO"
//	snapshot: imageFs.capacityBytes: want a number, got string
func DecodeSnapshot(data []byte) (Snapshot, error) {
	var w wireSnapshot
	if err := json.Unmarshal(data, &w); err != nil {
		return Snapshot{}, decodeError(data, err)
	}
	s := Snapshot{
		APIVersion: w.APIVersion, Kind: w.Kind, TakenAt: w.TakenAt, Runtime: w.Runtime,
		RootFs: w.RootFs, Images: w.Images, ImageRecords: w.ImageRecords,
		Sandboxes: w.Sandboxes, Containers: w.Containers, PodSource: w.PodSource, Logs: w.Logs,
	}
	if err := s.validateHeader(); err != nil {
		return Snapshot{}, err
	}
	switch {
	case w.ImageFs == nil:
		return Snapshot{}, &SnapshotError{"imageFs", "required"}
	case w.ImageFs.CapacityBytes == nil:
		return Snapshot{}, &SnapshotError{"imageFs.capacityBytes", "required"}
	case w.ImageFs.AvailableBytes == nil:
		return Snapshot{}, &SnapshotError{"imageFs.availableBytes", "required"}
	}
	s.ImageFs = FsStats{
		Mountpoint: w.ImageFs.Mountpoint, CapacityBytes: *w.ImageFs.CapacityBytes,
		AvailableBytes: *w.ImageFs.AvailableBytes, UsedBytes: w.ImageFs.UsedBytes,
		Inodes: w.ImageFs.Inodes, InodesFree: w.ImageFs.InodesFree,
	}
	if err := s.validateItems(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// Validate checks a snapshot against the NodeSnapshot contract, as
// DecodeSnapshot does (except the presence of the image filesystem's
// numbers, which a decoded struct cannot tell from zero). The error is a
// *SnapshotError naming the field.
func (s Snapshot) Validate() error {
	if err := s.validateHeader(); err != nil {
		return err
	}
	return s.validateItems()
}

func (s Snapshot) validateHeader() error {
	switch {
	case s.APIVersion == "":
		return &SnapshotError{"apiVersion", "required"}
	case s.APIVersion != APIVersion:
		return &SnapshotError{"apiVersion", fmt.Sprintf("want %q, got %q", APIVersion, s.APIVersion)}
	case s.Kind == "":
		return &SnapshotError{"kind", "required"}
	case s.Kind != KindSnapshot:
		return &SnapshotError{"kind", fmt.Sprintf("want %q, got %q", KindSnapshot, s.Kind)}
	case s.TakenAt.IsZero():
		return &SnapshotError{"takenAt", "required"}
	}
	return nil
}

func (s Snapshot) validateItems() error {
	ids := make(map[string]int, len(s.Images))
	for i, img := range s.Images {
		f := fmt.Sprintf("images[%d]", i)
		if err := uniqueID(ids, f, "images", img.ID, i); err != nil {
			return err
		}
		if img.SizeBytes < 0 {
			return &SnapshotError{f + ".sizeBytes", fmt.Sprintf("must not be negative, got %d", img.SizeBytes)}
		}
	}
	clear(ids)
	for i, r := range s.ImageRecords {
		f := fmt.Sprintf("imageRecords[%d]", i)
		if err := uniqueID(ids, f, "imageRecords", r.ID, i); err != nil {
			return err
		}
		if r.FirstDetected.IsZero() {
			return &SnapshotError{f + ".firstDetected", "required"}
		}
	}
	clear(ids)
	for i, sb := range s.Sandboxes {
		f := fmt.Sprintf("sandboxes[%d]", i)
		if err := uniqueID(ids, f, "sandboxes", sb.ID, i); err != nil {
			return err
		}
		switch sb.State {
		case SandboxReady, SandboxNotReady:
		case "":
			return &SnapshotError{f + ".state", "required"}
		default:
			if !otherState(string(sb.State), "SANDBOX_STATE_") {
				return &SnapshotError{f + ".state", fmt.Sprintf("unknown value %q (want %s, %s or SANDBOX_STATE_<n>)", sb.State, SandboxReady, SandboxNotReady)}
			}
		}
	}
	clear(ids)
	for i, c := range s.Containers {
		f := fmt.Sprintf("containers[%d]", i)
		if err := uniqueID(ids, f, "containers", c.ID, i); err != nil {
			return err
		}
		switch c.State {
		case ContainerCreated, ContainerRunning, ContainerExited, ContainerUnknown:
		case "":
			return &SnapshotError{f + ".state", "required"}
		default:
			if !otherState(string(c.State), "CONTAINER_STATE_") {
				return &SnapshotError{f + ".state", fmt.Sprintf("unknown value %q (want a CONTAINER_ state or CONTAINER_STATE_<n>)", c.State)}
			}
		}
		if c.CreatedAt.IsZero() {
			return &SnapshotError{f + ".createdAt", "required"}
		}
	}
	return nil
}

// uniqueID checks that an item has an ID not seen before in its list.
func uniqueID(seen map[string]int, field, list, id string, i int) error {
	if id == "" {
		return &SnapshotError{field + ".id", "required"}
	}
	if j, dup := seen[id]; dup {
		return &SnapshotError{field + ".id", fmt.Sprintf("duplicate of %s[%d]", list, j)}
	}
	seen[id] = i
	return nil
}

// decodeError turns an encoding/json error into a *SnapshotError. The
// standard library names fields without array indexes ("images.id") and
// does not name the field of a bad time at all, so on error the document
// is walked again, field by field, to find the first bad value and its
// full path. The walk is slow, but only runs on bad input.
func decodeError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return &SnapshotError{"", fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, syn)}
	}
	if e := locate(data, reflect.TypeFor[wireSnapshot](), ""); e != nil {
		return e
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &SnapshotError{te.Field, fmt.Sprintf("want %s, got %s", want(te.Type), te.Value)}
	}
	return &SnapshotError{"", err.Error()}
}

var timeType = reflect.TypeFor[time.Time]()

// locate finds the first value in raw that does not decode into t and
// returns its path and what is wrong, or nil.
func locate(raw []byte, t reflect.Type, path string) *SnapshotError {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil // encoding/json leaves the zero value
	}
	bad := func() *SnapshotError {
		return &SnapshotError{path, fmt.Sprintf("want %s, got %s", wantFor(t, raw), describe(raw))}
	}
	if t == timeType {
		var tm time.Time
		if json.Unmarshal(raw, &tm) != nil {
			return bad()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return locate(raw, t.Elem(), path)
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return bad()
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			for _, k := range keys {
				// encoding/json matches keys case-insensitively.
				if strings.EqualFold(k, name) {
					if e := locate(m[k], f.Type, joinPath(path, name)); e != nil {
						return e
					}
				}
			}
		}
		return nil
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return bad()
		}
		for i, it := range items {
			if e := locate(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); e != nil {
				return e
			}
		}
		return nil
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return bad()
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if e := locate(m[k], t.Elem(), joinPath(path, k)); e != nil {
				return e
			}
		}
		return nil
	default:
		if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
			return bad()
		}
		return nil
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// wantFor is want, precise about integers when the value is a number that
// does not fit (a fraction, a negative unsigned, an overflow).
func wantFor(t reflect.Type, raw []byte) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return "an integer that fits " + t.Kind().String()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return "a non-negative integer that fits " + t.Kind().String()
		}
	}
	return want(t)
}

// want names what a Go type accepts in JSON.
func want(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	if t == timeType {
		return "an RFC 3339 time"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a valid " + t.String()
}

// describe names the JSON type of a raw value, with the value itself for
// a short number.
func describe(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	short := func(kind string) string {
		if len(raw) <= 40 {
			return kind + " " + string(raw)
		}
		return kind
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return short("number")
}
