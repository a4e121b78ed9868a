// Package wiretest gives tests loopback addresses to listen on.
package wiretest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
)

// lowestPort is where FreeAddr's ports start: above the well-known and
// registered ports most services bind.
const lowestPort = 10000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// FreeAddr returns a loopback address whose port was free when probed and
// that no other FreeAddr call of this process returned. The port is drawn
// below the kernel's ephemeral range: the outgoing connections of a test take
// their local ports from that range, so a port picked there (as port 0 picks)
// can be taken by a client's connect before the server listens on it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr(ephemeralLow())
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func freeAddr(high int) (string, error) {
	if high <= lowestPort+100 {
		return probe(0)
	}
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := lowestPort + rand.IntN(high-lowestPort)
		if given[p] {
			continue
		}
		addr, err := probe(p)
		if err != nil {
			continue
		}
		given[p] = true
		return addr, nil
	}
	return "", fmt.Errorf("no free loopback port in [%d, %d)", lowestPort, high)
}

func probe(port int) (string, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	f, err := os.Open("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	defer f.Close()
	var low, high int
	if _, err := fmt.Fscan(bufio.NewReader(f), &low, &high); err != nil {
		return 32768
	}
	return low
}
