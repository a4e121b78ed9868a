package conn

import (
	"bufio"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/wire"
)

// fetchResponse is a Fetch response whose record batches stay in storage
// until the writer goroutine sends them: file-backed records go from the
// page cache to the socket with sendfile, never through user space. The
// records are closed once written (or dropped).
type fetchResponse struct {
	*kmsg.FetchResponse
	recs map[[2]int]storage.Records // [topic index, partition index]
}

// AppendTo copies the records into the encoding (a fallback; the writer
// uses encodeFetch).
func (r *fetchResponse) AppendTo(dst []byte) []byte {
	for k, rec := range r.recs {
		p := &r.Topics[k[0]].Partitions[k[1]]
		if b, err := rec.AppendTo(make([]byte, 0, rec.Len())); err == nil {
			p.RecordBatches = b
		}
	}
	r.release()
	return r.FetchResponse.AppendTo(dst)
}

func (r *fetchResponse) release() {
	for k, rec := range r.recs {
		_ = rec.Close()
		delete(r.recs, k)
	}
}

// outFrame is one response frame for the writer goroutine: plain bytes, or
// pieces (bytes and records) written in order.
type outFrame struct {
	b      []byte
	pieces []wire.Piece
	api    *metrics.API // request latency is observed once the frame is written
	read   time.Time
}

// encodeFrame frames a finished response.
func encodeFrame(hdr wire.RequestHeader, resp kmsg.Response) outFrame {
	if fr, ok := resp.(*fetchResponse); ok && len(fr.recs) > 0 {
		pieces := wire.AppendFetchResponse(nil, hdr, fr.FetchResponse, func(t, p int) wire.Records {
			if r, ok := fr.recs[[2]int{t, p}]; ok {
				return r
			}
			return nil
		})
		return outFrame{pieces: pieces}
	}
	return outFrame{b: wire.AppendResponse(nil, hdr, resp)}
}

// releaseFrame closes the records of a frame that will not be written.
func releaseFrame(f outFrame) {
	for _, p := range f.pieces {
		if r, ok := p.Records.(storage.Records); ok {
			_ = r.Close()
		}
	}
}

// copyBelow is the size under which file-backed records are copied into
// the write buffer (one pread) rather than sent with their own sendfile.
const copyBelow = 16 << 10

// writeFrame writes a frame through w; records pieces that are file-backed
// and large go straight to the socket after a flush. Every records piece is
// closed, written or not.
func writeFrame(w *bufio.Writer, c net.Conn, f outFrame) error {
	if f.pieces == nil {
		_, err := w.Write(f.b)
		return err
	}
	var err error
	for i, p := range f.pieces {
		if err != nil {
			releaseFrame(outFrame{pieces: f.pieces[i:]})
			break
		}
		if p.Records == nil {
			_, err = w.Write(p.Bytes)
			continue
		}
		rec, _ := p.Records.(storage.Records)
		switch m := p.Records.(type) {
		case storage.BytesRecords:
			_, err = w.Write(m)
		default:
			if p.Records.Len() < copyBelow && rec != nil && w.Available() >= p.Records.Len() {
				var b []byte
				b, err = rec.AppendTo(w.AvailableBuffer())
				if err == nil {
					_, err = w.Write(b)
				}
				break
			}
			if err = w.Flush(); err == nil {
				_, err = p.Records.WriteTo(c)
			}
		}
		if rec != nil {
			_ = rec.Close()
		}
	}
	return err
}
