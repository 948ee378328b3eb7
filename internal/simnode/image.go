package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageService serves the CRI ImageService from a Node.
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	n *Node
}

func (s *imageService) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		im, ok := n.refs[ref]
		if !ok {
			return &runtimeapi.ListImagesResponse{}, nil
		}
		return &runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{im.msg}}, nil
	}
	out := make([]*runtimeapi.Image, 0, n.images.len())
	for im := range n.images.all() {
		out = append(out, im.msg)
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// ImageStatus answers an empty response for a missing image, as containerd
// does: no image and no error.
func (s *imageService) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	im, ok := n.refs[req.GetImage().GetImage()]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: im.msg}, nil
}

// PullImage "pulls" an image: a reference the node already has resolves
// to its image; a new one becomes an image whose ID and size derive from
// the reference, so the same pull gives the same image on every node. It
// fails with ResourceExhausted when the image does not fit.
func (s *imageService) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, status.Error(codes.InvalidArgument, "image reference is empty")
	}
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if im, ok := n.refs[ref]; ok {
		return &runtimeapi.PullImageResponse{ImageRef: im.id}, nil
	}
	if !strings.Contains(ref, ":") && !strings.Contains(ref, "@") {
		ref += ":latest"
		if im, ok := n.refs[ref]; ok {
			return &runtimeapi.PullImageResponse{ImageRef: im.id}, nil
		}
	}
	sum := sha256.Sum256([]byte(ref))
	digestSum := sha256.Sum256(append([]byte("digest:"), ref...))
	lo, hi := n.o.Workload.PullMinBytes, n.o.Workload.PullMaxBytes
	size := lo
	if hi > lo {
		size = lo + int64(binary.LittleEndian.Uint64(sum[:8])%uint64(hi-lo))
	}
	if n.usedBytes()+size > n.o.CapacityBytes {
		return nil, status.Errorf(codes.ResourceExhausted, "failed to pull image %q: write /var/lib/containerd: no space left on device", ref)
	}
	repo, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	var tags []string
	if !strings.Contains(ref, "@") {
		tags = []string{ref}
	}
	im := n.newImage("sha256:"+hex.EncodeToString(sum[:]), tags, []string{repo + "@sha256:" + hex.EncodeToString(digestSum[:])}, size, false)
	return &runtimeapi.PullImageResponse{ImageRef: im.id}, nil
}

// RemoveImage removes the image a reference names, with all its tags, as
// containerd does. Removing a missing image succeeds, and so does removing
// an image containers use: containerd allows both.
func (s *imageService) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if im, ok := n.refs[req.GetImage().GetImage()]; ok {
		n.dropImage(im)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (s *imageService) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  n.now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: n.o.Mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: uint64(n.imageBytes)},
		InodesUsed: &runtimeapi.UInt64Value{Value: uint64(n.inodesUsed())},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
