package config

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/splathost/splathost/internal/ratelimit"
)

// RateLimits are the request rate limits (docs/security.md, "Rate limits"). Each limit is
// QUOTA/WINDOW ("100/1s": bursts of 100, 100 a second sustained) or "off". The plans' limits hold
// across gateway replicas (their buckets are in Postgres, leased in batches); the others are kept
// by each gateway (and each session service, for the beacons) in its own memory.
type RateLimits struct {
	// Enabled turns every limit on (SPLATHOST_RATELIMIT_ENABLED, default true); false is the
	// benchmark's baseline for the limiter's own cost.
	Enabled bool
	// APIFree, APIPro and APIEnterprise limit each integration on /api/v1 and the embed-session
	// mint, by its account's plan (SPLATHOST_RATELIMIT_API_FREE, _PRO, _ENTERPRISE).
	APIFree, APIPro, APIEnterprise ratelimit.Limit
	// Session limits each embed session on /api/embed (SPLATHOST_RATELIMIT_SESSION).
	Session ratelimit.Limit
	// Miss limits the failed answers (4xx but 429) one client address gets on routes it reached
	// without credentials, or with credentials that did not verify (SPLATHOST_RATELIMIT_MISS):
	// what a stranger probing for assets or keys costs the databases.
	Miss ratelimit.Limit
	// Read limits the other answers of those routes per address (SPLATHOST_RATELIMIT_READ): far
	// above Miss, so a viewer streaming thousands of LOD tiles is never slowed.
	Read ratelimit.Limit
	// Visitors is how many new visitorIds one session may introduce in likes and views
	// (SPLATHOST_RATELIMIT_VISITORS); Views how many views one session may record
	// (SPLATHOST_RATELIMIT_VIEWS).
	Visitors, Views ratelimit.Limit
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (SPLATHOST_TRUSTED_PROXIES: addresses or CIDR prefixes, comma-separated). Empty, the TCP
	// peer is the client and X-Forwarded-For is ignored.
	TrustedProxies []netip.Prefix
}

// DefaultRateLimits are the limits of a deployment that sets none: `make dev` and the test
// harness run with them too (docs/security.md lists them).
var DefaultRateLimits = RateLimits{
	Enabled:       true,
	APIFree:       ratelimit.Limit{Quota: 200, Window: 10 * time.Second},
	APIPro:        ratelimit.Limit{Quota: 1000, Window: 10 * time.Second},
	APIEnterprise: ratelimit.Limit{Quota: 5000, Window: 10 * time.Second},
	Session:       ratelimit.Limit{Quota: 200, Window: 10 * time.Second},
	Miss:          ratelimit.Limit{Quota: 100, Window: time.Second},
	Read:          ratelimit.Limit{Quota: 10000, Window: 10 * time.Second},
	Visitors:      ratelimit.Limit{Quota: 5, Window: time.Minute},
	Views:         ratelimit.Limit{Quota: 30, Window: time.Minute},
}

// API is the per-integration limit of an account plan ("free", "pro", "enterprise"); an unknown
// plan gets the free plan's.
func (r RateLimits) API(plan string) ratelimit.Limit {
	switch plan {
	case "enterprise":
		return r.APIEnterprise
	case "pro":
		return r.APIPro
	}
	return r.APIFree
}

// rateLimitVars are the variables of RateLimits' limits, with where each lives.
func (r *RateLimits) rateLimitVars() []struct {
	key string
	lim *ratelimit.Limit
} {
	return []struct {
		key string
		lim *ratelimit.Limit
	}{
		{"SPLATHOST_RATELIMIT_API_FREE", &r.APIFree},
		{"SPLATHOST_RATELIMIT_API_PRO", &r.APIPro},
		{"SPLATHOST_RATELIMIT_API_ENTERPRISE", &r.APIEnterprise},
		{"SPLATHOST_RATELIMIT_SESSION", &r.Session},
		{"SPLATHOST_RATELIMIT_MISS", &r.Miss},
		{"SPLATHOST_RATELIMIT_READ", &r.Read},
		{"SPLATHOST_RATELIMIT_VISITORS", &r.Visitors},
		{"SPLATHOST_RATELIMIT_VIEWS", &r.Views},
	}
}

// rateLimits reads RateLimits over DefaultRateLimits.
func (l *loader) rateLimits() RateLimits {
	r := DefaultRateLimits
	r.Enabled = l.bool("SPLATHOST_RATELIMIT_ENABLED", true)
	for _, v := range r.rateLimitVars() {
		if s, ok := os.LookupEnv(v.key); ok && strings.TrimSpace(s) != "" {
			lim, err := ratelimit.ParseLimit(s)
			if err != nil {
				l.errs = append(l.errs, v.key+": "+err.Error())
				continue
			}
			*v.lim = lim
		}
	}
	r.TrustedProxies = l.prefixes("SPLATHOST_TRUSTED_PROXIES")
	return r
}

// prefixes reads a comma-separated list of addresses and CIDR prefixes (an address is its own
// /32 or /128).
func (l *loader) prefixes(key string) []netip.Prefix {
	var out []netip.Prefix
	for _, part := range strings.Split(os.Getenv(key), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil {
				l.errs = append(l.errs, key+": "+strconv.Quote(part)+" is neither an address nor a CIDR prefix")
				continue
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out
}

// environ is RateLimits' part of Config.Environ.
func (r RateLimits) environ() [][2]string {
	vars := [][2]string{{"SPLATHOST_RATELIMIT_ENABLED", strconv.FormatBool(r.Enabled)}}
	for _, v := range r.rateLimitVars() {
		vars = append(vars, [2]string{v.key, v.lim.String()})
	}
	proxies := make([]string, len(r.TrustedProxies))
	for i, p := range r.TrustedProxies {
		proxies[i] = p.String()
	}
	return append(vars, [2]string{"SPLATHOST_TRUSTED_PROXIES", strings.Join(proxies, ",")})
}
