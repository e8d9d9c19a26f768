package netx

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestAddrProblemEveryRange: the first and the last address of every range of the registry are
// refused, each named by its range (or by a more specific one inside it).
func TestAddrProblemEveryRange(t *testing.T) {
	for _, s := range specials {
		for _, a := range []netip.Addr{s.prefix.Masked().Addr(), lastAddr(s.prefix)} {
			got := AddrProblem(a)
			require.NotEmpty(t, got, "%s (%s)", a, s.name)
			require.False(t, PublicAddr(a), a.String())
		}
		got := AddrProblem(s.prefix.Masked().Addr().Next())
		require.NotEmpty(t, got, "%s + 1", s.prefix)
	}
}

// TestAddrProblem holds the named cases: the attacker's literals, the embedded IPv4 of each form
// that carries one, the mapped form judged as its IPv4 host, and public neighbours of the ranges.
func TestAddrProblem(t *testing.T) {
	refused := []struct{ addr, want string }{
		// The attacker's literals (issue 38): all passed before.
		{"::127.0.0.1", "IPv4-compatible (::/96), embedding 127.0.0.1, loopback"},
		{"::ffff:0:7f00:1", "SIIT (::ffff:0:0:0/96), embedding 127.0.0.1, loopback"},
		{"2001::7f00:1", "Teredo (2001::/32), embedding 0.0.0.0"},
		{"100::1", "discard-only (100::/64)"},
		// Embedded IPv4 of each form.
		{"::10.0.0.1", "embedding 10.0.0.1, private-use (10.0.0.0/8)"},
		{"::8.8.8.8", "IPv4-compatible (::/96)"},
		{"::ffff:0:a9fe:a9fe", "embedding 169.254.169.254, link-local"},
		{"64:ff9b::127.0.0.1", "NAT64 (64:ff9b::/96), embedding 127.0.0.1, loopback"},
		{"64:ff9b::8.8.8.8", "NAT64 (64:ff9b::/96)"},
		{"64:ff9b:1::1", "local-use NAT64 (64:ff9b:1::/48)"},
		{"2002:7f00:1::1", "6to4 (2002::/16), embedding 127.0.0.1, loopback"},
		{"2002:a9fe:a9fe::", "embedding 169.254.169.254, link-local"},
		{"2002:808:808::1", "6to4 (2002::/16)"},
		// Teredo: server 8.8.8.8, client 127.0.0.1 obfuscated (every bit inverted).
		{"2001:0:808:808:0:0:80ff:fffe", "embedding 127.0.0.1, loopback"},
		{"2001:0:808:808::f5ff:fffe", "embedding 10.0.0.1, private-use"},
		// Mapped: the IPv4 host itself.
		{"::ffff:127.0.0.1", "loopback (127.0.0.0/8)"},
		{"::ffff:100.64.0.1", "shared address space"},
		// Named ranges.
		{"0.0.0.0", `"this network"`},
		{"127.255.255.255", "loopback"},
		{"100.127.255.255", "shared address space"},
		{"169.254.169.254", "link-local"},
		{"172.31.255.255", "private-use"},
		{"192.0.0.9", "IETF protocol assignments"},
		{"192.0.2.1", "documentation"},
		{"192.31.196.1", "AS112"},
		{"192.52.193.1", "AMT"},
		{"192.88.99.1", "6to4 relay anycast"},
		{"192.175.48.1", "AS112"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.7", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "limited broadcast"},
		{"::", "unspecified"},
		{"::1", "loopback (::1/128)"},
		{"::1:0:0:1", "reserved by the IETF (::/8)"},
		{"100::ffff", "discard-only"},
		{"100:0:0:1::1", "dummy prefix"},
		{"2001:1::1", "IETF protocol assignments"},
		{"2001:2::1", "benchmarking"},
		{"2001:3::1", "AMT"},
		{"2001:4:112::1", "AS112"},
		{"2001:10::1", "ORCHID"},
		{"2001:20::1", "ORCHIDv2"},
		{"2001:30::1", "drone remote ID"},
		{"2001:db8::1", "documentation (2001:db8::/32)"},
		{"2620:4f:8000::1", "AS112 direct delegation"},
		{"3fff::1", "documentation (3fff::/20)"},
		{"5f00::1", "segment routing SIDs"},
		{"fd00::1", "unique local"},
		{"fc00::1", "unique local"},
		{"fe80::1", "link-local (fe80::/10)"},
		{"fe80::1%eth0", "link-local (fe80::/10)"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast (ff00::/8)"},
		{"4000::1", "outside the global unicast space"},
		{"c000::1", "outside the global unicast space"},
	}
	for _, tt := range refused {
		got := AddrProblem(netip.MustParseAddr(tt.addr))
		require.Contains(t, got, tt.want, tt.addr)
	}
	for _, a := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "::ffff:8.8.8.8",
		"2606:4700::1111", "2a00:1450:4001::200e",
		// Neighbours of the ranges.
		"9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0",
		"169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "191.255.255.255", "192.0.1.0",
		"192.0.3.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
		"223.255.255.255", "2001:200::1", "2001:db9::1", "2003::1", "2620:4f:8001::1", "3fff:1000::1",
	} {
		require.Empty(t, AddrProblem(netip.MustParseAddr(a)), a)
		require.True(t, PublicAddr(netip.MustParseAddr(a)), a)
	}
	require.NotEmpty(t, AddrProblem(netip.Addr{}))
}
