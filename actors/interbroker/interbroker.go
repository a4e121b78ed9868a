// Package interbroker sends Kafka requests from this broker to another
// broker's published listener: transaction markers and verifications, the
// share-group coordinator's end offsets. One franz-go client per broker
// address, opened on first use with the inter-broker TLS and SASL options,
// so every caller shares one connection per peer.
package interbroker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// Clients holds the clients to the other brokers.
type Clients struct {
	// Timeout bounds one request (0: 10 s).
	Timeout time.Duration
	// ClientOpts configure each client beyond its seed broker: TLS and SASL
	// when the published listener needs them.
	ClientOpts []kgo.Opt

	mu      sync.Mutex
	clients map[string]*kgo.Client
}

// Request sends req to broker b and calls answer with the response or the
// error: at once when b has no client, else from a goroutine of its own
// within the timeout, so the caller (an actor) never waits on the network.
func (c *Clients) Request(b routing.Broker, req kmsg.Request, answer func(kmsg.Response, error)) {
	cl, addr, err := c.client(b)
	if err != nil {
		answer(nil, err)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
		defer cancel()
		answer(c.send(ctx, cl, addr, req))
	}()
}

// Do sends req to broker b and waits for the answer, at most the timeout
// or until ctx is done.
func (c *Clients) Do(ctx context.Context, b routing.Broker, req kmsg.Request) (kmsg.Response, error) {
	cl, addr, err := c.client(b)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	return c.send(ctx, cl, addr, req)
}

func (c *Clients) send(ctx context.Context, cl *kgo.Client, addr string, req kmsg.Request) (kmsg.Response, error) {
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("no client for %s", addr)
	}
	kr, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", kmsg.NameForKey(req.Key()), addr, err)
	}
	return kr, nil
}

func (c *Clients) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 10 * time.Second
	}
	return c.Timeout
}

func (c *Clients) client(b routing.Broker) (*kgo.Client, string, error) {
	addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[addr]; ok {
		return cl, addr, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, c.ClientOpts...)...)
	if err != nil {
		return nil, addr, fmt.Errorf("client for %s: %w", addr, err)
	}
	if c.clients == nil {
		c.clients = map[string]*kgo.Client{}
	}
	c.clients[addr] = cl
	return cl, addr, nil
}

// Close closes the clients; a later request opens new ones.
func (c *Clients) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
}
