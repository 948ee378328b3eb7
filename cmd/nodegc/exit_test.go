package main

import (
	"strings"
	"testing"
)

func TestExitCodesAndErrorLines(t *testing.T) {
	snap := writeFile(t, "snap.json", snapshotJSON)
	badSnap := writeFile(t, "bad.json", `{"apiVersion":"nodegc/v1","kind":"NodeSnapshot","takenAt":"2026-01-02T15:00:00Z",
		"imageFs":{"capacityBytes":10,"availableBytes":5},"images":[{"id":"a","sizeBytes":1},{"sizeBytes":2}]}`)
	badCfg := writeFile(t, "kubelet.yaml", "kind: KubeletConfiguration\nimageGCHighThresholdPercent: high\n")
	lowCfg := writeFile(t, "low.yaml", "imageGCLowThresholdPercent: 90\n")
	lotsCfg := writeFile(t, "lots.yaml", "evictionHard:\n  imagefs.available: lots\n")
	rootLogsCfg := writeFile(t, "rootlogs.yaml", "podLogsDir: /\n")
	tests := []struct {
		name string
		args []string
		code int
		line string // the one line on stderr; "" means none
	}{
		{"version exits 0", []string{"version"}, 0, ""},
		{"a plan from a snapshot exits 0", []string{"plan", "--from", snap}, 0, ""},
		{"an unknown flag is bad input", []string{"plan", "--bogus"}, 2, "nodegc: unknown flag: --bogus"},
		{"a non-integer threshold names the flag", []string{"plan", "--image-gc-high-threshold", "abc"}, 2,
			`nodegc: --image-gc-high-threshold: "abc" is not an integer`},
		{"a bad duration names the flag", []string{"plan", "--minimum-image-ttl-duration", "5x"}, 2,
			`nodegc: --minimum-image-ttl-duration: unknown unit "x" in duration "5x"`},
		{"a flag without its value", []string{"plan", "--from"}, 2, "nodegc: flag needs an argument: --from"},
		{"an unknown command", []string{"frob"}, 2, `nodegc: unknown command "frob" for "nodegc" (see nodegc --help)`},
		{"a stray argument", []string{"plan", "extra"}, 2, `nodegc: nodegc plan takes no arguments, got "extra"`},
		{"policy validation names both flags", []string{"plan", "--from", snap, "--image-gc-low-threshold", "90"}, 2,
			"nodegc: --image-gc-low-threshold: 90 must not exceed --image-gc-high-threshold 85"},
		{"policy validation of a config value names the config field", []string{"plan", "--from", snap, "--kubelet-config", lowCfg}, 2,
			"nodegc: --image-gc-low-threshold: 90 must not exceed --image-gc-high-threshold 85 (imageGCLowThresholdPercent in kubelet config " + lowCfg + ")"},
		{"a bad kubelet config field names the file and field", []string{"plan", "--from", snap, "--kubelet-config", badCfg}, 2,
			"nodegc: " + badCfg + ": imageGCHighThresholdPercent: must be an integer, got string"},
		{"an evictionHard value that does not parse is bad input naming the file and signal", []string{"plan", "--from", snap, "--kubelet-config", lotsCfg}, 2,
			"nodegc: " + lotsCfg + `: evictionHard: imagefs.available: "lots" is not a percentage such as 15% or a quantity such as 1Gi`},
		{"podLogsDir / in the kubelet config is bad input", []string{"plan", "--from", snap, "--kubelet-config", rootLogsCfg}, 2,
			"nodegc: " + rootLogsCfg + `: podLogsDir: must not be the root directory, got "/"`},
		{"--pod-logs-dir / is bad input", []string{"snapshot", "--pod-logs-dir", "/"}, 2,
			`nodegc: --pod-logs-dir: must not be the root directory, got "/"`},
		{"a relative --pod-logs-dir is bad input", []string{"plan", "--from", snap, "--pod-logs-dir", "logs"}, 2,
			`nodegc: --pod-logs-dir: must be an absolute path, got "logs"`},
		{"a missing kubelet config", []string{"plan", "--from", snap, "--kubelet-config", "/nonexistent/k.yaml"}, 2,
			"nodegc: /nonexistent/k.yaml: no such file or directory"},
		{"a snapshot missing a field names the file and the field", []string{"plan", "--from", badSnap}, 2,
			"nodegc: " + badSnap + ": images[1].id: required"},
		{"a missing snapshot file", []string{"plan", "--from", "/nonexistent/snap.json"}, 2,
			"nodegc: /nonexistent/snap.json: no such file or directory"},
		{"a bad --now", []string{"plan", "--from", snap, "--now", "yesterday"}, 2,
			`nodegc: --now: "yesterday" is not an RFC 3339 time such as 2026-01-02T15:04:05Z`},
		{"simnode refuses an image count it cannot hold", []string{"simnode", "--listen", "unix:///tmp/nodegc-never.sock", "--images", "999999999999999"}, 2,
			"nodegc: --images: at most 200000, got 999999999999999 (the simulated node keeps everything in memory)"},
		{"simnode refuses a negative --step", []string{"simnode", "--listen", "unix:///tmp/nodegc-never.sock", "--step", "-1s"}, 2,
			"nodegc: --step: must not be negative, got -1s"},
		{"simnode refuses more containers than it holds", []string{"simnode", "--listen", "unix:///tmp/nodegc-never.sock", "--pods", "100000", "--dead-per-container", "100"}, 2,
			"nodegc: --pods and --dead-per-container: about 10100000 containers, more than the 2000000 the simulated node holds"},
		{"an unknown output format", []string{"plan", "--from", snap, "-o", "yaml"}, 2, `nodegc: --output: must be table or json, got "yaml"`},
		{"snapshot -o a directory names the flag", []string{"snapshot", "-o", "/", "--runtime-endpoint", "unix:///nonexistent/nodegc.sock"}, 2,
			"nodegc: --output: / is a directory: name a file in it, or - for stdout"},
		{"--parallel 0 is bad input", []string{"gc", "--yes", "--parallel", "0"}, 2, "nodegc: --parallel: must be auto or from 1 to 64, got 0"},
		{"--parallel past its maximum is bad input, refused before anything is read", []string{"gc", "--yes", "--parallel", "100000000", "--runtime-endpoint", "unix:///nonexistent/nodegc.sock"}, 2,
			"nodegc: --parallel: must be auto or from 1 to 64, got 100000000"},
		{"the dashboard refuses --parallel past its maximum too", []string{"--parallel", "65"}, 2, "nodegc: --parallel: must be auto or from 1 to 64, got 65"},
		{"--from with --runtime-endpoint", []string{"plan", "--from", snap, "--runtime-endpoint", "unix:///x.sock"}, 2,
			"nodegc: --from: cannot be combined with --runtime-endpoint"},
		{"--from with --simulated", []string{"plan", "--from", snap, "--simulated"}, 2,
			"nodegc: --from: cannot be combined with --simulated (a snapshot is planned as it was taken)"},
		{"an endpoint that is not a unix socket is bad input", []string{"plan", "--runtime-endpoint", "tcp://1.2.3.4:5"}, 2,
			`nodegc: --runtime-endpoint: invalid runtime endpoint "tcp://1.2.3.4:5": only unix sockets are supported`},
		{"an unreachable runtime exits 1 and names the flag", []string{"plan", "--runtime-endpoint", "unix:///nonexistent/x.sock"}, 1,
			"nodegc: --runtime-endpoint: runtime unavailable: no socket at unix:///nonexistent/x.sock"},
		{"gc without a terminal and without --yes refuses", []string{"gc"}, 2,
			"nodegc: gc: stdin is not a terminal, so nobody can confirm; pass --yes to remove without confirmation, or --dry-run to preview"},
		{"gc --read-only can only dry-run", []string{"gc", "--read-only", "--yes"}, 2,
			"nodegc: --read-only: gc cannot remove anything with a read-only runtime; add --dry-run to preview"},
		{"--reclaim-all with --images", []string{"gc", "--reclaim-all", "--images", "--dry-run"}, 2,
			"nodegc: --reclaim-all: cannot be combined with --images or --containers"},
		{"a negative --timeout is bad input", []string{"plan", "--from", snap, "--timeout", "-1s"}, 2,
			"nodegc: --timeout: must be greater than 0, got -1s"},
		{"a zero --timeout is bad input", []string{"gc", "--dry-run", "--timeout", "0"}, 2,
			"nodegc: --timeout: must be greater than 0, got 0s"},
		{"a zero --timeout is bad input on the root command too", []string{"--demo", "--timeout", "0s"}, 2,
			"nodegc: --timeout: must be greater than 0, got 0s"},
		{"a negative --refresh is bad input", []string{"--demo", "--refresh", "-1s"}, 2,
			"nodegc: --refresh: must be greater than 0, got -1s"},
		{"a zero --refresh is bad input", []string{"--demo", "--refresh", "0"}, 2,
			"nodegc: --refresh: must be greater than 0, got 0s"},
		{"a bad demo scale", []string{"--demo", "--demo-scale", "huge"}, 2, `nodegc: --demo-scale: must be small or large, got "huge"`},
		{"a negative demo removal latency", []string{"--demo", "--demo-remove-latency", "-1s"}, 2, `nodegc: --demo-remove-latency: must not be negative, got -1s`},
		{"simnode needs --listen", []string{"simnode"}, 2, "nodegc: --listen: required, e.g. --listen unix:///tmp/sim.sock"},
		{"cgroups knows tree and json", []string{"cgroups", "-o", "yaml"}, 2, `nodegc: --output: must be tree or json, got "yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI("")
			code := c.run(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, c.err.String())
			}
			lines := c.stderrLines()
			switch {
			case tt.line == "" && len(lines) != 0:
				t.Errorf("stderr %q, want nothing", lines)
			case tt.line != "" && (len(lines) != 1 || lines[0] != tt.line):
				t.Errorf("stderr\n got %q\nwant %q", lines, tt.line)
			}
			if tt.code != 0 && strings.Contains(c.out.String(), "Usage:") {
				t.Errorf("cobra's usage was printed on error:\n%s", c.out.String())
			}
		})
	}
}

func TestHelpListsOnlyFlagsTheCommandUses(t *testing.T) {
	cases := []struct {
		cmd    string
		global bool // whether the global flags (--state-dir, --runtime-endpoint, …) apply
	}{
		{cmd: "simnode", global: false},
		{cmd: "plan", global: true},
		{cmd: "gc", global: true},
	}
	for _, tc := range cases {
		t.Run("nodegc "+tc.cmd+" --help", func(t *testing.T) {
			c := newCLI("")
			if code := c.run(tc.cmd, "--help"); code != 0 {
				t.Fatalf("exit %d", code)
			}
			out := c.out.String()
			if got := strings.Contains(out, "Global Flags:") && strings.Contains(out, "--state-dir string"); got != tc.global {
				t.Errorf("help lists the global flags: %v, want %v:\n%s", got, tc.global, out)
			}
		})
	}
}

func TestHelpTeaches(t *testing.T) {
	for _, cmd := range []string{"plan", "gc", "snapshot", "cgroups", "simnode", ""} {
		t.Run("nodegc "+cmd+" --help has a description and examples", func(t *testing.T) {
			c := newCLI("")
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			if code := c.run(args...); code != 0 {
				t.Fatalf("exit %d", code)
			}
			out := c.out.String()
			if !strings.Contains(out, "Examples:") || !strings.Contains(out, "Flags:") || strings.Count(out, "\n") < 20 {
				t.Errorf("help lacks examples or flags:\n%s", out)
			}
		})
	}
}
