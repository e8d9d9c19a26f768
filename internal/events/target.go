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

	"github.com/splathost/splathost/internal/netx"
	"github.com/splathost/splathost/workflows/contract"
)

// MaxURL bounds an endpoint URL.
const MaxURL = 2048

// URLProblem says what is wrong with raw as an endpoint URL, or "". Without allowPrivate it must
// be https and must not name localhost or, literally, an address of the special-purpose
// registries (netx.AddrProblem: loopback, private, link-local, IPv4 embedded in IPv6, ...); a
// DNS name is checked where it matters, at every connection (Client), since it may resolve
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
	if ip, err := netip.ParseAddr(host); err == nil {
		if problem := netx.AddrProblem(ip); problem != "" {
			return "must not target a loopback, private or special-purpose address: " + problem
		}
	}
	return ""
}

// ErrPrivateTarget is the error of a connection refused because its address is not public.
var ErrPrivateTarget = errors.New("webhook target resolves to a loopback, private or special-purpose address")

// Client is the HTTP client of deliveries. Without allowPrivate its dialer checks the address
// it is about to connect to, after DNS resolution, so a name that resolves to a private address
// (or is rebound to one after the endpoint was registered) is refused at connect time. Redirects
// are not followed (a 3xx is a failed attempt), and no proxy from the environment is used.
func Client(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: contract.WebhookTimeout}
	if !allowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !netx.PublicAddr(ap.Addr()) {
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
