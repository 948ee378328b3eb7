package proctune

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pageRange is one mapping of the process, [start, end).
type pageRange struct{ start, end uintptr }

// dropCodePages takes the nodegc binary's read-only pages (its code and
// constant data) out of the process's page tables. Each page the process
// ever ran or read stays mapped, and counted in its RSS, for as long as
// it lives: the start's package inits, a large pass's code, what the
// kernel maps around each fault. After this only the pages the process
// touches again come back, each a minor fault from the page cache, which
// keeps the rest until the kernel needs the memory: unmapped, they are
// easier for it to take back than code mapped in a running program,
// which it keeps on its active list while in use. Only a private mapping without write permission and with
// no page of its own (a relocated or patched page, which the file does
// not hold) is dropped: it holds nothing but the file's bytes, so nothing
// is lost, as when the kernel reclaims it. Release calls it; the figures
// are in docs/performance.md.
func dropCodePages() error {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return fmt.Errorf("stat the binary: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return fmt.Errorf("read the mappings: %w", err)
	}
	for _, r := range fileOnlyMappings(smaps, uint64(st.Dev), st.Ino) {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise %#x-%#x: %w", r.start, r.end, errno)
		}
	}
	return nil
}

// fileOnlyMappings returns, from /proc/PID/smaps text, the private
// mappings without write permission of the file on device dev with inode
// ino that hold no page of their own, in memory (Anonymous) or swapped
// out (Swap). A file is known by its device and inode, not by the path
// the mapping shows, which may be gone or replaced since.
func fileOnlyMappings(smaps []byte, dev, ino uint64) []pageRange {
	var out []pageRange
	var cur pageRange
	// own counts the fields of cur read as 0 kB; both must be.
	own := 0
	done := func() {
		if cur.end != 0 && own == 2 {
			out = append(out, cur)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		switch {
		case len(f) == 0:
		case bytes.HasSuffix(f[0], []byte(":")):
			// A field of the mapping above: "Anonymous: N kB".
			if k := string(f[0]); (k == "Anonymous:" || k == "Swap:") && len(f) > 1 && string(f[1]) == "0" {
				own++
			}
		default:
			// start-end perms offset major:minor inode [path]
			done()
			cur, _ = readOnlyOf(f, dev, ino)
			own = 0
		}
	}
	done()
	return out
}

// readOnlyOf returns the range of a mapping's header fields when it is a
// private mapping without write permission of the file dev, ino.
func readOnlyOf(f [][]byte, dev, ino uint64) (pageRange, bool) {
	if len(f) < 5 || len(f[1]) != 4 || f[1][0] != 'r' || f[1][1] != '-' || f[1][3] != 'p' {
		return pageRange{}, false
	}
	major, minor, ok1 := bytes.Cut(f[3], []byte(":"))
	lo, hi, ok2 := bytes.Cut(f[0], []byte("-"))
	if !ok1 || !ok2 || !sameFile(major, minor, f[4], dev, ino) {
		return pageRange{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return pageRange{}, false
	}
	return pageRange{uintptr(start), uintptr(end)}, true
}

// sameFile reports whether a mapping's device (hex major and minor) and
// inode (decimal) are dev and ino.
func sameFile(major, minor, inode []byte, dev, ino uint64) bool {
	ma, err1 := strconv.ParseUint(string(major), 16, 32)
	mi, err2 := strconv.ParseUint(string(minor), 16, 32)
	in, err3 := strconv.ParseUint(string(inode), 10, 64)
	return err1 == nil && err2 == nil && err3 == nil && in == ino &&
		uint32(ma) == unix.Major(dev) && uint32(mi) == unix.Minor(dev)
}
