// Package containerdapi speaks the one call of containerd's own API that
// nodegc makes: the containers service's List, which containerd serves on
// the same socket as the CRI. It names, in one call, the containerd
// container record of every pod sandbox, whose image is the one the
// sandbox was created from: the very field containerd's verbose
// PodSandboxStatus reports as the info's "image" (containerd v1.6
// pkg/cri/server/sandbox_status.go and v2.2
// internal/cri/server/podsandbox/sandbox_status.go, toCRISandboxInfo: "Do
// not use config.SandboxImage ...", si.Image = ctrInfo.Image).
//
// The few fields are encoded and decoded by hand with protowire, with the
// numbers of containerd's api/services/containers/v1/containers.proto
// (the same in v1.6 and v2.2): the project takes no containerd API module.
// Servers (the simulated node, the scripted test runtime) register a
// Lister with Register.
package containerdapi

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/nodegc/nodegc/internal/pbwire"
)

// The containers service and the request nodegc makes of it.
const (
	// Service is the containers service's full name.
	Service = "containerd.services.containers.v1.Containers"
	// ListMethod is its List call.
	ListMethod = "/" + Service + "/List"
	// NamespaceHeader is the gRPC metadata key naming the containerd
	// namespace of a call.
	NamespaceHeader = "containerd-namespace"
	// CRINamespace is the namespace of containerd's CRI plugin.
	CRINamespace = "k8s.io"
	// KindLabel is the label containerd's CRI plugin sets on each container
	// record: KindSandbox on a pod sandbox's.
	KindLabel = "io.cri-containerd.kind"
	// KindSandbox is KindLabel's value on a sandbox's record.
	KindSandbox = "sandbox"
	// SandboxFilter is the List filter that selects the sandboxes' records.
	SandboxFilter = `labels."` + KindLabel + `"==` + KindSandbox
)

// Field numbers (containerd api/services/containers/v1/containers.proto).
const (
	fieldRequestFilters     = 1 // ListContainersRequest.filters
	fieldResponseContainers = 1 // ListContainersResponse.containers
	fieldContainerID        = 1 // Container.id
	fieldContainerLabels    = 2 // Container.labels
	fieldContainerImage     = 3 // Container.image
	fieldMapKey             = 1 // map entries
	fieldMapValue           = 2
)

// Container is the part of a containerd container record nodegc reads.
type Container struct {
	ID string
	// Kind, when not "", is sent as the KindLabel label, beside Labels
	// (which should not hold it).
	Kind   string
	Labels map[string]string
	Image  string
}

// AppendListRequest appends a ListContainersRequest with filters to b.
func AppendListRequest(b []byte, filters ...string) []byte {
	for _, f := range filters {
		b = protowire.AppendTag(b, fieldRequestFilters, protowire.BytesType)
		b = protowire.AppendString(b, f)
	}
	return b
}

// ParseListRequest returns the filters of a ListContainersRequest.
func ParseListRequest(b []byte) ([]string, error) {
	var out []string
	err := pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		if num != fieldRequestFilters || typ != protowire.BytesType {
			return protowire.ConsumeFieldValue(num, typ, b), nil
		}
		v, m, err := pbwire.ConsumeString(b)
		out = append(out, string(v))
		return m, err
	})
	return out, err
}

// AppendListResponse appends a ListContainersResponse listing cs to b.
func AppendListResponse(b []byte, cs []Container) []byte {
	sizes := make([]int, len(cs))
	total := 0
	for i, c := range cs {
		sizes[i] = containerSize(c)
		total += protowire.SizeTag(fieldResponseContainers) + protowire.SizeBytes(sizes[i])
	}
	b = slices.Grow(b, total)
	for i, c := range cs {
		b = protowire.AppendTag(b, fieldResponseContainers, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizes[i]))
		b = appendString(b, fieldContainerID, c.ID)
		if c.Kind != "" {
			b = appendLabel(b, KindLabel, c.Kind)
		}
		for k, v := range c.Labels {
			b = appendLabel(b, k, v)
		}
		if c.Image != "" {
			b = appendString(b, fieldContainerImage, c.Image)
		}
	}
	return b
}

// containerSize is the size of c's encoded record.
func containerSize(c Container) int {
	n := stringSize(fieldContainerID, c.ID)
	if c.Kind != "" {
		n += labelSize(KindLabel, c.Kind)
	}
	for k, v := range c.Labels {
		n += labelSize(k, v)
	}
	if c.Image != "" {
		n += stringSize(fieldContainerImage, c.Image)
	}
	return n
}

func stringSize(num protowire.Number, s string) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func labelSize(k, v string) int {
	return protowire.SizeTag(fieldContainerLabels) + protowire.SizeBytes(entrySize(k, v))
}

// entrySize is the size of a map<string, string> entry's encoding.
func entrySize(k, v string) int { return stringSize(fieldMapKey, k) + stringSize(fieldMapValue, v) }

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendLabel(b []byte, k, v string) []byte {
	b = protowire.AppendTag(b, fieldContainerLabels, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(entrySize(k, v)))
	b = appendString(b, fieldMapKey, k)
	return appendString(b, fieldMapValue, v)
}

// ParseListResponse calls each for every container of a
// ListContainersResponse b, in order, with its ID and image, and whether
// its KindLabel says it is a sandbox's; fields it does not read (spec,
// runtime, extensions) are skipped. As in any protobuf decoder, a later
// value of a field wins. id and image alias b: each copies what it keeps.
func ParseListResponse(b []byte, each func(id, image []byte, sandbox bool)) error {
	return pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		if num != fieldResponseContainers || typ != protowire.BytesType {
			return protowire.ConsumeFieldValue(num, typ, b), nil
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return m, nil
		}
		id, image, sandbox, err := parseContainer(v)
		if err != nil {
			return m, err
		}
		each(id, image, sandbox)
		return m, nil
	})
}

// parseContainer reads a Container's ID, image and whether its KindLabel
// is KindSandbox.
func parseContainer(b []byte) (id, image []byte, sandbox bool, err error) {
	err = pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (m int, err error) {
		if typ != protowire.BytesType {
			return protowire.ConsumeFieldValue(num, typ, b), nil
		}
		switch num {
		case fieldContainerID:
			id, m, err = pbwire.ConsumeString(b)
		case fieldContainerImage:
			image, m, err = pbwire.ConsumeString(b)
		case fieldContainerLabels:
			var v []byte
			if v, m = protowire.ConsumeBytes(b); m >= 0 {
				var k, val []byte
				if k, val, err = pbwire.MapEntry(v); err == nil && string(k) == KindLabel {
					sandbox = string(val) == KindSandbox
				}
			}
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		return m, err
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("container record: %w", err)
	}
	return id, image, sandbox, nil
}

// Raw returns a message whose wire form is b: an empty message carrying b
// as its unknown fields, which gRPC's proto codec marshals as they are. It
// is how a request or answer encoded here travels without generated types.
func Raw(b []byte) *emptypb.Empty {
	m := &emptypb.Empty{}
	m.ProtoReflect().SetUnknown(b)
	return m
}

// Lister answers the containers service's List, for Register.
type Lister interface {
	// ListContainerRecords returns the records of namespace that filters
	// select. An error should carry a gRPC status.
	ListContainerRecords(ctx context.Context, namespace string, filters []string) ([]Container, error)
}

// Register serves l as the containers service's List on s; the service's
// other calls answer Unimplemented.
func Register(s *grpc.Server, l Lister) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: Service,
		HandlerType: (*Lister)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "List", Handler: listHandler}},
		Metadata:    "github.com/containerd/containerd/api/services/containers/v1/containers.proto",
	}, l)
}

// listHandler decodes a List request, hands it to the Lister through the
// server's interceptors, and encodes its answer.
func listHandler(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
	in := &emptypb.Empty{}
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, req any) (any, error) {
		filters, err := ParseListRequest(req.(*emptypb.Empty).ProtoReflect().GetUnknown())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "list containers: %v", err)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		ns := md.Get(NamespaceHeader)
		if len(ns) == 0 || ns[0] == "" {
			// containerd's answer to a call without a namespace.
			return nil, status.Error(codes.FailedPrecondition, "namespace is required: failed precondition")
		}
		cs, err := srv.(Lister).ListContainerRecords(ctx, ns[0], filters)
		if err != nil {
			return nil, err
		}
		return Raw(AppendListResponse(nil, cs)), nil
	}
	if icpt == nil {
		return h(ctx, in)
	}
	return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: ListMethod}, h)
}
