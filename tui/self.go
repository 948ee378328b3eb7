package tui

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture the kubelet runs on.
const clockTicks = 100

// readSelf reads nodegc's CPU time from /proc/self/stat and its resident
// set from /proc/self/status.
func readSelf() (SelfSample, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return SelfSample{}, fmt.Errorf("read own cpu: %w", err)
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return SelfSample{}, err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return SelfSample{}, fmt.Errorf("read own memory: %w", err)
	}
	return SelfSample{CPU: cpu, RSSBytes: parseStatusRSS(status)}, nil
}

// parseStatCPU returns utime+stime (fields 14 and 15) of a /proc/PID/stat
// line. The command name (field 2) may hold spaces, so fields are counted
// from its closing parenthesis.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/self/stat: no command field")
	}
	f := bytes.Fields(b[i+1:])
	// After ')' come field 3 (state) onwards: utime is field 14, index 11.
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/self/stat: %d fields", len(f)+2)
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/self/stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// parseStatusRSS returns VmRSS of /proc/PID/status in bytes, 0 if absent.
func parseStatusRSS(b []byte) int64 {
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
