// Package diskspace measures the file system holding a directory: what
// DescribeLogDirs answers and the volume gauges of /metrics read.
package diskspace

import "golang.org/x/sys/unix"

// Of returns the total bytes of the file system holding dir and those
// available to the broker's (unprivileged) writes, or -1, -1 when they
// cannot be read.
func Of(dir string) (total, available int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}
