package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 23 item 8: on the built binary against the demo's simulated node
// served apart with no workload (nothing changes, so no refresh moves the
// numbers), the Overview's countdown to the next container pass moves with
// the clock, read twice 3 s apart, on the event stream and on the polling
// path (a runtime without an event stream, as containerd 1.6).
func TestCountdownMovesWithTheClockInTmux(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	countdown := regexp.MustCompile(`next container pass in (\S+)`)
	for _, events := range []string{"true", "false"} {
		t.Run("--events="+events, func(t *testing.T) {
			sock, dir := startSimnode(t, bin, "demo")
			s := startSession(t, 160, 48, bin, "--events="+events, "--kubelet-pid", "-1", "--simulated", "--runtime-endpoint", "unix://"+sock,
				"--state-dir", filepath.Join(dir, "state"))
			read := func() string {
				rows := s.waitText(t, "the countdown to the next container pass", countdown.String())
				return countdown.FindStringSubmatch(strings.Join(rows, "\n"))[1]
			}
			before := read()
			time.Sleep(3 * time.Second)
			if after := read(); after == before {
				t.Errorf("the countdown still reads %s 3 s later", after)
			}
		})
	}
}
