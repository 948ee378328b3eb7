package cgroupfs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups/systemd"
)

func TestCgroupNameConversions(t *testing.T) {
	tests := []struct {
		name     string
		cg       CgroupName
		cgroupfs string
		systemd  string
	}{
		{"the root is / under both drivers", CgroupName{}, "/", "/"},
		{"kubepods alone", CgroupName{"kubepods"}, "/kubepods", "/kubepods.slice"},
		{"a QoS class nests its slice under kubepods", CgroupName{"kubepods", "burstable"}, "/kubepods/burstable",
			"/kubepods.slice/kubepods-burstable.slice"},
		{"dashes of a pod UID become underscores in the systemd name", CgroupName{"kubepods", "burstable", "pod1234-abcd"},
			"/kubepods/burstable/pod1234-abcd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice"},
		{"a guaranteed pod sits directly under kubepods", CgroupName{"kubepods", "pod9-8"}, "/kubepods/pod9-8",
			"/kubepods.slice/kubepods-pod9_8.slice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cg.ToCgroupfs(); got != tt.cgroupfs {
				t.Errorf("ToCgroupfs = %q, want %q", got, tt.cgroupfs)
			}
			if got := tt.cg.ToSystemd(); got != tt.systemd {
				t.Errorf("ToSystemd = %q, want %q", got, tt.systemd)
			}
			if got := ParseCgroupfs(tt.cgroupfs); !reflect.DeepEqual(got, tt.cg) {
				t.Errorf("ParseCgroupfs(%q) = %q, want %q", tt.cgroupfs, got, tt.cg)
			}
			if got := ParseSystemd(tt.systemd); !reflect.DeepEqual(got, tt.cg) {
				t.Errorf("ParseSystemd(%q) = %q, want %q", tt.systemd, got, tt.cg)
			}
			// The kubelet expands the slice with runc's library; agree with it.
			if len(tt.cg) > 0 {
				parts := make([]string, len(tt.cg))
				for i, p := range tt.cg {
					parts[i] = strings.ReplaceAll(p, "-", "_")
				}
				want, err := systemd.ExpandSlice(strings.Join(parts, "-") + ".slice")
				if err != nil {
					t.Fatal(err)
				}
				if got := tt.cg.ToSystemd(); got != want {
					t.Errorf("ToSystemd = %q, runc's ExpandSlice = %q", got, want)
				}
			}
		})
	}
}

func TestParseCgroupfsTrimsSlashes(t *testing.T) {
	for _, p := range []string{"", "/", "//"} {
		if got := ParseCgroupfs(p); len(got) != 0 {
			t.Errorf("ParseCgroupfs(%q) = %q, want the root", p, got)
		}
	}
	if got := ParseCgroupfs("kubepods/besteffort/"); !reflect.DeepEqual(got, CgroupName{"kubepods", "besteffort"}) {
		t.Errorf("ParseCgroupfs without leading slash = %q", got)
	}
}

func TestParseContainerLeaf(t *testing.T) {
	tests := []struct {
		name string
		leaf string
		want ContainerLeaf
		ok   bool
	}{
		{"a bare ID is a containerd container under the cgroupfs driver", "0123abcd", ContainerLeaf{ID: "0123abcd"}, true},
		{"a cri-containerd scope is a containerd container under systemd", "cri-containerd-0123abcd.scope",
			ContainerLeaf{ID: "0123abcd", Runtime: "containerd"}, true},
		{"a crio scope is a CRI-O container", "crio-0123abcd.scope", ContainerLeaf{ID: "0123abcd", Runtime: "cri-o"}, true},
		{"a crio-conmon scope is CRI-O's monitor of the container", "crio-conmon-0123abcd.scope",
			ContainerLeaf{ID: "0123abcd", Runtime: "cri-o", Conmon: true}, true},
		{"CRI-O under the cgroupfs driver has no scope suffix", "crio-conmon-0123abcd",
			ContainerLeaf{ID: "0123abcd", Runtime: "cri-o", Conmon: true}, true},
		{"a docker scope is a cri-dockerd container", "docker-0123abcd.scope", ContainerLeaf{ID: "0123abcd", Runtime: "docker"}, true},
		{"a slice is no container", "kubepods-besteffort.slice", ContainerLeaf{}, false},
		{"a prefix without an ID is no container", "crio-.scope", ContainerLeaf{Runtime: "cri-o"}, false},
		{"a scope of an unknown runtime is no container", "session-1.scope", ContainerLeaf{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseContainerLeaf(tt.leaf)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseContainerLeaf(%q) = %+v, %v; want %+v, %v", tt.leaf, got, ok, tt.want, tt.ok)
			}
		})
	}
}
