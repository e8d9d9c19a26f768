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

func (l *loader) int(key string, def int) int {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		l.errs = append(l.errs, key+" must be a positive integer")
		return def
	}
	return n
}

// nonNegativeInt is int for settings where 0 is meaningful (off, none).
func (l *loader) nonNegativeInt(key string, def int) int {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		l.errs = append(l.errs, key+" must be a non-negative integer")
		return def
	}
	return n
}

func (l *loader) bool(key string, def bool) bool {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		l.errs = append(l.errs, key+" must be true or false")
		return def
	}
	return b
}

func (l *loader) dur(key string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(key)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.errs = append(l.errs, key+" must be a positive duration such as 10s")
		return def
	}
	return d
}
