package containerdapi

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestListResponseRoundTrip: what AppendListResponse encodes,
// ParseListResponse reads back, a record without KindLabel or with another
// kind as no sandbox's.
func TestListResponseRoundTrip(t *testing.T) {
	b := AppendListResponse(nil, []Container{
		{ID: "a", Kind: KindSandbox, Labels: map[string]string{"x": "y", "io.kubernetes.pod.uid": "u"}, Image: "pause:1"},
		{ID: "b", Kind: "container", Image: "app:1"},
		{ID: "c", Labels: map[string]string{KindLabel: KindSandbox}},
		{ID: "d"},
	})
	type got struct {
		id, image string
		sandbox   bool
	}
	var all []got
	if err := ParseListResponse(b, func(id, image []byte, sandbox bool) { all = append(all, got{string(id), string(image), sandbox}) }); err != nil {
		t.Fatal(err)
	}
	want := []got{{"a", "pause:1", true}, {"b", "app:1", false}, {"c", "", true}, {"d", "", false}}
	if !slices.Equal(all, want) {
		t.Errorf("parsed %+v, want %+v", all, want)
	}
}

func TestListRequestRoundTrip(t *testing.T) {
	got, err := ParseListRequest(AppendListRequest(nil, SandboxFilter, "id==x"))
	if err != nil || !slices.Equal(got, []string{SandboxFilter, "id==x"}) {
		t.Errorf("filters %q, %v; want the two sent", got, err)
	}
}

// TestParseListResponseSkipsWhatItDoesNotRead: a record as containerd
// sends it carries a runtime, a spec, timestamps and extensions, which
// are skipped; the ID, image and kind label are read.
func TestParseListResponseSkipsWhatItDoesNotRead(t *testing.T) {
	var rec []byte
	rec = protowire.AppendTag(rec, 4, protowire.BytesType) // runtime
	rec = protowire.AppendBytes(rec, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "io.containerd.runc.v2"))
	rec = protowire.AppendTag(rec, fieldContainerID, protowire.BytesType)
	rec = protowire.AppendString(rec, "sb1")
	rec = protowire.AppendTag(rec, 5, protowire.BytesType) // spec
	rec = protowire.AppendBytes(rec, make([]byte, 4096))
	rec = protowire.AppendTag(rec, 99, protowire.VarintType)
	rec = protowire.AppendVarint(rec, 7)
	b := AppendListResponse(nil, []Container{{ID: "ignored", Kind: KindSandbox, Labels: map[string]string{"a": "b"}, Image: "pause:3.10"}})
	// Append the extra fields to the record: a later ID wins.
	_, _, k := protowire.ConsumeTag(b)
	inner, _ := protowire.ConsumeBytes(b[k:])
	whole := protowire.AppendTag(nil, fieldResponseContainers, protowire.BytesType)
	whole = protowire.AppendBytes(whole, append(slices.Clone(inner), rec...))
	type got struct {
		id, image string
		sandbox   bool
	}
	var all []got
	if err := ParseListResponse(whole, func(id, image []byte, sandbox bool) { all = append(all, got{string(id), string(image), sandbox}) }); err != nil {
		t.Fatal(err)
	}
	if want := []got{{"sb1", "pause:3.10", true}}; !slices.Equal(all, want) {
		t.Errorf("parsed %+v, want %+v", all, want)
	}
	if err := ParseListResponse(whole[:len(whole)-1], func([]byte, []byte, bool) {}); err == nil {
		t.Error("a truncated answer parsed; want an error")
	}
}
