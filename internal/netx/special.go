package netx

import (
	"fmt"
	"net/netip"
	"slices"
)

// special is one range no outbound delivery may reach: an entry of IANA's IPv4 and IPv6
// Special-Purpose Address Registries (RFC 6890 and its updates), or a block of the address-space
// registries that is not global unicast (multicast, reserved). embeds names the IPv4 addresses
// an address of the range carries, for ranges that embed one.
type special struct {
	prefix netip.Prefix
	name   string
	embeds func(a [16]byte) []netip.Addr
}

// last32 is the IPv4 address in the low 32 bits (IPv4-compatible, SIIT, NAT64 /96).
func last32(a [16]byte) []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte(a[12:16]))}
}

// sixToFour is the IPv4 address of a 6to4 prefix 2002:V4ADDR::/48 (RFC 3056).
func sixToFour(a [16]byte) []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte(a[2:6]))}
}

// teredo is the server's IPv4 address (bits 32-63) and the client's (the low 32 bits, every
// bit inverted) of a Teredo address (RFC 4380); the client's is also read as written, as an
// attacker writes it when guessing at a relay.
func teredo(a [16]byte) []netip.Addr {
	var client [4]byte
	for i := range client {
		client[i] = ^a[12+i]
	}
	return []netip.Addr{netip.AddrFrom4([4]byte(a[4:8])), netip.AddrFrom4(client), netip.AddrFrom4([4]byte(a[12:16]))}
}

// specials is the registry, longest prefixes first so that an address is named by the most
// specific range holding it. IPv4-mapped addresses (::ffff:0:0/96) are not listed: they are the
// IPv4 host itself (the kernel connects to it over IPv4), so AddrProblem judges the IPv4 address.
var specials = func() []special {
	p := netip.MustParsePrefix
	s := []special{
		// IPv4 (iana-ipv4-special-registry), multicast and the reserved class E.
		{p("0.0.0.0/8"), `"this network" (0.0.0.0/8)`, nil},
		{p("10.0.0.0/8"), "private-use (10.0.0.0/8)", nil},
		{p("100.64.0.0/10"), "shared address space (100.64.0.0/10)", nil},
		{p("127.0.0.0/8"), "loopback (127.0.0.0/8)", nil},
		{p("169.254.0.0/16"), "link-local (169.254.0.0/16)", nil},
		{p("172.16.0.0/12"), "private-use (172.16.0.0/12)", nil},
		{p("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)", nil},
		{p("192.0.2.0/24"), "documentation (192.0.2.0/24)", nil},
		{p("192.31.196.0/24"), "AS112 (192.31.196.0/24)", nil},
		{p("192.52.193.0/24"), "AMT (192.52.193.0/24)", nil},
		{p("192.88.99.0/24"), "6to4 relay anycast (192.88.99.0/24)", nil},
		{p("192.168.0.0/16"), "private-use (192.168.0.0/16)", nil},
		{p("192.175.48.0/24"), "AS112 direct delegation (192.175.48.0/24)", nil},
		{p("198.18.0.0/15"), "benchmarking (198.18.0.0/15)", nil},
		{p("198.51.100.0/24"), "documentation (198.51.100.0/24)", nil},
		{p("203.0.113.0/24"), "documentation (203.0.113.0/24)", nil},
		{p("224.0.0.0/4"), "multicast (224.0.0.0/4)", nil},
		{p("240.0.0.0/4"), "reserved (240.0.0.0/4)", nil},
		{p("255.255.255.255/32"), "limited broadcast (255.255.255.255/32)", nil},

		// IPv6 (iana-ipv6-special-registry) and the blocks outside global unicast.
		{p("::/128"), "unspecified (::/128)", nil},
		{p("::1/128"), "loopback (::1/128)", nil},
		{p("::/96"), "IPv4-compatible (::/96)", last32},
		{p("::ffff:0:0:0/96"), "IPv4-translated, SIIT (::ffff:0:0:0/96)", last32},
		{p("::/8"), "reserved by the IETF (::/8)", nil},
		{p("64:ff9b::/96"), "NAT64 (64:ff9b::/96)", last32},
		{p("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)", nil},
		{p("100::/64"), "discard-only (100::/64)", nil},
		{p("100:0:0:1::/64"), "dummy prefix (100:0:0:1::/64)", nil},
		{p("2001::/23"), "IETF protocol assignments (2001::/23)", nil},
		{p("2001::/32"), "Teredo (2001::/32)", teredo},
		{p("2001:2::/48"), "benchmarking (2001:2::/48)", nil},
		{p("2001:3::/32"), "AMT (2001:3::/32)", nil},
		{p("2001:4:112::/48"), "AS112 (2001:4:112::/48)", nil},
		{p("2001:10::/28"), "ORCHID (2001:10::/28)", nil},
		{p("2001:20::/28"), "ORCHIDv2 (2001:20::/28)", nil},
		{p("2001:30::/28"), "drone remote ID (2001:30::/28)", nil},
		{p("2001:db8::/32"), "documentation (2001:db8::/32)", nil},
		{p("2002::/16"), "6to4 (2002::/16)", sixToFour},
		{p("2620:4f:8000::/48"), "AS112 direct delegation (2620:4f:8000::/48)", nil},
		{p("3fff::/20"), "documentation (3fff::/20)", nil},
		{p("5f00::/16"), "segment routing SIDs (5f00::/16)", nil},
		{p("fc00::/7"), "unique local (fc00::/7)", nil},
		{p("fe80::/10"), "link-local (fe80::/10)", nil},
		{p("fec0::/10"), "site-local, deprecated (fec0::/10)", nil},
		{p("ff00::/8"), "multicast (ff00::/8)", nil},
	}
	slices.SortStableFunc(s, func(a, b special) int { return b.prefix.Bits() - a.prefix.Bits() })
	return s
}()

// globalUnicast is IPv6's global unicast space; every other IPv6 block is special or not yet
// assigned, and nothing a delivery should reach.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// AddrProblem says why ip is not an address an outbound delivery (a webhook) may connect to, or
// "": the range of the special-purpose registries that holds it, and for ranges that embed an
// IPv4 address (IPv4-compatible, SIIT, NAT64, 6to4, Teredo) the embedded address when that is
// special too. One rule serves the URL check and the dial check, so a literal the URL check
// lets through is a connection the dialer makes, and no other.
func AddrProblem(ip netip.Addr) string {
	if !ip.IsValid() {
		return "not an IP address"
	}
	ip = ip.WithZone("").Unmap()
	for _, s := range specials {
		if !s.prefix.Contains(ip) {
			continue
		}
		problem := fmt.Sprintf("%s is %s", ip, s.name)
		if s.embeds != nil {
			for _, v4 := range s.embeds(ip.As16()) {
				if inner := v4Range(v4); inner != "" {
					return fmt.Sprintf("%s, embedding %s, %s", problem, v4, inner)
				}
			}
		}
		return problem
	}
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return fmt.Sprintf("%s is outside the global unicast space (2000::/3)", ip)
	}
	return ""
}

// v4Range names the special range holding the IPv4 address v4, or "".
func v4Range(v4 netip.Addr) string {
	for _, s := range specials {
		if s.prefix.Contains(v4) {
			return s.name
		}
	}
	return ""
}

// PublicAddr reports whether ip is an address an outbound delivery may connect to
// (AddrProblem(ip) == "").
func PublicAddr(ip netip.Addr) bool { return AddrProblem(ip) == "" }
