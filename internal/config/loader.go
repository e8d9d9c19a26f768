// Package config is the one configuration loader of splathost: every binary reads its settings
// from SPLATHOST_* environment variables, with defaults that match `make dev`.
package config

import (
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

type loader struct{ errs []string }

// List splits a comma-separated setting (a cluster's node addresses, fallback endpoints, role
// names), dropping blanks around and between the entries; nil when there is none.
func List(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func (l *loader) sessionKeys(key string) []SessionKey {
	v, ok := os.LookupEnv(key)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	keys, err := ParseSessionKeys(v)
	if err != nil {
		l.errs = append(l.errs, key+": "+err.Error())
		return nil
	}
	return keys
}

// hexKey reads a key of n bytes written as 2n hex characters; the error never echoes it.
func (l *loader) hexKey(key string, n int) []byte {
	v, ok := os.LookupEnv(key)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	b, err := hex.DecodeString(strings.TrimSpace(v))
	if err != nil || len(b) != n {
		l.errs = append(l.errs, fmt.Sprintf("%s must be %d hex characters", key, 2*n))
		return nil
	}
	return b
}

func (l *loader) str(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// setting reads key with conv: unset or empty keeps def; a value conv refuses (false) keeps def
// and records that key must be want. Every typed reader below is one conv.
func setting[T any](l *loader, key string, def T, want string, conv func(string) (T, bool)) T {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	x, ok := conv(v)
	if !ok {
		l.errs = append(l.errs, key+" must be "+want)
		return def
	}
	return x
}

func (l *loader) int(key string, def int) int {
	return setting(l, key, def, "a positive integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n > 0
	})
}

// nonNegativeInt is int for settings where 0 is meaningful (off, none).
func (l *loader) nonNegativeInt(key string, def int) int {
	return setting(l, key, def, "a non-negative integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0
	})
}

func (l *loader) bool(key string, def bool) bool {
	return setting(l, key, def, "true or false", func(v string) (bool, bool) {
		b, err := strconv.ParseBool(v)
		return b, err == nil
	})
}

func (l *loader) dur(key string, def time.Duration) time.Duration {
	return setting(l, key, def, "a positive duration such as 10s", func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		return d, err == nil && d > 0
	})
}
