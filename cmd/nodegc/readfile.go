package main

import (
	"errors"
	"io"
	"os"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// wholeReadMin is the size from which readWhole reads a regular file on
// every core: below it one read is as fast.
const wholeReadMin = 4 << 20

// readWhole is os.ReadFile, faster for a large regular file: the kernel
// copies a big snapshot into pages that are new to the process, and the
// faults of those pages take longer than the copy, so one reader per
// core, each at its own offset, takes about half the time on two cores
// (docs/performance.md). A file that changes size while it is read (a
// short read, or bytes past the size it had) is read again by
// io.ReadAll from its start (ReadAt leaves the offset there), as
// os.ReadFile reads it, so the result and the errors are os.ReadFile's
// whatever happens.
func readWhole(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := st.Size()
	if !st.Mode().IsRegular() || n < wholeReadMin {
		return io.ReadAll(f)
	}
	data := make([]byte, n)
	var g errgroup.Group
	k := int64(runtime.GOMAXPROCS(0))
	for i := range k {
		lo, hi := n*i/k, n*(i+1)/k
		g.Go(func() error {
			_, err := f.ReadAt(data[lo:hi], lo)
			return err
		})
	}
	var more [1]byte
	if err := g.Wait(); err != nil {
		return io.ReadAll(f)
	}
	if m, err := f.ReadAt(more[:], n); m != 0 || !errors.Is(err, io.EOF) {
		return io.ReadAll(f)
	}
	return data, nil
}
