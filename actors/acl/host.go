package acl

import (
	"fmt"
	"net/netip"
	"strings"
)

// A binding's host is "*" (every host), an IP address, a CIDR block
// (KIP-1276: "10.0.0.0/8", "2001:db8::/32"), or any other string, which
// matches a client whose host is that exact string (Kafka stores hosts
// as given). Pod addresses change with every restart, so a block is how a
// Kubernetes operator names "the clients of this network".

// validHost refuses an empty host and a host with a "/" that is not a CIDR
// block.
func validHost(h string) error {
	if h == "" {
		return fmt.Errorf("%w: empty host (use %q for every host)", ErrInvalid, WildcardHost)
	}
	if strings.Contains(h, "/") {
		if _, err := netip.ParsePrefix(h); err != nil {
			return fmt.Errorf("%w: host %q is not a CIDR block (an IPv4 a.b.c.d/0-32 or IPv6 x::/0-128): %v", ErrInvalid, h, err)
		}
	}
	return nil
}

// hostPrefix is the block of addresses a binding's host names: one address
// for an IP, the block for CIDR notation, IPv4-mapped IPv6 forms as IPv4.
// False for "*" and for a host that is not an address.
func hostPrefix(h string) (netip.Prefix, bool) {
	if h == WildcardHost {
		return netip.Prefix{}, false
	}
	if strings.Contains(h, "/") {
		p, err := netip.ParsePrefix(h)
		if err != nil {
			return netip.Prefix{}, false
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), true
}

// client is the host of the connection asking, its address parsed once and
// only when a binding names addresses.
type client struct {
	host   string
	addr   netip.Addr
	parsed bool
}

func (c *client) address() netip.Addr {
	if !c.parsed {
		c.parsed = true
		if a, err := netip.ParseAddr(c.host); err == nil {
			c.addr = a.Unmap().WithZone("")
		}
	}
	return c.addr
}

// hostMatches reports whether a binding's host covers the client's.
func (s *snapshot) hostMatches(acl string, c *client) bool {
	if acl == WildcardHost || acl == c.host {
		return true
	}
	p, ok := s.hosts[acl]
	if !ok {
		return false
	}
	a := c.address()
	return a.IsValid() && p.Contains(a)
}
