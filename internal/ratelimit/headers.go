package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseLimit reads a limit written "QUOTA/WINDOW": "100/1s", "1000/10s", "5/1m" (the window a Go
// duration of whole seconds; "100/s" means "100/1s"), or "off" (also "0") for no limit.
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Limit{}, nil
	}
	q, w, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, errors.New(`want QUOTA/WINDOW such as "100/1s" or "5/1m", or "off"`)
	}
	quota, err := strconv.Atoi(strings.TrimSpace(q))
	if err != nil || quota <= 0 {
		return Limit{}, fmt.Errorf("quota %q: want a positive integer", q)
	}
	w = strings.TrimSpace(w)
	if w != "" && (w[0] < '0' || w[0] > '9') {
		w = "1" + w
	}
	window, err := time.ParseDuration(w)
	// The RateLimit-Policy field states the window in whole seconds.
	if err != nil || window < time.Second || window%time.Second != 0 {
		return Limit{}, fmt.Errorf("window %q: want whole seconds, such as 1s, 10s or 1m", w)
	}
	return Limit{Quota: quota, Window: window}, nil
}

// String writes the limit the way ParseLimit reads it ("100/1s", "5/1m"), "off" for no limit.
func (l Limit) String() string {
	if l.Off() {
		return "off"
	}
	s := int64(l.Window / time.Second)
	switch {
	case s%3600 == 0:
		return strconv.Itoa(l.Quota) + "/" + strconv.FormatInt(s/3600, 10) + "h"
	case s%60 == 0:
		return strconv.Itoa(l.Quota) + "/" + strconv.FormatInt(s/60, 10) + "m"
	}
	return strconv.Itoa(l.Quota) + "/" + strconv.FormatInt(s, 10) + "s"
}

// The header fields of draft-ietf-httpapi-ratelimit-headers-11 (May 2026): RateLimit-Policy
// lists quota policies as structured-field items `"name";q=QUOTA;w=WINDOW-SECONDS`, and
// RateLimit the service limit of each, `"name";r=AVAILABLE;t=SECONDS`. Retry-After (RFC 9110)
// goes with every refusal.
const (
	PolicyHeader     = "RateLimit-Policy"
	LimitHeader      = "RateLimit"
	RetryAfterHeader = "Retry-After"
)

// PolicyItem is the RateLimit-Policy item of lim under name (a policy name is a structured-field
// string: the caller keeps it to letters, digits and '-').
func PolicyItem(name string, lim Limit) string {
	return `"` + name + `";q=` + strconv.Itoa(lim.Quota) + ";w=" + strconv.FormatInt(int64(lim.Window/time.Second), 10)
}

// AppendLimitItem appends the RateLimit item of d under name: r is the available quota, t the
// seconds within which it applies. Refused, r is 0 until one request fits again, so t is then
// the Retry-After (the draft wants Retry-After no earlier than the end of t); allowed, t is the
// time until the bucket is full again. It allocates nothing beyond dst's growth.
func AppendLimitItem(dst []byte, name string, d Decision) []byte {
	t := d.Reset
	if !d.Allowed {
		t = d.RetryAfter
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	dst = append(dst, `";r=`...)
	dst = strconv.AppendInt(dst, int64(d.Remaining), 10)
	dst = append(dst, ";t="...)
	return strconv.AppendInt(dst, ceilSeconds(t), 10)
}

// RetryAfterSeconds is the Retry-After of a refusal: whole seconds, rounded up, at least 1 (a
// client told 0 would retry at once, into the same refusal).
func (d Decision) RetryAfterSeconds() int64 { return max(ceilSeconds(d.RetryAfter), 1) }

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
