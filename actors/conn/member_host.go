package conn

import (
	"fmt"
	"net"
	"strings"
)

// MemberHost is a peer address as Kafka's group coordinator records a
// member's client host (and DescribeGroups, ConsumerGroupDescribe and the
// other describes answer it, and kafka-consumer-groups.sh prints it):
// Java's InetAddress.toString() of an address without a host name, "/"
// then the IPv4 address, or the IPv6 one in full ("/0:0:0:0:0:0:0:1"). A
// host already in that form is returned as it is.
func MemberHost(host string) string {
	if strings.HasPrefix(host, "/") {
		return host
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return "/" + host
	case ip.To4() != nil:
		return "/" + ip.To4().String()
	}
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = fmt.Sprintf("%x", uint16(ip[2*i])<<8|uint16(ip[2*i+1]))
	}
	return "/" + strings.Join(groups, ":")
}
