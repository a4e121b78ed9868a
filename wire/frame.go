// Package wire is Kafka's framing: length-prefixed frames, request and
// response headers (flexible and not), and the construction of error
// responses. Bodies are decoded and encoded with franz-go's kmsg. No actors,
// no storage.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxRequestSize is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxRequestSize = 100 << 20

// ErrFrameTooLarge is returned for a frame over the configured maximum; the
// connection must be closed (Kafka does the same) and nothing is allocated.
var ErrFrameTooLarge = errors.New("frame exceeds socket.request.max.bytes")

// ErrMalformed wraps any request that cannot be decoded.
var ErrMalformed = errors.New("malformed request")

// ReadFrame reads one size-prefixed frame. The size is checked against max
// before the body is allocated.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n, err := frameSize(sz, max)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return buf, nil
}

// RequestHeader is a decoded request header.
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	// Flexible is whether the header (and so the body) uses KIP-482 tagged fields.
	Flexible bool
}

// ClientIDString returns the client id or "".
func (h RequestHeader) ClientIDString() string {
	if h.ClientID == nil {
		return ""
	}
	return *h.ClientID
}

// ErrUnknownKey is returned for an API key kmsg does not know.
var ErrUnknownKey = errors.New("unknown api key")

// ErrVersionTooNew is returned when kmsg cannot decode the requested version.
var ErrVersionTooNew = errors.New("api version newer than the decoder knows")

// ParseHeader decodes a request header and returns the body bytes that follow.
// It needs kmsg to know whether the (key, version) pair is flexible.
func ParseHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformed, len(frame))
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rd := kbin.Reader{Src: frame[8:]}
	h.ClientID = rd.NullableString()
	if !rd.Ok() {
		return h, nil, fmt.Errorf("%w: truncated client id", ErrMalformed)
	}
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("%w %d", ErrUnknownKey, h.Key)
	}
	if h.Version < 0 || h.Version > req.MaxVersion() {
		return h, rd.Src, fmt.Errorf("%w: %s v%d (max %d)", ErrVersionTooNew, kmsg.NameForKey(h.Key), h.Version, req.MaxVersion())
	}
	req.SetVersion(h.Version)
	h.Flexible = req.IsFlexible()
	if h.Flexible {
		kmsg.SkipTags(&rd)
	}
	if !rd.Ok() {
		return h, nil, fmt.Errorf("%w: truncated request header", ErrMalformed)
	}
	return h, rd.Src, nil
}

// DecodeBody decodes a request body at the header's version.
func DecodeBody(h RequestHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownKey, h.Key)
	}
	req.SetVersion(h.Version)
	if err := decodeSafely(req, body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrMalformed, kmsg.NameForKey(h.Key), h.Version, err)
	}
	return req, nil
}

// decodeSafely turns any decoder panic on hostile input into an error: the
// broker never panics on client bytes.
func decodeSafely(req kmsg.Request, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return req.ReadFrom(body)
}

// AppendResponse frames resp for a request with header h: size, correlation
// id, the response header's tag section when flexible (never for
// ApiVersions, whose response header is always v0), then the body.
func AppendResponse(dst []byte, h RequestHeader, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if resp.IsFlexible() && resp.Key() != 18 {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
