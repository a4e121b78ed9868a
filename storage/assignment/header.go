package assignment

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
)

var headerRE = regexp.MustCompile(`"controller_epoch":\s*(\d+),\s*"assignment_version":\s*(\d+)`)

// ReadHeader reads only the epoch and version of an assignment file. Encode
// writes them first (the file is epoch-prefixed), so a controller can check
// cheaply, every second, that nobody with a lower epoch overwrote its file.
func ReadHeader(path string) (epoch, version int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read assignment header: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, 0, fmt.Errorf("read assignment header %s: %w", path, err)
	}
	m := headerRE.FindSubmatch(buf[:n])
	if m == nil {
		return 0, 0, fmt.Errorf("read assignment header %s: no epoch/version prefix", path)
	}
	epoch, _ = strconv.ParseInt(string(m[1]), 10, 64)
	version, _ = strconv.ParseInt(string(m[2]), 10, 64)
	return epoch, version, nil
}
