//go:build !linux

package diskspace

// Of is not measured off Linux: -1, -1 (unknown).
func Of(string) (total, available int64) { return -1, -1 }
