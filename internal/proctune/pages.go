package proctune

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageRange is one mapping of the process, [start, end).
type pageRange struct{ start, end uintptr }

// contains reports whether a is in r.
func (r pageRange) contains(a uintptr) bool { return r.start <= a && a < r.end }

// mapping is one record of /proc/PID/smaps: its range, whether it is
// private and read-only, and the fields dropCodePages reads.
type mapping struct {
	pageRange
	// readOnly: readable, not writable, private ("r-xp", "r--p").
	readOnly bool
	// noAnonymous and noSwap: "Anonymous: 0 kB" and "Swap: 0 kB" were
	// read, so the mapping holds no page the file does not.
	noAnonymous, noSwap bool
	// rssKB is its "Rss:".
	rssKB int
}

// rodataMark is a string constant: its bytes are in the binary's
// constant data, so their address names that mapping.
const rodataMark = "nodegc constant data"

// codeAddrs are an address in the binary's code and one in its constant
// data: the two mappings the loader made, which live as long as the
// process. They are found by what they hold, not by the file's device and
// inode, which stat and /proc/PID/maps disagree on for btrfs and, before
// Linux 6.8, for overlayfs.
func codeAddrs() []uintptr {
	return []uintptr{
		reflect.ValueOf(dropCodePages).Pointer(),
		uintptr(unsafe.Pointer(unsafe.StringData(rodataMark))),
	}
}

// dropCodePages takes the nodegc binary's code and constant data out of
// the process's page tables. Each page the process ever ran or read
// stays mapped, and counted in its RSS, for as long as it lives: the
// start's package inits, a large pass's code, what the kernel maps around
// each fault. After this only the pages the process touches again come
// back, each a minor fault from the page cache, which keeps the rest
// until the kernel needs the memory. The pages stay charged to the
// process's memory cgroup: it is the process's RSS that falls, and
// unmapped pages are easier for the kernel to take back than code mapped
// in a running program.
//
// Only a private mapping without write permission that holds no page of
// its own (Anonymous and Swap both 0: a relocated page of a PIE build, a
// debugger's breakpoint, an eBPF uprobe) is dropped: it holds nothing but
// the file's bytes, so nothing is lost, as when the kernel reclaims it.
// A process being traced is left alone, since a debugger may write a
// breakpoint between the read of the mappings and the drop; a uprobe
// attached in that window (about a millisecond at each call) would be
// lost. Release calls it; the figures are in docs/performance.md.
func dropCodePages() error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("read the process status: %w", err)
	}
	if traced(status) {
		return nil
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return fmt.Errorf("read the mappings: %w", err)
	}
	for _, r := range fileOnlyMappings(smaps, codeAddrs()) {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise %#x-%#x: %w", r.start, r.end, errno)
		}
	}
	return nil
}

// traced reports whether /proc/PID/status text names a tracer (a
// TracerPid other than 0), or names none at all.
func traced(status []byte) bool {
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return string(bytes.TrimSpace(v)) != "0"
		}
	}
	return true
}

// fileOnlyMappings returns, from /proc/PID/smaps text, the private
// mappings without write permission that hold one of addrs and no page
// of their own, in memory (Anonymous) or swapped out (Swap).
func fileOnlyMappings(smaps []byte, addrs []uintptr) []pageRange {
	var out []pageRange
	for _, m := range mappings(smaps) {
		if m.readOnly && m.noAnonymous && m.noSwap && m.holdsAny(addrs) {
			out = append(out, m.pageRange)
		}
	}
	return out
}

// holdsAny reports whether m holds one of addrs.
func (m mapping) holdsAny(addrs []uintptr) bool {
	for _, a := range addrs {
		if m.contains(a) {
			return true
		}
	}
	return false
}

// mappings parses /proc/PID/smaps text: a header line per mapping
// ("start-end perms offset major:minor inode [path]"), then its fields
// ("Name: value kB"), in any order. A header it cannot read starts a
// mapping that is not readOnly.
func mappings(smaps []byte) []mapping {
	var out []mapping
	for line := range bytes.Lines(smaps) {
		f := bytes.Fields(line)
		switch {
		case len(f) == 0:
		case !bytes.HasSuffix(f[0], []byte(":")):
			out = append(out, header(f))
		case len(out) > 0 && len(f) > 1:
			m := &out[len(out)-1]
			switch string(f[0]) {
			case "Anonymous:":
				m.noAnonymous = string(f[1]) == "0"
			case "Swap:":
				m.noSwap = string(f[1]) == "0"
			case "Rss:":
				m.rssKB, _ = strconv.Atoi(string(f[1]))
			}
		}
	}
	return out
}

// header reads a mapping's header fields.
func header(f [][]byte) mapping {
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok || len(f) < 2 || len(f[1]) != 4 {
		return mapping{}
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}
	}
	p := f[1]
	return mapping{
		pageRange: pageRange{uintptr(start), uintptr(end)},
		readOnly:  p[0] == 'r' && p[1] == '-' && p[3] == 'p',
	}
}
