package conn

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire"
)

// Handler serves one API key. It is called in the connection actor's
// Receive, in request order, and must not block.
type Handler func(r *Request) Pending

// API is one served API key: its version range (what ApiVersions lists),
// its handler and its error response.
type API struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
	Handle     Handler
	// ErrorResponse answers req with code in every per-item error slot
	// (a handler panic). Nil: the response's top-level
	// ErrorCode carries code, for APIs that have one.
	ErrorResponse func(req kmsg.Request, code int16) kmsg.Response
	// AdvertiseV0 makes ApiVersions list MinVersion 0 although versions
	// below MinVersion are not served (Produce, SaslHandshake).
	AdvertiseV0 bool
}

// coreAPIs are the APIs this package serves; each 00_name.go file adds its
// own in init. Consumer-group APIs are registered by the group package.
var coreAPIs = map[int16]API{}

// serve adds a to coreAPIs; a key served twice is a programming error.
func serve(a API) {
	if _, dup := coreAPIs[a.Key]; dup {
		panic("conn: API key " + kmsg.NameForKey(a.Key) + " served twice")
	}
	coreAPIs[a.Key] = a
}

// registerCore registers coreAPIs on s.
func registerCore(s *Server) {
	for _, a := range coreAPIs {
		s.Register(a)
	}
}

// unsupportedVersion builds the answer to a request whose version this
// broker does not serve. Only ApiVersions is answered, in v0 with
// UNSUPPORTED_VERSION and the API table (so the client can retry with a
// version it knows); any other request gets nil and its connection is
// closed, as Kafka's socket server closes it for a version it has not
// enabled (Produce v0-2 included: listed in ApiVersions, never served).
func unsupportedVersion(s *Server, hdr wire.RequestHeader) kmsg.Response {
	if hdr.Key == kmsg.ApiVersions.Int16() {
		return apiVersionsUnsupported(s)
	}
	return nil
}

// errorResponse answers req with code in every per-item error slot.
func errorResponse(api API, req kmsg.Request, code int16) kmsg.Response {
	if api.ErrorResponse != nil {
		return api.ErrorResponse(req, code)
	}
	// Everything else carries a top-level ErrorCode (InitProducerID,
	// DescribeCluster, FindCoordinator v0-3, the group APIs...).
	resp := req.ResponseKind()
	setTopLevelError(resp, code)
	return resp
}

// setTopLevelError sets a response struct's ErrorCode field if it has one.
func setTopLevelError(resp kmsg.Response, code int16) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("ErrorCode"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}

// optString is s as a Kafka nullable string: nil when empty.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// topLevelError reads a response struct's ErrorCode field (0 if it has none).
func topLevelError(resp kmsg.Response) int16 {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0
	}
	if f := v.Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		return int16(f.Int())
	}
	return 0
}
