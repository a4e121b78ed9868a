package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest feeds arbitrary frames to the header and body decoders.
// The seed corpus (testdata/fuzz/FuzzDecodeRequest) was recorded from real
// client traffic (see cmd/kaas TestRecordedClientTrafficDecodes). The
// decoders must never panic and must reject or round-trip every input.
func FuzzDecodeRequest(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest()} {
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			f.Add(fm.AppendRequest(nil, req, 1)[4:])
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		hdr, body, err := ParseHeader(frame)
		if err != nil {
			return
		}
		req, err := DecodeBody(hdr, body)
		if err != nil {
			return
		}
		// Whatever decoded must encode again without panicking.
		_ = req.AppendTo(nil)
	})
}

func TestReadFrameRefusesOversizeBeforeAllocating(t *testing.T) {
	_, err := ReadFrame(bytes.NewReader([]byte{0x10, 0, 0, 0}), 1024)
	if err == nil {
		t.Fatal("oversize frame accepted")
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), 1024); err == nil {
		t.Fatal("negative frame size accepted")
	}
	b, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 2, 7, 8}), 1024)
	if err != nil || !bytes.Equal(b, []byte{7, 8}) {
		t.Fatalf("frame: %v %v", b, err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 5, 1}), 1024); err == nil {
		t.Fatal("truncated frame accepted")
	}
}

func TestParseHeaderFlexibleAndNot(t *testing.T) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("cid"))
	for _, v := range []int16{0, 8, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		topic := "x"
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &topic
		req.Topics = append(req.Topics, mt)
		frame := fm.AppendRequest(nil, req, 77)[4:]
		hdr, body, err := ParseHeader(frame)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if hdr.CorrelationID != 77 || hdr.ClientIDString() != "cid" || hdr.Flexible != (v >= 9) {
			t.Fatalf("v%d header %+v", v, hdr)
		}
		got, err := DecodeBody(hdr, body)
		if err != nil {
			t.Fatalf("v%d body: %v", v, err)
		}
		if mr := got.(*kmsg.MetadataRequest); len(mr.Topics) != 1 || *mr.Topics[0].Topic != "x" {
			t.Fatalf("v%d decoded %+v", v, mr)
		}
	}
	if _, _, err := ParseHeader([]byte{0, 3, 0}); err == nil {
		t.Fatal("short header accepted")
	}
	if _, _, err := ParseHeader([]byte{0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff}); err == nil {
		t.Fatal("unknown key accepted")
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	// ApiVersions v3 is flexible but its response header never has tags.
	av := kmsg.NewPtrApiVersionsResponse()
	av.SetVersion(3)
	b := AppendResponse(nil, RequestHeader{CorrelationID: 5, Key: 18, Version: 3}, av)
	want := av.AppendTo(nil)
	if !bytes.Equal(b[8:], want) {
		t.Fatal("ApiVersions response header carried a tag section")
	}
	md := kmsg.NewPtrMetadataResponse()
	md.SetVersion(9)
	b = AppendResponse(nil, RequestHeader{CorrelationID: 5, Key: 3, Version: 9}, md)
	if b[8] != 0 || !bytes.Equal(b[9:], md.AppendTo(nil)) {
		t.Fatal("flexible response header lacks its tag section")
	}
	if int(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) != len(b)-4 {
		t.Fatal("size prefix wrong")
	}
}
