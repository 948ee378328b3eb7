package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// scriptedSandboxes is a CRI runtime that serves a fixed list of sandboxes,
// each READY one running a given image, as a newer or busier runtime could.
type scriptedSandboxes struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	config    string            // the verbose Status "config"
	sandboxes []string          // READY sandbox IDs in list order
	images    map[string]string // sandbox ID -> image in its verbose info ("" = none)
	failID    string            // PodSandboxStatus of this ID fails
}

func (s *scriptedSandboxes) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "scripted", RuntimeVersion: "0"}, nil
}

func (s *scriptedSandboxes) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, Info: map[string]string{"config": s.config}}, nil
}

func (s *scriptedSandboxes) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	var out []*runtimeapi.PodSandbox
	for _, id := range s.sandboxes {
		out = append(out, &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Name: id, Uid: "uid-" + id, Namespace: "ns"}})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (s *scriptedSandboxes) PodSandboxStatus(_ context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if r.GetPodSandboxId() == s.failID {
		return nil, fmt.Errorf("scripted failure")
	}
	info, _ := json.Marshal(map[string]string{"image": s.images[r.GetPodSandboxId()]})
	return &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{Id: r.GetPodSandboxId(), State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Name: r.GetPodSandboxId()}},
		Info:   map[string]string{"info": string(info)},
	}, nil
}

func serveScripted(t *testing.T, s *scriptedSandboxes) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	c, err := Dial(context.Background(), "unix://"+sock, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestInfoLearnsEveryReadySandboxImage pins issue 8 item 2: 40 READY
// sandboxes, the last 5 on pause:3.6 and 35 before them on pause:3.9. Every
// READY sandbox's image must be known before any image is removed, or Info
// fails closed.
func TestInfoLearnsEveryReadySandboxImage(t *testing.T) {
	mk := func() *scriptedSandboxes {
		s := &scriptedSandboxes{config: `{"sandboxImage":"registry.k8s.io/pause:3.9"}`, images: map[string]string{}}
		for i := range 40 {
			id := fmt.Sprintf("sb%02d", i)
			s.sandboxes = append(s.sandboxes, id)
			s.images[id] = "registry.k8s.io/pause:3.9"
			if i >= 35 {
				s.images[id] = "registry.k8s.io/pause:3.6"
			}
		}
		return s
	}
	t.Run("the images of sandboxes listed late are learned", func(t *testing.T) {
		got, err := serveScripted(t, mk()).Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.9"}; !slices.Equal(got.SandboxImages, want) {
			t.Errorf("sandbox images %v, want %v", got.SandboxImages, want)
		}
	})
	t.Run("a status that cannot be read fails closed", func(t *testing.T) {
		s := mk()
		s.failID = "sb38"
		if got, err := serveScripted(t, s).Info(context.Background()); err == nil {
			t.Errorf("Info = %v, nil; want an error, so that no image is removed", got.SandboxImages)
		}
	})
	t.Run("a sandbox silent about its image with no configured image fails closed", func(t *testing.T) {
		s := mk()
		s.config = `{}`
		s.images["sb39"] = ""
		if got, err := serveScripted(t, s).Info(context.Background()); err == nil {
			t.Errorf("Info = %v, nil; want an error", got.SandboxImages)
		}
	})
	t.Run("a sandbox silent about its image runs the configured one", func(t *testing.T) {
		s := mk()
		s.images["sb39"] = ""
		if _, err := serveScripted(t, s).Info(context.Background()); err != nil {
			t.Errorf("Info: %v", err)
		}
	})
}
