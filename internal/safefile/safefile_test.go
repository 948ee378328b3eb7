package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		// make creates what is at path before the write.
		make func(t *testing.T, path string)
		// wantErr is the error Write returns, nil for none.
		wantErr error
		// wantType is the file type at path afterwards.
		wantType fs.FileMode
		// wantData is path's content afterwards, for a regular file.
		wantData string
	}{
		{
			name:     "a new name is created with the data",
			make:     func(*testing.T, string) {},
			wantType: 0,
			wantData: "new",
		},
		{
			name:     "a regular file is replaced with the data",
			make:     func(t *testing.T, p string) { writeFile(t, p, "old content, longer than the new") },
			wantType: 0,
			wantData: "new",
		},
		{
			name: "a symlink is refused and left as it is, its target untouched",
			make: func(t *testing.T, p string) {
				writeFile(t, p+".target", "target")
				if err := os.Symlink(filepath.Base(p)+".target", p); err != nil {
					t.Fatal(err)
				}
			},
			wantErr:  ErrSymlink,
			wantType: fs.ModeSymlink,
		},
		{
			name: "a dangling symlink is refused too: following it would create its target",
			make: func(t *testing.T, p string) {
				if err := os.Symlink("/nonexistent/nodegc-target", p); err != nil {
					t.Fatal(err)
				}
			},
			wantErr:  ErrSymlink,
			wantType: fs.ModeSymlink,
		},
		{
			name:     "a directory is refused",
			make:     func(t *testing.T, p string) { os.Mkdir(p, 0o700) },
			wantErr:  ErrDirectory,
			wantType: fs.ModeDir,
		},
		{
			name: "a character device (null, made here) is written in place, not replaced",
			make: func(t *testing.T, p string) {
				if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
					t.Skipf("mknod: %v", err)
				}
			},
			wantType: fs.ModeDevice | fs.ModeCharDevice,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.json")
			tt.make(t, path)
			err := Write(path, []byte("new"), 0o644)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Write = %v, want %v", err, tt.wantErr)
			}
			fi, lerr := os.Lstat(path)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if got := fi.Mode().Type(); got != tt.wantType {
				t.Errorf("afterwards %s is %v, want %v", path, got, tt.wantType)
			}
			if tt.wantType == 0 {
				if b, _ := os.ReadFile(path); string(b) != tt.wantData || fi.Mode().Perm() != 0o644 {
					t.Errorf("content %q mode %v, want %q 0644", b, fi.Mode().Perm(), tt.wantData)
				}
			}
			if b, err := os.ReadFile(path + ".target"); err == nil && string(b) != "target" {
				t.Errorf("the symlink's target was written: %q", b)
			}
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp-*")); len(m) > 0 {
				t.Errorf("temporary files left behind: %v", m)
			}
		})
	}
}

func TestWriteFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // its reader, there first
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := Write(path, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if s := string(b); s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWriteFIFOWithoutReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("x"), 0o644); !errors.Is(err, ErrNoReader) {
		t.Errorf("Write = %v, want ErrNoReader at once, not a wait no signal ends", err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}
