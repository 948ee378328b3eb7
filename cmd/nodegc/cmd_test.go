package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/engine"
)

// parse runs a subcommand built by build under a root with the global
// flags, and returns the global options and the error.
func parse(t *testing.T, build func(*factory, *globalOptions) *cobra.Command, args ...string) (*globalOptions, error) {
	t.Helper()
	c := newCLI("")
	g := &globalOptions{}
	root := &cobra.Command{Use: "nodegc", SilenceErrors: true, SilenceUsage: true}
	addGlobalFlags(root.PersistentFlags(), g)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	root.AddCommand(build(c.f, g))
	root.SetArgs(args)
	root.SetOut(c.out)
	root.SetErr(c.err)
	return g, root.ExecuteContext(context.Background())
}

func TestNewCmdPlan(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		want   planOptions
		global globalOptions
	}{
		{
			name: "no flags: table, full pass, kubelet defaults, nothing changed",
			args: []string{"plan"},
			want: planOptions{Output: "table", Policy: defaultPolicyFlags(map[string]bool{})},
		},
		{
			name: "from a snapshot at a fixed time as JSON",
			args: []string{"plan", "--from", "snap.json", "--now", "2026-01-02T15:04:05Z", "-o", "json"},
			want: planOptions{From: "snap.json", Now: "2026-01-02T15:04:05Z", Output: "json", Policy: defaultPolicyFlags(map[string]bool{"from": true, "now": true, "output": true})},
		},
		{
			name: "the kubelet's flag names set the policy and are marked changed",
			args: []string{"plan", "--image-gc-high-threshold=90", "--image-gc-low-threshold", "75",
				"--minimum-image-ttl-duration", "5m", "--image-maximum-gc-age", "24h",
				"--minimum-container-ttl-duration", "1m", "--maximum-dead-containers-per-container", "2",
				"--maximum-dead-containers", "100", "--low-diskspace-threshold-mb", "512", "--pod-logs-dir", "/logs"},
			want: planOptions{Output: "table", Policy: policyFlags{
				HighThreshold: 90, LowThreshold: 75, MinImageTTL: 5 * time.Minute, MaxImageAge: 24 * time.Hour,
				MinContainerTTL: time.Minute, MaxPerContainer: 2, MaxContainers: 100, LowDiskMB: 512, PodLogsDir: "/logs",
				Changed: map[string]bool{
					flagHighThreshold: true, flagLowThreshold: true, flagMinImageTTL: true, flagMaxImageAge: true,
					flagMinContainerTTL: true, flagMaxPerContainer: true, flagMaxContainers: true, flagLowDiskMB: true, flagPodLogsDir: true,
				},
			}},
		},
		{
			name:   "global flags before the subcommand reach it",
			args:   []string{"--runtime-endpoint", "unix:///x.sock", "--state-dir", "/s", "--kubelet-config", "/k.yaml", "plan", "--images"},
			want:   planOptions{Output: "table", Pass: passFlags{Images: true}, Policy: defaultPolicyFlags(map[string]bool{"runtime-endpoint": true, "state-dir": true, "kubelet-config": true, "images": true})},
			global: globalOptions{RuntimeEndpoint: "unix:///x.sock", StateDir: "/s", KubeletConfig: "/k.yaml", PodSource: podSourceAuto, Timeout: 30 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *planOptions
			g, err := parse(t, func(f *factory, g *globalOptions) *cobra.Command {
				return newCmdPlan(f, g, func(_ context.Context, o *planOptions) error { got = o; return nil })
			}, tt.args...)
			if err != nil {
				t.Fatalf("execute: %v", err)
			}
			got.IO, got.Global = nil, nil
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("options\n got %+v\nwant %+v", *got, tt.want)
			}
			if tt.global.StateDir != "" && *g != tt.global {
				t.Errorf("global options %+v, want %+v", *g, tt.global)
			}
		})
	}
}

// defaultPolicyFlags is what addPolicyFlags leaves when no policy flag is
// given.
func defaultPolicyFlags(changed map[string]bool) policyFlags {
	return policyFlags{
		HighThreshold: 85, LowThreshold: 80, MinImageTTL: 2 * time.Minute,
		MaxPerContainer: 1, MaxContainers: -1, LowDiskMB: 256, PodLogsDir: "/var/log/pods",
		Changed: changed,
	}
}

func TestNewCmdGC(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPass passFlags
		wantKind engine.PassKind
		dryRun   bool
		yes      bool
		readOnly bool
	}{
		{name: "no flags is a full pass that asks", args: []string{"gc"}, wantKind: engine.PassFull},
		{name: "--images alone is an image pass", args: []string{"gc", "--images"}, wantPass: passFlags{Images: true}, wantKind: engine.PassImages},
		{name: "--containers alone is a container pass", args: []string{"gc", "--containers"}, wantPass: passFlags{Containers: true}, wantKind: engine.PassContainers},
		{name: "--images --containers is a full pass", args: []string{"gc", "--images", "--containers"}, wantPass: passFlags{Images: true, Containers: true}, wantKind: engine.PassFull},
		{name: "--reclaim-all is the reclaim pass", args: []string{"gc", "--reclaim-all", "--yes"}, wantPass: passFlags{ReclaimAll: true}, wantKind: engine.PassReclaimAll, yes: true},
		{name: "-y is --yes", args: []string{"gc", "-y"}, wantKind: engine.PassFull, yes: true},
		{name: "--dry-run and --read-only", args: []string{"gc", "--dry-run", "--read-only"}, wantKind: engine.PassFull, dryRun: true, readOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *gcOptions
			_, err := parse(t, func(f *factory, g *globalOptions) *cobra.Command {
				return newCmdGC(f, g, func(_ context.Context, o *gcOptions) error { got = o; return nil })
			}, tt.args...)
			if err != nil {
				t.Fatalf("execute: %v", err)
			}
			if got.Pass != tt.wantPass || got.DryRun != tt.dryRun || got.Yes != tt.yes || got.ReadOnly != tt.readOnly {
				t.Errorf("options %+v", *got)
			}
			kind, err := got.Pass.kind()
			if err != nil || kind != tt.wantKind {
				t.Errorf("kind = %q, %v; want %q", kind, err, tt.wantKind)
			}
		})
	}
	t.Run("--reclaim-all with --images is bad input", func(t *testing.T) {
		_, err := passFlags{ReclaimAll: true, Images: true}.kind()
		if exitCode(err) != exitUsage || errorLine(err) != "nodegc: --reclaim-all: cannot be combined with --images or --containers" {
			t.Errorf("err = %v", err)
		}
	})
}

func TestNewCmdSnapshot(t *testing.T) {
	var got *snapshotOptions
	_, err := parse(t, func(f *factory, g *globalOptions) *cobra.Command {
		return newCmdSnapshot(f, g, func(_ context.Context, o *snapshotOptions) error { got = o; return nil })
	}, "snapshot", "-o", "snap.json", "--pod-logs-dir", "/p")
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != "snap.json" || got.PodLogsDir != "/p" || !got.Changed[flagPodLogsDir] {
		t.Errorf("options %+v", *got)
	}
}

func TestNewCmdSimnode(t *testing.T) {
	var got *simnodeOptions
	_, err := parse(t, func(f *factory, _ *globalOptions) *cobra.Command {
		return newCmdSimnode(f, func(_ context.Context, o *simnodeOptions) error { got = o; return nil })
	}, "simnode", "--listen", "unix:///tmp/s.sock", "--images", "7", "--pods", "3", "--dead-per-container", "2", "--seed", "42")
	if err != nil {
		t.Fatal(err)
	}
	o, err := simnodeConfig(got, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	if got.Listen != "unix:///tmp/s.sock" || o.Images != 7 || o.Pods != 3 || o.DeadPerContainer != 2 || o.Seed != 42 || !o.Start.Equal(fixedNow) {
		t.Errorf("options %+v, simnode options %+v", *got, o)
	}
	t.Run("a preset is overridden only by the flags given", func(t *testing.T) {
		o, err := simnodeConfig(&simnodeOptions{Preset: "demo", Images: 5, Pods: 10, Seed: 1, Changed: map[string]bool{"images": true}}, fixedNow)
		if err != nil {
			t.Fatal(err)
		}
		if o.Images != 5 || o.Pods != 20 {
			t.Errorf("images %d pods %d, want 5 (flag) and 20 (preset)", o.Images, o.Pods)
		}
	})
}

func TestNewCmdCgroups(t *testing.T) {
	var got *cgroupsOptions
	_, err := parse(t, func(f *factory, g *globalOptions) *cobra.Command {
		return newCmdCgroups(f, g, func(_ context.Context, o *cgroupsOptions) error { got = o; return nil })
	}, "cgroups", "-o", "json", "--cgroup-driver", "systemd")
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != "json" || got.CgroupDriver != "systemd" || !got.Changed["cgroup-driver"] || got.Changed["cgroup-root"] {
		t.Errorf("options %+v", *got)
	}
}
