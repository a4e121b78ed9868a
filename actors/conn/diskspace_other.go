//go:build !linux

package conn

// diskSpace is not measured off Linux: -1, -1 (unknown).
func diskSpace(string) (total, usable int64) { return -1, -1 }
