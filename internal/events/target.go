package events

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/splathost/splathost/workflows/contract"
)

// MaxURL bounds an endpoint URL.
const MaxURL = 2048

// blocked are the ranges no production delivery may reach besides those netip classifies as
// loopback, private, link-local, multicast or unspecified: "this network", shared address space
// (carrier NAT), IETF protocol assignments, benchmarking, reserved, and the NAT64 and 6to4
// prefixes that embed an IPv4 address.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// PublicAddr reports whether ip is an address a production delivery may connect to.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// URLProblem says what is wrong with raw as an endpoint URL, or "". Without allowPrivate it must
// be https and must not name a loopback or private address literally (nor localhost); a DNS
// name is checked where it matters, at every connection (Dialer), since it may resolve
// elsewhere by then.
func URLProblem(raw string, allowPrivate bool) string {
	if len(raw) > MaxURL {
		return fmt.Sprintf("must be at most %d characters", MaxURL)
	}
	for _, r := range raw {
		if r < 0x21 || r == 0x7f {
			return "must not contain spaces or control characters"
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "must be an absolute URL"
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	case u.Scheme == "http":
		return "must be an https URL"
	default:
		if allowPrivate {
			return "must be an http(s) URL"
		}
		return "must be an https URL"
	}
	if u.Host == "" || u.Hostname() == "" {
		return "must name a host"
	}
	if u.User != nil {
		return "must not carry credentials"
	}
	if allowPrivate {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "must not target a loopback or private address"
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
		return "must not target a loopback or private address"
	}
	return ""
}

// ErrPrivateTarget is the error of a connection refused because its address is not public.
var ErrPrivateTarget = errors.New("webhook target resolves to a loopback or private address")

// Client is the HTTP client of deliveries. Without allowPrivate its dialer checks the address
// it is about to connect to, after DNS resolution, so a name that resolves to a private address
// (or is rebound to one after the endpoint was registered) is refused at connect time. Redirects
// are not followed (a 3xx is a failed attempt), and no proxy from the environment is used.
func Client(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: contract.WebhookTimeout}
	if !allowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !PublicAddr(ap.Addr()) {
				return ErrPrivateTarget
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   contract.WebhookTimeout,
		ResponseHeaderTimeout: contract.WebhookTimeout,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       contract.WebhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
