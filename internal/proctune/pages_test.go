package proctune

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// code and rodata are addresses in the first two mappings of the smaps
// below, as codeAddrs would give them.
var testAddrs = []uintptr{0x401000, 0x1200000}

// smapsEntry is one mapping of /proc/PID/smaps as the kernel writes it,
// with the fields dropCodePages reads and some it does not; a negative
// anonymous or swap leaves that field out.
func smapsEntry(header string, anonymous, swap int) string {
	s := header + "\n" +
		"Size:                 80 kB\n" +
		"Rss:                  80 kB\n"
	if anonymous >= 0 {
		s += "Anonymous:            " + strconv.Itoa(anonymous) + " kB\n"
	}
	if swap >= 0 {
		s += "Swap:                 " + strconv.Itoa(swap) + " kB\n"
	}
	return s + "VmFlags: rd ex mr mw me\n"
}

func TestFileOnlyMappingsTakeOnlyTheBinarysUnwrittenCodeAndConstants(t *testing.T) {
	code := smapsEntry("00400000-011ba000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0)
	rodata := smapsEntry("011ba000-0210a000 r--p 00dba000 fe:00 247741   /usr/bin/nodegc", 0, 0)
	both := []pageRange{{0x400000, 0x11ba000}, {0x11ba000, 0x210a000}}
	for _, tc := range []struct {
		name  string
		smaps string
		want  []pageRange
	}{
		{"code and constant data", code + rodata, both},
		{"the fields in another order", strings.Replace(code, "Anonymous:            0 kB\nSwap:                 0 kB\n", "Swap: 0 kB\nAnonymous: 0 kB\n", 1) + rodata, both},
		{"a replaced binary", strings.ReplaceAll(code+rodata, "nodegc\n", "nodegc (deleted)\n"), both},
		{"a path longer than a scanner's line", strings.ReplaceAll(code+rodata, "/usr/bin/nodegc", "/"+strings.Repeat("x", 100_000)), both},
		{"relocated constant data the file does not hold",
			code + smapsEntry("011ba000-0210a000 r--p 00dba000 fe:00 247741   /usr/bin/nodegc", 8, 0), both[:1]},
		{"a breakpoint in the code, swapped out",
			smapsEntry("00400000-011ba000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, 4) + rodata, both[1:]},
		{"no Anonymous field", smapsEntry("00400000-011ba000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", -1, 0) + rodata, both[1:]},
		{"no Swap field", smapsEntry("00400000-011ba000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, -1) + rodata, both[1:]},
		{"writable", code + smapsEntry("011ba000-0210a000 rw-p 00dba000 fe:00 247741   /usr/bin/nodegc", 0, 0), both[:1]},
		{"shared", code + smapsEntry("011ba000-0210a000 r--s 00dba000 fe:00 247741   /usr/bin/nodegc", 0, 0), both[:1]},
		{"unreadable", code + smapsEntry("011ba000-0210a000 ---p 00dba000 fe:00 247741   /usr/bin/nodegc", 0, 0), both[:1]},
		{"another mapping of the binary, holding neither address",
			code + rodata + smapsEntry("7f0000000000-7f0000010000 r--p 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0), both},
		{"another file's mappings", smapsEntry("7f0000000000-7f0000010000 r-xp 00000000 fe:00 99   /usr/lib/libc.so.6", 0, 0), nil},
		{"a header it cannot read", smapsEntry("00400000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0) + rodata, both[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fileOnlyMappings([]byte(tc.smaps), testAddrs)
			if !slices.Equal(got, tc.want) {
				t.Errorf("took %x, want %x", got, tc.want)
			}
		})
	}
}

func TestTracedUnlessTracerPidIsZero(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{"Name:\tnodegc\nState:\tS (sleeping)\nTracerPid:\t0\nUid:\t0\t0\t0\t0\n", false},
		{"Name:\tnodegc\nTracerPid:\t4242\n", true},
		{"Name:\tnodegc\n", true},
	} {
		if got := traced([]byte(tc.status)); got != tc.want {
			t.Errorf("traced(%q) = %v, want %v", tc.status, got, tc.want)
		}
	}
}

// binaryRSS returns how many kB of this test binary's code and constant
// data mappings are resident, and maps every page of them first when
// touch is set.
func binaryRSS(t *testing.T, touch bool) int {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	kb := 0
	for _, m := range mappings(smaps) {
		if !m.readOnly || !m.holdsAny(codeAddrs()) {
			continue
		}
		if touch {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_POPULATE_READ); errno != 0 {
				t.Fatalf("map every page of %#x-%#x: %v", m.start, m.end, errno)
			}
		}
		kb += m.rssKB
	}
	return kb
}

func TestDropCodePagesUnmapsTheBinarysPages(t *testing.T) {
	binaryRSS(t, true)
	before := binaryRSS(t, false)
	if before == 0 {
		t.Fatal("no page of the test binary's code or constant data is resident: the mappings were not found")
	}
	if err := dropCodePages(); err != nil {
		t.Fatal(err)
	}
	after := binaryRSS(t, false)
	t.Logf("the binary's code and constant data: %d kB resident before, %d kB after", before, after)
	// What the test runs after the drop comes back, with what the kernel
	// maps around each fault (about 40% here); without the drop all of
	// it stays.
	if after > before*3/4 {
		t.Errorf("%d kB of the binary's code and constant data resident after the drop, %d kB before: the drop unmapped next to none", after, before)
	}
}
