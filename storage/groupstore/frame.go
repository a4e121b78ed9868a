package groupstore

import "bufio"

// AppendFrame appends payload to dst in the store's CRC-framed record
// format (length, CRC-32C, payload), so other append-only logs on the
// shared volume (the transaction log, storage/txnlog) use one format.
func AppendFrame(dst, payload []byte) []byte { return appendFrame(dst, payload) }

// ReadFrame reads one frame written by AppendFrame and returns its payload
// and its size on disk. A torn or corrupt frame is an error: readers keep
// the valid prefix and cut the rest off.
func ReadFrame(r *bufio.Reader) ([]byte, int, error) { return readFrame(r) }
