// Package pbwire walks protobuf messages field by field with protowire,
// for the few CRI and containerd answers nodegc decodes without generated
// types (a large listing's strings kept as bytes, a message no module of
// ours defines).
package pbwire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrInvalidUTF8 is a string field that is not valid UTF-8, which proto3
// forbids.
var ErrInvalidUTF8 = errors.New("string field contains invalid UTF-8")

// ConsumeString reads a length-delimited string field's value, and its
// length (negative: a protowire error code).
func ConsumeString(b []byte) ([]byte, int, error) {
	v, m := protowire.ConsumeBytes(b)
	if m >= 0 && !utf8.Valid(v) {
		return nil, m, ErrInvalidUTF8
	}
	return v, m, nil
}

// EachField calls field for each field of the message b, in order, with
// the bytes from its value on; field consumes the value and returns its
// length (negative: a protowire error code) or an error.
func EachField(b []byte, field func(num protowire.Number, typ protowire.Type, b []byte) (int, error)) error {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return WireError(k)
		}
		b = b[k:]
		m, err := field(num, typ, b)
		if err != nil {
			return err
		}
		if m < 0 {
			return WireError(m)
		}
		b = b[m:]
	}
	return nil
}

// MapEntry reads a map<string, string> entry (key field 1, value field
// 2); a missing key or value is nil.
func MapEntry(b []byte) (key, value []byte, err error) {
	err = EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (m int, err error) {
		switch {
		case typ == protowire.BytesType && num == 1:
			key, m, err = ConsumeString(b)
		case typ == protowire.BytesType && num == 2:
			value, m, err = ConsumeString(b)
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		return m, err
	})
	return key, value, err
}

// WireError is the error of a protowire error code n.
func WireError(n int) error {
	return fmt.Errorf("decode response: %w", protowire.ParseError(n))
}
