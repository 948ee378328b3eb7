package cri

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/pbwire"
)

// A node with 100,000 dead containers answers ListContainers with some
// 50 MiB of protobuf, mostly label and annotation maps. Decoding it into the
// generated types builds two maps and a dozen strings per container, of
// which the engine keeps nine fields and one label; that decoding is most of
// what a plan costs over the bare listing. So ListContainers decodes the
// response itself, straight into engine.Container: it reads the fields the
// engine uses, takes the pod UID from the labels without building the map,
// skips the annotations, and shares the strings that repeat across
// containers (sandbox IDs, pod UIDs, names, image IDs and references). The
// result is the same as converting the generated type (see
// TestDecodeContainersMatchesGeneratedCode and FuzzDecodeContainers).

// rawCodec is the codec of calls whose response the adapter decodes
// itself: it marshals requests as gRPC's proto codec does, and hands a
// response into a rawDecoder its bytes. Its name is "proto" so that the
// content-type on the wire is the usual one.
type rawCodec struct{}

// rawDecoder is a response type that decodes its own wire bytes.
type rawDecoder interface {
	decode(b []byte) error
}

func (rawCodec) Name() string { return proto.Name }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2(proto.Name).Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	d, ok := v.(rawDecoder)
	if !ok {
		return encoding.GetCodecV2(proto.Name).Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return d.decode(buf.ReadOnlyData()) // copies what it keeps
}

// rawCall is the call option that makes a call use rawCodec.
var rawCall = grpc.ForceCodecV2(rawCodec{})

// Field numbers of runtime.v1 messages (k8s.io/cri-api api.proto).
const (
	fieldListContainers = 1 // ListContainersResponse.containers

	fieldContainerID       = 1
	fieldContainerSandbox  = 2
	fieldContainerMetadata = 3
	fieldContainerImage    = 4
	fieldContainerImageRef = 5
	fieldContainerState    = 6
	fieldContainerCreated  = 7
	fieldContainerLabels   = 8
	fieldContainerImageID  = 10

	fieldMetadataName    = 1 // ContainerMetadata
	fieldMetadataAttempt = 2
	fieldImageSpecImage  = 1 // ImageSpec.image
)

// containerList is a ListContainersResponse decoded into engine types.
type containerList struct {
	items []engine.Container
	// strs shares the strings that repeat across containers.
	strs strTable
}

// containerWire is one Container as read off the wire, before the engine
// type is made of it (image_id falls back on image_ref).
type containerWire struct {
	id, sandbox, name, image, imageRef, imageID, podUID []byte
	attempt                                             uint32
	state                                               runtimeapi.ContainerState
	created                                             int64
}

func (l *containerList) decode(b []byte) error {
	// Count the containers first, so that the slice is made once.
	n := 0
	for p := b; len(p) > 0; {
		num, typ, k := protowire.ConsumeTag(p)
		if k < 0 {
			return pbwire.WireError(k)
		}
		m := protowire.ConsumeFieldValue(num, typ, p[k:])
		if m < 0 {
			return pbwire.WireError(m)
		}
		if num == fieldListContainers && typ == protowire.BytesType {
			n++
		}
		p = p[k+m:]
	}
	l.items = make([]engine.Container, 0, n)
	if l.strs == nil {
		l.strs = make(strTable, n/4)
	}
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		b = b[k:]
		if num != fieldListContainers || typ != protowire.BytesType {
			b = b[protowire.ConsumeFieldValue(num, typ, b):]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		b = b[m:]
		var w containerWire
		if err := w.decode(v); err != nil {
			return fmt.Errorf("container %d: %w", len(l.items), err)
		}
		l.items = append(l.items, l.container(&w))
	}
	return nil
}

// container makes the engine type, as toContainer makes it of the
// generated type.
func (l *containerList) container(w *containerWire) engine.Container {
	id := w.imageID
	if len(id) == 0 {
		id = w.imageRef
	}
	return engine.Container{
		ID:           string(w.id),
		PodSandboxID: l.strs.share(w.sandbox),
		PodUID:       l.strs.share(w.podUID),
		Name:         l.strs.share(w.name),
		Attempt:      w.attempt,
		ImageID:      l.strs.share(id),
		ImageRef:     l.strs.share(w.image),
		State:        containerState(w.state),
		CreatedAt:    nsTime(w.created),
	}
}

// strTable keeps one copy of each string a listing decodes: the IDs,
// names and images that repeat across its items.
type strTable map[string]string

// share returns b as a string, the same string for the same bytes.
func (t strTable) share(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := t[string(b)]; ok {
		return s
	}
	s := string(b)
	t[s] = s
	return s
}

// decode reads one Container. As in any protobuf decoder, a later value of
// a field wins, an embedded message seen twice is merged, a later map entry
// wins over an earlier one with the same key, and a field of an unexpected
// wire type is skipped as unknown.
func (w *containerWire) decode(b []byte) error {
	return pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (m int, err error) {
		m = -1
		switch {
		case typ == protowire.BytesType && num == fieldContainerID:
			w.id, m, err = pbwire.ConsumeString(b)
		case typ == protowire.BytesType && num == fieldContainerSandbox:
			w.sandbox, m, err = pbwire.ConsumeString(b)
		case typ == protowire.BytesType && num == fieldContainerImageRef:
			w.imageRef, m, err = pbwire.ConsumeString(b)
		case typ == protowire.BytesType && num == fieldContainerImageID:
			w.imageID, m, err = pbwire.ConsumeString(b)
		case typ == protowire.BytesType && num == fieldContainerMetadata:
			var v []byte
			v, m = protowire.ConsumeBytes(b)
			if m >= 0 {
				err = w.decodeMetadata(v)
			}
		case typ == protowire.BytesType && num == fieldContainerImage:
			var v []byte
			v, m = protowire.ConsumeBytes(b)
			if m >= 0 {
				err = w.decodeImageSpec(v)
			}
		case typ == protowire.BytesType && num == fieldContainerLabels:
			var v []byte
			v, m = protowire.ConsumeBytes(b)
			if m >= 0 {
				err = w.decodeLabel(v)
			}
		case typ == protowire.VarintType && num == fieldContainerState:
			var v uint64
			v, m = protowire.ConsumeVarint(b)
			w.state = runtimeapi.ContainerState(int32(v))
		case typ == protowire.VarintType && num == fieldContainerCreated:
			var v uint64
			v, m = protowire.ConsumeVarint(b)
			w.created = int64(v)
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		return m, err
	})
}

func (w *containerWire) decodeMetadata(b []byte) error {
	return pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (m int, err error) {
		switch {
		case typ == protowire.BytesType && num == fieldMetadataName:
			w.name, m, err = pbwire.ConsumeString(b)
		case typ == protowire.VarintType && num == fieldMetadataAttempt:
			var v uint64
			v, m = protowire.ConsumeVarint(b)
			w.attempt = uint32(v)
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		return m, err
	})
}

func (w *containerWire) decodeImageSpec(b []byte) error {
	return pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (m int, err error) {
		if typ == protowire.BytesType && num == fieldImageSpecImage {
			w.image, m, err = pbwire.ConsumeString(b)
		} else {
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		return m, err
	})
}

// decodeLabel reads one labels map entry, keeping the value of the pod UID
// label. A missing key or value is the empty string, as in a map.
func (w *containerWire) decodeLabel(b []byte) error {
	key, value, err := pbwire.MapEntry(b)
	if err != nil {
		return err
	}
	if string(key) == labelPodUID {
		w.podUID = value
		if value == nil {
			w.podUID = []byte{}
		}
	}
	return nil
}
