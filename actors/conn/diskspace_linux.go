package conn

import "golang.org/x/sys/unix"

// diskSpace returns the total and available bytes of the file system
// holding dir, or -1, -1 when it cannot be read.
func diskSpace(dir string) (total, usable int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}
