package rules

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

func TestPlanLogs(t *testing.T) {
	ready := model.PodSource{Ready: true, RemovablePodUIDs: []string{"uid-gone", "uid-busy"}}
	exited := func(id, pod string) model.Container {
		return model.Container{ID: id, PodUID: pod, Name: "c", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)}
	}
	running := func(id, pod string) model.Container {
		return model.Container{ID: id, PodUID: pod, Name: "c", State: model.ContainerRunning, CreatedAt: nodetest.Ago(time.Hour)}
	}
	link := func(id string) model.LogLink {
		return model.LogLink{Path: "/var/log/containers/web_shop_c-" + id + ".log", Target: "/var/log/pods/shop_web_uid/c/0.log", ContainerID: id, Dangling: true}
	}
	live := func(id string) model.LogLink { l := link(id); l.Dangling = false; return l }
	into := func(id, target string) model.LogLink { l := live(id); l.Target = target; return l }
	tests := []struct {
		name       string
		logs       *model.LogFiles
		podLogsDir string
		survivors  []model.Container
		podSource  model.PodSource
		want       []string
	}{
		{
			name:      "no log scan plans nothing",
			logs:      nil,
			podSource: ready,
			want:      []string{},
		},
		{
			name:      "the log directory of a removable pod goes",
			logs:      &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"shop_web-0_uid-gone", "shop_api-0_uid-live"}},
			podSource: ready,
			want:      []string{"/var/log/pods/shop_web-0_uid-gone:pod-removable"},
		},
		{
			name:      "the log directory of a removable pod with a running container stays",
			logs:      &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"shop_web-0_uid-busy"}},
			survivors: []model.Container{running("r", "uid-busy")},
			podSource: ready,
			want:      []string{},
		},
		{
			name:      "without a ready pod source no pod directory goes",
			logs:      &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"shop_web-0_uid-gone"}},
			podSource: model.PodSource{Ready: false, RemovablePodUIDs: []string{"uid-gone"}},
			want:      []string{},
		},
		{
			name:       "a custom podLogsDir is honoured",
			logs:       &model.LogFiles{PodLogsDir: "/data/pods/", PodDirs: []string{"shop_web-0_uid-gone"}},
			podLogsDir: "/data/pods",
			podSource:  ready,
			want:       []string{"/data/pods/shop_web-0_uid-gone:pod-removable"},
		},
		{
			name:       "a scan of another directory than the policy's plans no pod directory",
			logs:       &model.LogFiles{PodLogsDir: "/elsewhere", PodDirs: []string{"shop_web-0_uid-gone"}},
			podLogsDir: "/var/log/pods",
			podSource:  ready,
			want:       []string{},
		},
		{
			name: "hostile pod directory names are never planned",
			logs: &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{
				"", ".", "..", "../uid-gone", "a/../../etc_x_uid-gone", "/etc/passwd_x_uid-gone", "x_y_uid-gone/..",
				"uid-gone", "x_uid-gone", "x_y\x00_uid-gone", "../x_y_uid-gone",
			}},
			podSource: ready,
			want:      []string{},
		},
		{
			name:       "a relative podLogsDir plans no pod directory",
			logs:       &model.LogFiles{PodDirs: []string{"shop_web-0_uid-gone"}},
			podLogsDir: "var/log/pods",
			podSource:  ready,
			want:       []string{},
		},
		{
			name:       "a root podLogsDir plans no pod directory",
			logs:       &model.LogFiles{PodDirs: []string{"shop_web-0_uid-gone"}},
			podLogsDir: "/",
			podSource:  ready,
			want:       []string{},
		},
		{
			name:      "a link whose target still exists stays, even when its container is gone or exited",
			logs:      &model.LogFiles{ContainerLinks: []model.LogLink{live("gone"), live("exited")}},
			survivors: []model.Container{exited("exited", "p")},
			want:      []string{},
		},
		{
			name:      "a link whose container is gone or exited is dangling, one whose container lives stays",
			logs:      &model.LogFiles{ContainerLinks: []model.LogLink{link("gone"), link("exited"), link("running"), link("created")}},
			survivors: []model.Container{exited("exited", "p"), running("running", "p"), {ID: "created", PodUID: "p", State: model.ContainerCreated, CreatedAt: nodetest.Ago(time.Hour)}},
			want: []string{
				"/var/log/containers/web_shop_c-gone.log:dangling",
				"/var/log/containers/web_shop_c-exited.log:dangling",
			},
		},
		{
			name: "a link into a removed pod's log directory goes in the same pass, after the directory",
			logs: &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"shop_web_uid-gone"}, ContainerLinks: []model.LogLink{
				into("gone", "/var/log/pods/shop_web_uid-gone/c/0.log"), link("dangling"),
			}},
			podSource: ready,
			want: []string{
				"/var/log/pods/shop_web_uid-gone:pod-removable",
				"/var/log/containers/web_shop_c-dangling.log:dangling",
				"/var/log/containers/web_shop_c-gone.log:pod-dir-removed",
			},
		},
		{
			name: "a link into a removed pod's log directory whose container has not exited stays",
			logs: &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"shop_web_uid-gone"}, ContainerLinks: []model.LogLink{
				into("created", "/var/log/pods/shop_web_uid-gone/c/0.log"),
			}},
			survivors: []model.Container{{ID: "created", PodUID: "uid-gone", Name: "c", State: model.ContainerCreated, CreatedAt: nodetest.Ago(time.Hour)}},
			podSource: ready,
			want:      []string{"/var/log/pods/shop_web_uid-gone:pod-removable"},
		},
		{
			name: "a link into a pod log directory that stays, a relative target or one outside, stays",
			logs: &model.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"shop_web_uid-gone", "shop_api_uid-live"}, ContainerLinks: []model.LogLink{
				into("a", "/var/log/pods/shop_api_uid-live/c/0.log"), into("b", "shop_web_uid-gone/c/0.log"),
				into("c", "/var/log/pods/../pods/x/shop_web_uid-gone/0.log"), into("d", "/var/log/podsx/shop_web_uid-gone/c/0.log"),
			}},
			podSource: ready,
			want:      []string{"/var/log/pods/shop_web_uid-gone:pod-removable"},
		},
		{
			name: "a link without a container ID takes it from its name",
			logs: &model.LogFiles{ContainerLinks: []model.LogLink{
				{Path: "/var/log/containers/web_shop_c-abc123.log", Dangling: true},
				{Path: "/var/log/containers/web_shop_c-live1.log", Dangling: true},
				{Path: "/var/log/containers/noid.log", Dangling: true},
			}},
			survivors: []model.Container{running("live1", "p")},
			want:      []string{"/var/log/containers/web_shop_c-abc123.log:dangling"},
		},
		{
			name: "hostile link paths are never planned",
			logs: &model.LogFiles{ContainerLinks: []model.LogLink{
				{Path: "", ContainerID: "gone", Dangling: true},
				{Path: "web_shop_c-gone.log", ContainerID: "gone", Dangling: true},
				{Path: "../containers/x-gone.log", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/containers/../../../etc/shadow.log", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/containers", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/containers/", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/containers/sub/x-gone.log", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/containers/x-gone.txt", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/containers/.log", ContainerID: "gone", Dangling: true},
				{Path: "/var/log/pods/x-gone.log", ContainerID: "gone", Dangling: true},
			}},
			want: []string{},
		},
		{
			name: "an unclean link path inside the directory is planned cleaned, once",
			logs: &model.LogFiles{ContainerLinks: []model.LogLink{
				{Path: "/var/log/containers/../containers/x-gone.log", ContainerID: "gone", Dangling: true},
				{Path: "/var/log//containers/x-gone.log", ContainerID: "gone", Dangling: true},
			}},
			want: []string{"/var/log/containers/x-gone.log:dangling"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nodetest.BaseSnapshot()
			s.Logs = tt.logs
			s.PodSource = tt.podSource
			got := planLogGC(s, tt.survivors, tt.podLogsDir)
			if r := nodetest.LogRemovals(got); !reflect.DeepEqual(r, tt.want) {
				t.Errorf("remove = %q\nwant     %q", r, tt.want)
			}
			for _, r := range got.Remove {
				assertSafeLogPath(t, r.Path, tt.podLogsDir)
			}
		})
	}
}

// assertSafeLogPath fails unless path is absolute, clean and strictly
// inside the pod logs directory or /var/log/containers.
func assertSafeLogPath(t *testing.T, path, podLogsDir string) {
	t.Helper()
	if podLogsDir == "" {
		podLogsDir = model.DefaultPodLogsDir
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.Contains(path, "..") {
		t.Errorf("unsafe log path %q", path)
		return
	}
	for _, dir := range []string{filepath.Clean(podLogsDir), model.ContainerLogsDir} {
		if filepath.Dir(path) == dir && path != dir {
			return
		}
	}
	t.Errorf("log path %q is not directly inside %s or %s", path, podLogsDir, model.ContainerLogsDir)
}

func TestPodUIDFromLogDir(t *testing.T) {
	tests := []struct{ name, dir, want string }{
		{name: "the UID is the last underscore-separated part", dir: "kube-system_coredns-5d78c9869d-abcde_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab", want: "0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"},
		{name: "a name with fewer than three parts has no UID", dir: "x_y", want: ""},
		{name: "an empty name has no UID", dir: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.PodUIDFromLogDir(tt.dir); got != tt.want {
				t.Errorf("model.PodUIDFromLogDir(%q) = %q, want %q", tt.dir, got, tt.want)
			}
		})
	}
}
