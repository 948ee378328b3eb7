package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nodegc/nodegc/engine/model"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wireSnapshot is Snapshot as it is decoded: the image filesystem's
// numbers are pointers so that a missing capacity or available is told
// apart from a zero one (capacity 0 is valid input: InvalidDiskCapacity).
type wireSnapshot struct {
	APIVersion   string              `json:"apiVersion"`
	Kind         string              `json:"kind"`
	TakenAt      time.Time           `json:"takenAt"`
	Runtime      model.RuntimeInfo   `json:"runtime"`
	ImageFs      *wireFsStats        `json:"imageFs"`
	RootFs       *model.FsStats      `json:"rootFs"`
	Images       []model.Image       `json:"images"`
	ImageRecords []model.ImageRecord `json:"imageRecords"`
	Sandboxes    []model.Sandbox     `json:"sandboxes"`
	Containers   []model.Container   `json:"containers"`
	PodSource    model.PodSource     `json:"podSource"`
	Logs         *model.LogFiles     `json:"logs"`
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
//
// A big snapshot's long lists are decoded in pieces on every core
// (decodeSplit); whatever that cannot prove right is decoded whole, so
// the result and the errors are json.Unmarshal's either way.
func DecodeSnapshot(data []byte) (model.Snapshot, error) {
	return DecodeSnapshotSplit(data, true)
}

// DecodeSnapshotSplit is DecodeSnapshot, with the lists split (when
// split and provably right) or not: tests compare the two.
func DecodeSnapshotSplit(data []byte, split bool) (model.Snapshot, error) {
	var (
		w  wireSnapshot
		ok bool
	)
	if split {
		w, ok = decodeSplit(data)
	}
	if !ok {
		w = wireSnapshot{}
		if err := json.Unmarshal(data, &w); err != nil {
			return model.Snapshot{}, decodeError(data, err)
		}
	}
	s := model.Snapshot{
		APIVersion: w.APIVersion, Kind: w.Kind, TakenAt: w.TakenAt, Runtime: w.Runtime,
		RootFs: w.RootFs, Images: w.Images, ImageRecords: w.ImageRecords,
		Sandboxes: w.Sandboxes, Containers: w.Containers, PodSource: w.PodSource, Logs: w.Logs,
	}
	if err := s.ValidateHeader(); err != nil {
		return model.Snapshot{}, err
	}
	switch {
	case w.ImageFs == nil:
		return model.Snapshot{}, &model.SnapshotError{Field: "imageFs", Msg: "required"}
	case w.ImageFs.CapacityBytes == nil:
		return model.Snapshot{}, &model.SnapshotError{Field: "imageFs.capacityBytes", Msg: "required"}
	case w.ImageFs.AvailableBytes == nil:
		return model.Snapshot{}, &model.SnapshotError{Field: "imageFs.availableBytes", Msg: "required"}
	}
	s.ImageFs = model.FsStats{
		Mountpoint: w.ImageFs.Mountpoint, CapacityBytes: *w.ImageFs.CapacityBytes,
		AvailableBytes: *w.ImageFs.AvailableBytes, UsedBytes: w.ImageFs.UsedBytes,
		Inodes: w.ImageFs.Inodes, InodesFree: w.ImageFs.InodesFree,
	}
	if err := s.ValidateItems(); err != nil {
		return model.Snapshot{}, err
	}
	return s, nil
}

// decodeError turns an encoding/json error into a *SnapshotError. The
// standard library names fields without array indexes ("images.id") and
// does not name the field of a bad time at all, so on error the document
// is walked again, field by field, to find the first bad value and its
// full path. The walk is slow, but only runs on bad input.
func decodeError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return &model.SnapshotError{Field: "", Msg: fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, syn)}
	}
	if e := locate(data, reflect.TypeFor[wireSnapshot](), nil); e != nil {
		return e
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &model.SnapshotError{Field: te.Field, Msg: fmt.Sprintf("want %s, got %s", want(te.Type), te.Value)}
	}
	return &model.SnapshotError{Field: "", Msg: err.Error()}
}

var timeType = reflect.TypeFor[time.Time]()

// locate finds the first value in raw that does not decode into t and
// returns its path and what is wrong, or nil. It walks the Go type with
// reflection because encoding/json's errors name no array index and no
// field of a bad time; the path is built with field.Path.
func locate(raw []byte, t reflect.Type, path *field.Path) *model.SnapshotError {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil // encoding/json leaves the zero value
	}
	bad := func() *model.SnapshotError {
		return &model.SnapshotError{Field: pathString(path), Msg: fmt.Sprintf("want %s, got %s", wantFor(t, raw), describe(raw))}
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
					if e := locate(m[k], f.Type, path.Child(name)); e != nil {
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
			if e := locate(it, t.Elem(), path.Index(i)); e != nil {
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
			if e := locate(m[k], t.Elem(), path.Child(k)); e != nil {
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

// pathString is the path as an error names it: "" for the document.
func pathString(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String()
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
