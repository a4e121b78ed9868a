package assignment

import (
	"fmt"
	"testing"
)

// benchAssignment builds a valid document with about parts partitions over
// brokers alive brokers (topic sizes cycle through a mix, mean 32).
func benchAssignment(parts, brokers int) *Assignment {
	sizes := []int{1, 3, 6, 12, 24, 32, 50, 64, 96}
	a := &Assignment{Format: 1, ControllerEpoch: 12, AssignmentVersion: 345, Controller: "kaas-0",
		ControllerHeartbeat: "kaas-0.kaas.kaas-system.svc:9094", Topics: map[string]Topic{}}
	for b := 0; b < brokers; b++ {
		name := fmt.Sprintf("kaas-%d", b)
		a.Brokers = append(a.Brokers, Broker{ID: int32(b), Name: name, Host: name + ".kaas.kaas-system.svc", Port: 9092, State: Alive})
		a.ConsumerGroups.Slots = append(a.ConsumerGroups.Slots, name)
	}
	next := 0
	for i, n := 0, 0; n < parts; i++ {
		size := min(sizes[i%len(sizes)], parts-n)
		t := Topic{ID: fmt.Sprintf("3f1c2a7e-0000-4000-8000-%012d", i), Config: map[string]string{"retention.ms": "604800000"}}
		for p := 0; p < size; p++ {
			t.Partitions = append(t.Partitions, Partition{Leader: int32(next % brokers), LeaderEpoch: int32(p % 7)})
			next++
		}
		if i%40 == 0 { // a few topics carry pins, as CreateTopics with a replica assignment leaves them
			for p := 0; p < size; p += 2 {
				t.Pins = append(t.Pins, Pin{Partition: int32(p), Broker: int32((i + p) % brokers)})
			}
		}
		a.Topics[fmt.Sprintf("topic-%05d", i)] = t
		n += size
	}
	return a
}

// BenchmarkFile measures what the controller and every broker pay per
// change: Encode + WriteFile (tmp, fsync, rename, fsync dir) + ReadFile
// (read + Decode + Validate).
func BenchmarkFile(b *testing.B) {
	for _, parts := range []int{1_000, 10_000, 100_000} {
		for _, brokers := range []int{3, 30, 100} {
			a := benchAssignment(parts, brokers)
			data, err := Encode(a)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("encode/p=%d/b=%d", parts, brokers), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := Encode(a); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("decode/p=%d/b=%d", parts, brokers), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := Decode(data); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("write+read/p=%d/b=%d", parts, brokers), func(b *testing.B) {
				dir := b.TempDir()
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if err := WriteFile(dir, a); err != nil {
						b.Fatal(err)
					}
					if _, err := ReadFile(Path(dir)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCodec measures Encode and Decode at 100k partitions over 100
// brokers, with the encoding/json decoder of the same format as the
// baseline in the same run (decode/encoding-json).
func BenchmarkCodec(b *testing.B) {
	a := benchAssignment(100_000, 100)
	data, err := Encode(a)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode/p=100000/b=100", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Encode(a); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, dec := range []struct {
		name   string
		decode func([]byte) (*Assignment, error)
	}{{"decode", Decode}, {"decode/encoding-json", decodeWithEncodingJSON}} {
		b.Run(dec.name+"/p=100000/b=100", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := dec.decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
