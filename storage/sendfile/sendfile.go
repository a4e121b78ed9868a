// Package sendfile sends a range of a file to a TCP connection without
// copying it through user space (sendfile(2)): the zero-copy read path of
// both log engines (segment files on disk, the in-memory arena's memfd).
package sendfile
