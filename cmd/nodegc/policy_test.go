package main

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

func TestResolvePolicyPrecedence(t *testing.T) {
	cfg := &kubeletConfig{
		Path:                        "/etc/kubelet.yaml",
		ImageGCHighThresholdPercent: ptr(90),
		ImageGCLowThresholdPercent:  ptr(70),
		ImageMinimumGCAge:           ptr(10 * time.Minute),
		EvictionHard:                map[string]string{"imagefs.available": "20%"},
		PodLogsDir:                  "/data/pods",
	}
	const fromCfg = "kubelet config /etc/kubelet.yaml"
	tests := []struct {
		name       string
		flags      policyFlags
		cfg        *kubeletConfig
		check      func(engine.Policy) bool
		setting    string
		wantValue  string
		wantSource string
	}{
		{
			name:       "without flag or config the kubelet default applies",
			setting:    flagHighThreshold,
			check:      func(p engine.Policy) bool { return p.Image.HighThresholdPercent == 85 },
			wantValue:  "85",
			wantSource: sourceDefault,
		},
		{
			name:       "the config overrides the default",
			cfg:        cfg,
			setting:    flagHighThreshold,
			check:      func(p engine.Policy) bool { return p.Image.HighThresholdPercent == 90 },
			wantValue:  "90",
			wantSource: fromCfg,
		},
		{
			name:       "a flag given on the command line overrides the config",
			cfg:        cfg,
			flags:      policyFlags{HighThreshold: 95, Changed: map[string]bool{flagHighThreshold: true}},
			setting:    flagHighThreshold,
			check:      func(p engine.Policy) bool { return p.Image.HighThresholdPercent == 95 },
			wantValue:  "95",
			wantSource: sourceFlag,
		},
		{
			name:       "a flag's value that was not given does not override the config",
			cfg:        cfg,
			flags:      policyFlags{HighThreshold: 85},
			setting:    flagHighThreshold,
			check:      func(p engine.Policy) bool { return p.Image.HighThresholdPercent == 90 },
			wantValue:  "90",
			wantSource: fromCfg,
		},
		{
			name:       "a field the config does not set keeps the default",
			cfg:        cfg,
			setting:    flagMaxImageAge,
			check:      func(p engine.Policy) bool { return p.Image.MaxAge == 0 },
			wantValue:  "0s",
			wantSource: sourceDefault,
		},
		{
			name:       "the minimum image TTL comes from imageMinimumGCAge",
			cfg:        cfg,
			setting:    flagMinImageTTL,
			check:      func(p engine.Policy) bool { return p.Image.MinAge == 10*time.Minute },
			wantValue:  "10m0s",
			wantSource: fromCfg,
		},
		{
			name:       "container flags have no config field and take the flag",
			cfg:        cfg,
			flags:      policyFlags{MaxPerContainer: 3, Changed: map[string]bool{flagMaxPerContainer: true}},
			setting:    flagMaxPerContainer,
			check:      func(p engine.Policy) bool { return p.Container.MaxPerPodContainer == 3 },
			wantValue:  "3",
			wantSource: sourceFlag,
		},
		{
			name:       "evictionHard from the config replaces the defaults",
			cfg:        cfg,
			setting:    settingEvictionHard,
			check:      func(p engine.Policy) bool { return len(p.Disk.EvictionHard) == 1 },
			wantValue:  "imagefs.available=20%",
			wantSource: fromCfg,
		},
		{
			name:       "podLogsDir comes from the config",
			cfg:        cfg,
			setting:    flagPodLogsDir,
			check:      func(p engine.Policy) bool { return p.PodLogsDir == "/data/pods" },
			wantValue:  "/data/pods",
			wantSource: fromCfg,
		},
		{
			name:       "--pod-logs-dir overrides podLogsDir",
			cfg:        cfg,
			flags:      policyFlags{PodLogsDir: "/x", Changed: map[string]bool{flagPodLogsDir: true}},
			setting:    flagPodLogsDir,
			check:      func(p engine.Policy) bool { return p.PodLogsDir == "/x" },
			wantValue:  "/x",
			wantSource: sourceFlag,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, prov, err := resolvePolicy(tt.flags, tt.cfg)
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if !tt.check(p) {
				t.Errorf("policy %+v does not hold the expected value", p)
			}
			s := prov.source(tt.setting)
			if s.Value != tt.wantValue || s.Source != tt.wantSource {
				t.Errorf("%s = %q from %q, want %q from %q", tt.setting, s.Value, s.Source, tt.wantValue, tt.wantSource)
			}
		})
	}
}

func TestResolvePolicyErrors(t *testing.T) {
	tests := []struct {
		name  string
		flags policyFlags
		cfg   *kubeletConfig
		want  string
	}{
		{
			name:  "low above high from flags names both flags",
			flags: policyFlags{HighThreshold: 85, LowThreshold: 90, Changed: map[string]bool{flagLowThreshold: true}},
			want:  "nodegc: --image-gc-low-threshold: 90 must not exceed --image-gc-high-threshold 85",
		},
		{
			name: "a bad value from the config also names the config field and file",
			cfg:  &kubeletConfig{Path: "/k.yaml", ImageGCLowThresholdPercent: ptr(90)},
			want: "nodegc: --image-gc-low-threshold: 90 must not exceed --image-gc-high-threshold 85 (imageGCLowThresholdPercent in kubelet config /k.yaml)",
		},
		{
			name:  "MaxAge not above MinAge",
			flags: policyFlags{MaxImageAge: time.Minute, Changed: map[string]bool{flagMaxImageAge: true}},
			want:  "nodegc: --image-maximum-gc-age: 1m0s must be greater than --minimum-image-ttl-duration 2m0s",
		},
		{
			name:  "a relative --pod-logs-dir",
			flags: policyFlags{PodLogsDir: "pods", Changed: map[string]bool{flagPodLogsDir: true}},
			want:  `nodegc: --pod-logs-dir: must be an absolute path, got "pods"`,
		},
		{
			name:  "--pod-logs-dir / is refused: log GC would scan the whole filesystem",
			flags: policyFlags{PodLogsDir: "/", Changed: map[string]bool{flagPodLogsDir: true}},
			want:  `nodegc: --pod-logs-dir: must not be the root directory, got "/"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := resolvePolicy(tt.flags, tt.cfg)
			if err == nil {
				t.Fatal("resolve succeeded, want an error")
			}
			if got := errorLine(err); got != tt.want {
				t.Errorf("error line\n got %s\nwant %s", got, tt.want)
			}
			if exitCode(err) != exitUsage {
				t.Errorf("exit code %d, want %d", exitCode(err), exitUsage)
			}
		})
	}
	t.Run("the policy error stays a *engine.PolicyError under the explanation", func(t *testing.T) {
		_, _, err := resolvePolicy(policyFlags{}, &kubeletConfig{Path: "/k.yaml", ImageGCHighThresholdPercent: ptr(101)})
		var pe *engine.PolicyError
		if !errors.As(err, &pe) || pe.Field != flagHighThreshold {
			t.Fatalf("err = %v, want a PolicyError for %s", err, flagHighThreshold)
		}
	})
}

// TestAgentBandBelowTheKubelets: the agent's --image-gc-margin puts its
// band below the kubelet's, never turns it off with the kubelet's, and
// leaves what nodegc's own flags set.
func TestAgentBandBelowTheKubelets(t *testing.T) {
	cfg := func(high, low int) *kubeletConfig {
		return &kubeletConfig{Path: "/k.yaml", ImageGCHighThresholdPercent: ptr(high), ImageGCLowThresholdPercent: ptr(low)}
	}
	tests := []struct {
		name       string
		flags      policyFlags
		cfg        *kubeletConfig
		high, low  int
		highSource string
	}{
		{name: "the kubelet's defaults less 5", flags: policyFlags{Margin: 5}, high: 80, low: 75, highSource: "default, less --image-gc-margin 5"},
		{name: "the kubelet config's band less 5", flags: policyFlags{Margin: 5}, cfg: cfg(50, 45), high: 45, low: 40, highSource: "kubelet config /k.yaml, less --image-gc-margin 5"},
		{name: "a kubelet whose image GC is off gives its default band, less the margin: the agent stays on", flags: policyFlags{Margin: 5}, cfg: cfg(100, 90),
			high: 80, low: 75, highSource: "the kubelet's image GC is off: its default, less --image-gc-margin 5"},
		{name: "margin 0 is the kubelet's band, off with it", cfg: cfg(100, 90), high: 100, low: 90, highSource: "kubelet config /k.yaml"},
		{name: "nodegc's flags are used as they are", cfg: cfg(50, 45),
			flags: policyFlags{Margin: 5, HighThreshold: 60, LowThreshold: 55, Changed: map[string]bool{flagHighThreshold: true, flagLowThreshold: true}},
			high:  60, low: 55, highSource: sourceFlag},
		{name: "a band nearer 0 than the margin stops at 0", flags: policyFlags{Margin: 5}, cfg: cfg(4, 2), high: 0, low: 0, highSource: "kubelet config /k.yaml, less --image-gc-margin 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, prov, err := resolvePolicy(tt.flags, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Image.HighThresholdPercent != tt.high || p.Image.LowThresholdPercent != tt.low {
				t.Errorf("band %d/%d, want %d/%d", p.Image.HighThresholdPercent, p.Image.LowThresholdPercent, tt.high, tt.low)
			}
			if s := prov.source(flagHighThreshold); s.Source != tt.highSource || s.Value != strconv.Itoa(tt.high) {
				t.Errorf("provenance %+v, want %d from %q", s, tt.high, tt.highSource)
			}
			if tt.flags.Margin > 0 && p.Image.PeriodicDisabled() {
				t.Error("the agent's periodic image GC is off")
			}
		})
	}
}
