package realnode

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// FsUsage is a statfs of the image filesystem, in bytes.
type FsUsage struct {
	Capacity  int64
	Available int64
	Used      int64
}

// ImageFsUsage measures the image filesystem with statfs.
func (n *Node) ImageFsUsage() (FsUsage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.root, &st); err != nil {
		return FsUsage{}, fmt.Errorf("statfs %s: %w", n.root, err)
	}
	bs := int64(st.Bsize)
	return FsUsage{
		Capacity:  int64(st.Blocks) * bs,
		Available: int64(st.Bavail) * bs,
		Used:      int64(st.Blocks-st.Bfree) * bs,
	}, nil
}

// LogTail returns the last lines of containerd's log.
func (n *Node) LogTail(lines int) string {
	b, err := os.ReadFile(n.logFile)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", n.logFile, err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// toolPath is PATH with the sbin directories added: Debian installs runc in
// /usr/sbin, which a non-login root shell may not have.
func toolPath() string {
	p := os.Getenv("PATH")
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		if !strings.Contains(":"+p+":", ":"+d+":") {
			p += ":" + d
		}
	}
	return strings.TrimPrefix(p, ":")
}
