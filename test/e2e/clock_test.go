package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 23 item 8 and issue 22 item 2: on the built binary against the
// demo's simulated node served apart with no workload (nothing changes,
// so no refresh moves the numbers), the Overview's countdown to the next
// image pass moves with the clock, on the event stream and on the polling
// path (a runtime without an event stream, as containerd 1.6). It reads
// to the minute (format.Rough, beside the instant itself), so the test
// waits for its next minute: five minutes away at start, it reads
// "in 4m" and moves to "in 3m" a minute after the dashboard started.
func TestCountdownMovesWithTheClockInTmux(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	countdown := regexp.MustCompile(`next passes: images in (\S+) \(`)
	for _, events := range []string{"true", "false"} {
		t.Run("--events="+events, func(t *testing.T) {
			sock, dir := startSimnode(t, bin, "demo")
			// A state dir the dashboard finds (not one it makes, where it
			// would ask before starting its passes).
			if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
				t.Fatal(err)
			}
			s := startSession(t, 160, 48, bin, "--events="+events, "--kubelet-pid", "-1", "--simulated", "--runtime-endpoint", "unix://"+sock,
				"--state-dir", filepath.Join(dir, "state"))
			rows := s.waitText(t, "the countdown to the next image pass", countdown.String())
			before := countdown.FindStringSubmatch(strings.Join(rows, "\n"))[1]
			// It moves within a minute; two bound a hang.
			s.waitForWithin(t, 2*time.Minute, "the countdown to move from "+before, func(rows []string) bool {
				m := countdown.FindStringSubmatch(strings.Join(rows, "\n"))
				return m != nil && m[1] != before
			})
		})
	}
}
