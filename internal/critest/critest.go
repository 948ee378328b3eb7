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
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
// ends, and returns its endpoint.
func Serve(t testing.TB, srv runtimeapi.RuntimeServiceServer) string {
	t.Helper()
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, srv)
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
