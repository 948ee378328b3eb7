// Package critest holds scripted CRI runtimes for tests: small gRPC
// servers that answer exactly what a test needs, such as a runtime whose
// READY sandboxes run different sandbox images.
package critest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/containerdapi"
)

// Sandboxes is a scripted CRI runtime that serves a fixed list of sandboxes,
// each READY one running a given image, as a newer or busier runtime could.
type Sandboxes struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	Config string            // the verbose Status "config"
	IDs    []string          // READY sandbox IDs in list order
	Images map[string]string // sandbox ID -> image in its verbose info ("" = none)
	FailID string            // PodSandboxStatus of this ID fails
	// StatusCalls counts the PodSandboxStatus calls served.
	StatusCalls atomic.Int64
	// Bulk, when not nil, makes the runtime serve containerd's containers
	// List (containerdapi): a sandbox record for each ID in it, in IDs'
	// order, naming the image Bulk gives ("" = none); without it the call
	// is Unimplemented, as on CRI-O.
	Bulk map[string]string
	// BulkCalls counts the containers List calls served.
	BulkCalls atomic.Int64
}

// ListContainerRecords serves containerd's containers List from Bulk, for
// the sandbox filter in the CRI's namespace.
func (s *Sandboxes) ListContainerRecords(_ context.Context, ns string, filters []string) ([]containerdapi.Container, error) {
	s.BulkCalls.Add(1)
	if s.Bulk == nil {
		return nil, status.Error(codes.Unimplemented, "unknown service "+containerdapi.Service)
	}
	if ns != containerdapi.CRINamespace || !slices.Equal(filters, []string{containerdapi.SandboxFilter}) {
		return nil, status.Errorf(codes.InvalidArgument, "scripted: only the sandbox filter in %s is served", containerdapi.CRINamespace)
	}
	var out []containerdapi.Container
	for _, id := range s.IDs {
		if im, ok := s.Bulk[id]; ok {
			out = append(out, containerdapi.Container{ID: id, Kind: containerdapi.KindSandbox, Image: im})
		}
	}
	return out, nil
}

// Version names the scripted runtime.
func (s *Sandboxes) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "scripted", RuntimeVersion: "0"}, nil
}

// Status reports Config as the verbose "config".
func (s *Sandboxes) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, Info: map[string]string{"config": s.Config}}, nil
}

// ListPodSandbox lists IDs, all READY, in order.
func (s *Sandboxes) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	var out []*runtimeapi.PodSandbox
	for _, id := range s.IDs {
		out = append(out, &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Name: id, Uid: "uid-" + id, Namespace: "ns"}})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

// PodSandboxStatus reports the sandbox's image from Images in its
// verbose info, or fails for FailID.
func (s *Sandboxes) PodSandboxStatus(_ context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s.StatusCalls.Add(1)
	if r.GetPodSandboxId() == s.FailID {
		return nil, fmt.Errorf("scripted failure")
	}
	info, _ := json.Marshal(map[string]string{"image": s.Images[r.GetPodSandboxId()]})
	return &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{Id: r.GetPodSandboxId(), State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Name: r.GetPodSandboxId()}},
		Info:   map[string]string{"info": string(info)},
	}, nil
}

// Serve serves srv on a unix socket in a short temp dir until the test
// ends, and returns its endpoint. A srv that is also a containerdapi.Lister
// serves containerd's containers List beside the CRI.
func Serve(t testing.TB, srv runtimeapi.RuntimeServiceServer) string {
	t.Helper()
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, srv)
	if l, ok := srv.(containerdapi.Lister); ok {
		containerdapi.Register(g, l)
	}
	return ServeGRPC(t, g)
}

// ServeGRPC serves g on a unix socket in a short temp dir until the test
// ends, and returns its endpoint: Serve for a server built with options
// of its own (a proxy's codec and unknown-service handler).
func ServeGRPC(t testing.TB, g *grpc.Server) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "critest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return "unix://" + sock
}
