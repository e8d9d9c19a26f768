// Package config is the one configuration loader of splathost: every binary reads its settings
// from SPLATHOST_* environment variables, with defaults that match `make dev`.
package config

import (
	"fmt"
	"strings"
)

// SessionKey is one HS256 key of embed session tokens. ID travels in the token's kid header.
type SessionKey struct {
	ID     string
	Secret []byte
}

// minSessionSecret is the least length of a session key: HS256 wants at least 256 bits.
const minSessionSecret = 32

// validKeyID keeps a kid short and printable; it is echoed in no message, but it is a header
// any client can read.
func validKeyID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// ParseSessionKeys reads "kid:secret,kid:secret" (the first key signs). The error never
// contains a secret.
func ParseSessionKeys(v string) ([]SessionKey, error) {
	var keys []SessionKey
	seen := map[string]bool{}
	for i, part := range strings.Split(v, ",") {
		id, secret, ok := strings.Cut(strings.TrimSpace(part), ":")
		switch {
		case !ok || !validKeyID(id):
			return nil, fmt.Errorf("key %d: want kid:secret with a kid of 1-32 letters, digits, '-', '_' or '.'", i+1)
		case len(secret) < minSessionSecret:
			return nil, fmt.Errorf("key %q: the secret must be at least %d characters", id, minSessionSecret)
		case seen[id]:
			return nil, fmt.Errorf("key %q: kid used twice", id)
		}
		seen[id] = true
		keys = append(keys, SessionKey{ID: id, Secret: []byte(secret)})
	}
	return keys, nil
}

// FormatSessionKeys is the SPLATHOST_SESSION_KEYS value of keys, for tools that hand the
// configuration on to a child process.
func FormatSessionKeys(keys []SessionKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.ID + ":" + string(k.Secret)
	}
	return strings.Join(parts, ",")
}
