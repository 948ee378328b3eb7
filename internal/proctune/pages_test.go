package proctune

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// binaryDev and binaryIno are fe:00 247741 of the smaps below.
var binaryDev, binaryIno = unix.Mkdev(0xfe, 0x00), uint64(247741)

// smapsEntry is one mapping of /proc/PID/smaps as the kernel writes it,
// with the fields dropCodePages reads and two it does not.
func smapsEntry(header string, anonymous, swap int) string {
	return header + "\n" +
		"Size:                 80 kB\n" +
		"Rss:                  80 kB\n" +
		"Anonymous:            " + strconv.Itoa(anonymous) + " kB\n" +
		"Swap:                 " + strconv.Itoa(swap) + " kB\n" +
		"VmFlags: rd ex mr mw me\n"
}

func TestFileOnlyMappingsTakeOnlyTheBinarysUnwrittenReadOnlyPages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		anon   int
		swap   int
		taken  []pageRange
	}{
		{"code", "00400000-011ba000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0, []pageRange{{0x400000, 0x11ba000}}},
		{"constant data", "011ba000-0210a000 r--p 00dba000 fe:00 247741   /usr/bin/nodegc", 0, 0, []pageRange{{0x11ba000, 0x210a000}}},
		{"a replaced binary, by its inode", "011ba000-0210a000 r--p 00dba000 fe:00 247741   /usr/bin/nodegc (deleted)", 0, 0, []pageRange{{0x11ba000, 0x210a000}}},
		{"relocated pages the file does not hold", "011ba000-0210a000 r--p 00dba000 fe:00 247741   /usr/bin/nodegc", 8, 0, nil},
		{"such pages swapped out", "011ba000-0210a000 r--p 00dba000 fe:00 247741   /usr/bin/nodegc", 0, 4, nil},
		{"writable data", "0210a000-0220e000 rw-p 01d0a000 fe:00 247741   /usr/bin/nodegc", 0, 0, nil},
		{"a shared mapping", "7f0000000000-7f0000010000 r--s 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0, nil},
		{"another file at the binary's path", "7f0000000000-7f0000010000 r--p 00000000 fe:00 99   /usr/bin/nodegc", 0, 0, nil},
		{"the same inode on another device", "7f0000000000-7f0000010000 r--p 00000000 fe:01 247741   /usr/bin/nodegc", 0, 0, nil},
		{"anonymous memory", "7f0000000000-7f0000010000 r--p 00000000 00:00 0", 0, 0, nil},
		{"unreadable", "7f0000000000-7f0000010000 ---p 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The entry between two that are taken, so that its fields
			// are read as its own.
			smaps := smapsEntry("00010000-00020000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0) +
				smapsEntry(tc.header, tc.anon, tc.swap) +
				smapsEntry("00030000-00040000 r-xp 00000000 fe:00 247741   /usr/bin/nodegc", 0, 0)
			got := fileOnlyMappings([]byte(smaps), binaryDev, binaryIno)
			want := slices.Concat([]pageRange{{0x10000, 0x20000}}, tc.taken, []pageRange{{0x30000, 0x40000}})
			if !slices.Equal(got, want) {
				t.Errorf("took %x, want %x", got, want)
			}
		})
	}
}

// binaryRSS returns how many kB of this test binary's read-only mappings
// are resident, and maps every page of them first when touch is set.
func binaryRSS(t *testing.T, touch bool) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	kb, taken := 0, false
	for line := range bytes.Lines(smaps) {
		f := bytes.Fields(line)
		switch {
		case len(f) == 0:
		case !bytes.HasSuffix(f[0], []byte(":")):
			var r pageRange
			r, taken = readOnlyOf(f, uint64(st.Dev), st.Ino)
			if taken && touch {
				if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_POPULATE_READ); errno != 0 {
					t.Fatalf("map every page of %#x-%#x: %v", r.start, r.end, errno)
				}
			}
		case taken && string(f[0]) == "Rss:":
			n, _ := strconv.Atoi(string(f[1]))
			kb += n
		}
	}
	return kb
}

func TestDropCodePagesUnmapsTheBinarysPages(t *testing.T) {
	before := binaryRSS(t, true)
	if before == 0 {
		t.Fatal("no page of the test binary is resident: the mappings were not found")
	}
	if err := dropCodePages(); err != nil {
		t.Fatal(err)
	}
	after := binaryRSS(t, false)
	t.Logf("the binary's read-only pages: %d kB resident before, %d kB after", before, after)
	// What the test runs after the drop comes back, with what the kernel
	// maps around each fault (1,956 of 4,836 kB here); without the drop
	// all of it stays.
	if after > before*3/4 {
		t.Errorf("%d kB of the binary's read-only pages resident after the drop, %d kB before: the drop unmapped next to none", after, before)
	}
}
