package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 22's node: 10,000 images, 20,000 pods, 5 dead attempts of each
// container (120,000 containers).
var costNode = []string{"--images", "10000", "--pods", "20000", "--dead-per-container", "5"}

// BenchmarkPlanCost measures, side by side in one run, the whole process
// of issue 22's two figures against its baseline, alternating the two
// each round (the machine is shared, so only ratios in one run compare):
//
//   - live: `nodegc plan -o json` against `nodegc simnode` (costNode) in
//     its own process, vs `bare list` (internal/bare) on the same socket;
//     a gc that removes nothing first warms the state dir (image records,
//     sandbox images), as on a node where nodegc ran.
//   - live-cold: the same plan with an empty state dir, as on a node
//     where no gc or agent ever ran (plan is read-only and never fills
//     it): it asks each READY sandbox for its image, one call each.
//   - from: `nodegc plan --from` a snapshot of that node (taken once by
//     `nodegc snapshot`, or NODEGC_BENCH_SNAPSHOT), vs `bare decode` of
//     the same file.
//
// It reports the medians in ms and their ratio (x-bare, ≤ 1.2 wanted).
// `make bench-cost` runs it.
func BenchmarkPlanCost(b *testing.B) {
	dir := b.TempDir()
	nodegc, bare := filepath.Join(dir, "nodegc"), filepath.Join(dir, "bare")
	for bin, pkg := range map[string]string{nodegc: ".", bare: "../../internal/bare"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	ep := "unix://" + filepath.Join(dir, "sim.sock")
	sim := exec.Command(nodegc, append([]string{"simnode", "--listen", ep}, costNode...)...)
	pipe, err := sim.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sim.Process.Kill(); sim.Wait() })
	if sc := bufio.NewScanner(pipe); !sc.Scan() || !strings.Contains(sc.Text(), "serving CRI") {
		b.Fatalf("simnode: %q", sc.Text())
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		b.Fatal(err)
	}
	// A node where nodegc ran: a gc that removes nothing (no pass is
	// triggered below a high threshold of 100) keeps the image records
	// and the images of the sandboxes in the state dir. plan is read-only
	// and never writes there, so warming with a plan would leave every
	// plan to ask each of the 20,000 READY sandboxes for its image.
	runOut(b, nodegc, "gc", "--images", "--yes", "--image-gc-high-threshold=100", "--image-gc-low-threshold=99",
		"--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--kubelet-config", os.DevNull)
	if _, err := os.Stat(filepath.Join(state, "sandbox-images.json")); err != nil {
		b.Fatalf("the warm-up gc kept no sandbox images: %v", err)
	}
	plan := []string{"plan", "-o", "json", "--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--kubelet-config", os.DevNull}
	b.Run("live", func(b *testing.B) {
		sideBySide(b, []string{bare, "list", ep}, append([]string{nodegc}, plan...))
	})
	cold := filepath.Join(dir, "cold-state")
	if err := os.Mkdir(cold, 0o700); err != nil {
		b.Fatal(err)
	}
	coldPlan := []string{nodegc, "plan", "-o", "json", "--simulated", "--runtime-endpoint", ep, "--state-dir", cold, "--kubelet-config", os.DevNull}
	b.Run("live-cold", func(b *testing.B) {
		sideBySide(b, []string{bare, "list", ep}, coldPlan)
		if ents, err := os.ReadDir(cold); err != nil || len(ents) != 0 {
			b.Fatalf("the cold state dir is no longer empty (%v): %d entries", err, len(ents))
		}
	})

	snap := os.Getenv("NODEGC_BENCH_SNAPSHOT")
	if snap == "" {
		snap = filepath.Join(dir, "snap.json")
		out := runOut(b, nodegc, "snapshot", "--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--kubelet-config", os.DevNull)
		if err := os.WriteFile(snap, out, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("from", func(b *testing.B) {
		sideBySide(b, []string{bare, "decode", snap}, []string{nodegc, "plan", "--from", snap, "-o", "json", "--kubelet-config", os.DevNull})
	})
}

// sideBySide runs base and cmd in turn, b.N rounds, and reports both
// medians and the ratio of cmd's to base's.
func sideBySide(b *testing.B, base, cmd []string) {
	var tb, tc []time.Duration
	for b.Loop() {
		tb = append(tb, timed(b, base))
		tc = append(tc, timed(b, cmd))
	}
	mb, mc := median(tb), median(tc)
	b.ReportMetric(float64(mb.Milliseconds()), "bare-ms")
	b.ReportMetric(float64(mc.Milliseconds()), "nodegc-ms")
	b.ReportMetric(float64(mc)/float64(mb), "x-bare")
}

func timed(b *testing.B, argv []string) time.Duration {
	start := time.Now()
	runOut(b, argv[0], argv[1:]...)
	return time.Since(start)
}

// runOut runs a program to the end and returns its stdout.
func runOut(b *testing.B, bin string, args ...string) []byte {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CONTAINER_RUNTIME_ENDPOINT=")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s %s: %v", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
