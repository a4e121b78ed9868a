package wiretest

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeAddrIsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	seen := map[string]bool{}
	for range 200 {
		addr := FreeAddr(t)
		if seen[addr] {
			t.Fatalf("%s given twice", addr)
		}
		seen[addr] = true
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if p < lowestPort || p >= low {
			t.Fatalf("port %d outside [%d, %d)", p, lowestPort, low)
		}
	}
}

func TestFreeAddrSkipsABoundPort(t *testing.T) {
	// With one candidate port bound, every address given is another.
	var ln net.Listener
	for p := lowestPort; ln == nil && p < lowestPort+102; p++ {
		ln, _ = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	}
	if ln == nil {
		t.Fatal("no port of the window could be bound")
	}
	defer ln.Close()
	for range 200 {
		addr, err := freeAddr(lowestPort + 102)
		if err != nil {
			break // every other candidate given
		}
		if addr == ln.Addr().String() {
			t.Fatalf("gave the bound %s", addr)
		}
	}
}

func TestFreeAddrFallsBackToPortZero(t *testing.T) {
	addr, err := freeAddr(lowestPort)
	if err != nil {
		t.Fatal(err)
	}
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		t.Fatalf("got %s", addr)
	}
}
