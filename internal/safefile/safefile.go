package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrSymlink is the error Write returns for a path that is a symlink.
var ErrSymlink = errors.New("is a symlink; nodegc neither replaces nor follows it: name the file it points to")

// ErrNoReader is the error Write returns for a FIFO that no one reads.
// Waiting for one, as a shell's redirection does, would block in a system
// call that no signal but SIGKILL ends.
var ErrNoReader = errors.New("is a FIFO that no process is reading; start its reader first")

// ErrDirectory is the error Write returns for a path that is a directory.
var ErrDirectory = errors.New("is a directory")

// Check reports whether Write may write to path: nil for a regular file,
// a missing name, a device or a FIFO; ErrSymlink or ErrDirectory (wrapped
// in an *fs.PathError) otherwise. Commands call it before their work, so
// a bad name is refused before anything is read or written; Write checks
// again.
func Check(path string) error {
	_, err := kind(path)
	return err
}

// Write writes data to path. A regular file or a missing name is replaced
// atomically with a file of mode perm; a device or a FIFO is opened
// write-only (never created, truncated or replaced) and written in place; a
// symlink or a directory is refused (see Check). A FIFO must already have
// its reader (ErrNoReader).
func Write(path string, data []byte, perm fs.FileMode) error {
	inPlace, err := kind(path)
	if err != nil {
		return err
	}
	if inPlace {
		done, err := writeInPlace(path, data)
		if done || err != nil {
			return err
		}
		// It became a regular file since kind looked: replace it.
	}
	return replace(path, data, perm)
}

// kind reports whether path is written in place (a device or a FIFO); a
// missing name or a regular file is replaced. Anything else is an error.
func kind(path string) (inPlace bool, err error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		return false, nil
	case m&fs.ModeSymlink != 0:
		return false, &fs.PathError{Op: "write", Path: path, Err: ErrSymlink}
	case m.IsDir():
		return false, &fs.PathError{Op: "write", Path: path, Err: ErrDirectory}
	case m&(fs.ModeDevice|fs.ModeNamedPipe) != 0:
		return true, nil
	}
	return false, &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("is a %s, not a file, device or FIFO", typeName(fi.Mode()))}
}

// writeInPlace opens path write-only without following a symlink or
// waiting for a FIFO's reader, and writes data. done is false when path
// turned out to be a regular file, which the caller replaces instead.
func writeInPlace(path string, data []byte) (done bool, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return false, &fs.PathError{Op: "write", Path: path, Err: ErrSymlink}
	}
	if errors.Is(err, unix.ENXIO) {
		return false, &fs.PathError{Op: "write", Path: path, Err: ErrNoReader}
	}
	if err != nil {
		return false, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		f.Close()
		return false, nil
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}

// replace writes data to a temporary file beside path, syncs it, renames
// it over path and syncs the directory, so a crash at any point leaves the
// old file or the new one, never a torn one.
func replace(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	for _, step := range []func() error{
		func() error { return tmp.Chmod(perm) },
		func() error { _, err := tmp.Write(data); return err },
		tmp.Sync,
	} {
		if err := step(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// typeName names a file type for an error.
func typeName(m fs.FileMode) string {
	if m&fs.ModeSocket != 0 {
		return "socket"
	}
	return m.Type().String()
}
