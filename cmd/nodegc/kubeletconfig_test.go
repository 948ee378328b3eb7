package main

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestParseKubeletConfig(t *testing.T) {
	full := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m0s
imageMaximumGCAge: 72h0m0s
evictionHard:
  imagefs.available: 10%
  memory.available: 200Mi
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: systemd
cgroupRoot: /
podLogsDir: /var/log/pods2
systemReserved:
  memory: 500Mi
  cpu: 100m
kubeReserved:
  memory: 1Gi
authentication:
  anonymous:
    enabled: false
`
	tests := []struct {
		name string
		yaml string
		want kubeletConfig
	}{
		{
			name: "every field nodegc uses is read and unknown fields are ignored",
			yaml: full,
			want: kubeletConfig{
				Path:                        "k.yaml",
				ImageGCHighThresholdPercent: ptr(90),
				ImageGCLowThresholdPercent:  ptr(70),
				ImageMinimumGCAge:           ptr(5 * time.Minute),
				ImageMaximumGCAge:           ptr(72 * time.Hour),
				EvictionHard:                map[string]string{"imagefs.available": "10%", "memory.available": "200Mi"},
				ContainerRuntimeEndpoint:    "unix:///run/containerd/containerd.sock",
				CgroupDriver:                "systemd",
				CgroupRoot:                  "/",
				PodLogsDir:                  "/var/log/pods2",
				SystemReserved:              map[string]string{"memory": "500Mi", "cpu": "100m"},
				KubeReserved:                map[string]string{"memory": "1Gi"},
			},
		},
		{
			// pkg/kubelet/apis/config/v1beta1/defaults.go (v1.36.3):
			// "if obj.ImageMinimumGCAge == zeroDuration { ... 2 * time.Minute }".
			name: "a zero imageMinimumGCAge is the kubelet's default, 2 minutes, as the kubelet reads its file",
			yaml: "imageMinimumGCAge: 0s\n",
			want: kubeletConfig{Path: "k.yaml", ImageMinimumGCAge: ptr(2 * time.Minute)},
		},
		{
			name: "evictionHard percentages and quantities of the disk signals are accepted, other signals are not judged",
			yaml: "evictionHard:\n  imagefs.available: 15%\n  imagefs.inodesFree: 5%\n  nodefs.available: 1.5Gi\n  nodefs.inodesFree: \"100000\"\n  memory.available: lots\n",
			want: kubeletConfig{Path: "k.yaml", EvictionHard: map[string]string{
				"imagefs.available": "15%", "imagefs.inodesFree": "5%", "nodefs.available": "1.5Gi", "nodefs.inodesFree": "100000", "memory.available": "lots",
			}},
		},
		{
			name: "an empty file sets nothing",
			yaml: "",
			want: kubeletConfig{Path: "k.yaml"},
		},
		{
			name: "kind and apiVersion may be absent",
			yaml: "imageGCHighThresholdPercent: 95\n",
			want: kubeletConfig{Path: "k.yaml", ImageGCHighThresholdPercent: ptr(95)},
		},
		{
			name: "an explicit zero is set, not absent",
			yaml: "imageGCLowThresholdPercent: 0\nimageMaximumGCAge: 0s\n",
			want: kubeletConfig{Path: "k.yaml", ImageGCLowThresholdPercent: ptr(0), ImageMaximumGCAge: ptr(time.Duration(0))},
		},
		{
			name: "null is absent",
			yaml: "imageGCHighThresholdPercent: null\n",
			want: kubeletConfig{Path: "k.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseKubeletConfig("k.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestParseKubeletConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the exact error line
	}{
		{
			name: "a wrong kind names kind",
			yaml: "kind: Pod\n",
			want: `nodegc: k.yaml: kind: must be KubeletConfiguration, got "Pod"`,
		},
		{
			name: "a wrong apiVersion names apiVersion",
			yaml: "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n",
			want: `nodegc: k.yaml: apiVersion: must be kubelet.config.k8s.io/v1beta1, got "kubelet.config.k8s.io/v1alpha1"`,
		},
		{
			name: "a string threshold names the field and the type",
			yaml: "imageGCHighThresholdPercent: \"85\"\n",
			want: `nodegc: k.yaml: imageGCHighThresholdPercent: must be an integer, got string`,
		},
		{
			name: "a fractional threshold is not an integer",
			yaml: "imageGCLowThresholdPercent: 79.5\n",
			want: `nodegc: k.yaml: imageGCLowThresholdPercent: must be an integer, got number 79.5`,
		},
		{
			name: "a duration that does not parse names the field",
			yaml: "imageMinimumGCAge: two minutes\n",
			want: `nodegc: k.yaml: imageMinimumGCAge: invalid duration "two minutes" (want a Go duration such as "2m0s")`,
		},
		{
			name: "a numeric duration is not a duration string",
			yaml: "imageMaximumGCAge: 3600\n",
			want: `nodegc: k.yaml: imageMaximumGCAge: must be a string, got number`,
		},
		{
			name: "evictionHard must be a mapping",
			yaml: "evictionHard: 15%\n",
			want: `nodegc: k.yaml: evictionHard: must be a mapping of strings, got string`,
		},
		{
			name: "an unknown cgroup driver names cgroupDriver",
			yaml: "cgroupDriver: docker\n",
			want: `nodegc: k.yaml: cgroupDriver: must be "cgroupfs" or "systemd", got "docker"`,
		},
		{
			name: "a relative podLogsDir is refused, as the kubelet does",
			yaml: "podLogsDir: logs\n",
			want: `nodegc: k.yaml: podLogsDir: must be an absolute path, got "logs"`,
		},
		{
			name: "podLogsDir / is refused: log GC would scan the whole filesystem",
			yaml: "podLogsDir: /\n",
			want: `nodegc: k.yaml: podLogsDir: must not be the root directory, got "/"`,
		},
		{
			name: "podLogsDir /. is the root directory too",
			yaml: "podLogsDir: /.\n",
			want: `nodegc: k.yaml: podLogsDir: must not be the root directory, got "/."`,
		},
		{
			name: "an evictionHard imagefs value that does not parse names the signal",
			yaml: "evictionHard:\n  imagefs.available: lots\n",
			want: `nodegc: k.yaml: evictionHard: imagefs.available: "lots" is not a percentage such as 15% or a quantity such as 1Gi`,
		},
		{
			name: "an evictionHard nodefs percentage above 100 is refused",
			yaml: "evictionHard:\n  nodefs.available: 150%\n",
			want: `nodegc: k.yaml: evictionHard: nodefs.available: "150%" is not a percentage such as 15% or a quantity such as 1Gi`,
		},
		{
			name: "an evictionHard quantity with an unknown unit is refused",
			yaml: "evictionHard:\n  imagefs.available: 1Gb\n",
			want: `nodegc: k.yaml: evictionHard: imagefs.available: "1Gb" is not a percentage such as 15% or a quantity such as 1Gi`,
		},
		{
			name: "a YAML syntax error names the file and the line",
			yaml: "imageGCHighThresholdPercent: 85\n  bad: [\n",
			want: `nodegc: k.yaml: yaml: line 2: mapping values are not allowed in this context`,
		},
		{
			name: "a document that is not a mapping is refused",
			yaml: "- a\n- b\n",
			want: `nodegc: k.yaml: not a KubeletConfiguration mapping`,
		},
		{
			name: "the first bad field is reported",
			yaml: "imageGCHighThresholdPercent: x\nimageGCLowThresholdPercent: y\n",
			want: `nodegc: k.yaml: imageGCHighThresholdPercent: must be an integer, got string`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseKubeletConfig("k.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("parse succeeded, want an error")
			}
			if got := errorLine(err); got != tt.want {
				t.Errorf("error line\n got %s\nwant %s", got, tt.want)
			}
			if code := exitCode(err); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
		})
	}
}

func TestLoadKubeletConfigMissingFile(t *testing.T) {
	_, err := loadKubeletConfig("/nonexistent/kubelet.yaml")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping fs.ErrNotExist", err)
	}
	if got, want := errorLine(err), "nodegc: /nonexistent/kubelet.yaml: no such file or directory"; got != want {
		t.Errorf("error line %q, want %q", got, want)
	}
}
