package stack

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Secrets are generated once per data directory and reused, so data written under one set of
// credentials (S3 objects, issued keys signed with the internal secret) stays usable.
type Secrets struct {
	// AdminToken authorizes the operator API.
	AdminToken string `json:"adminToken"`
	// InternalSecret signs the caller identity the gateway forwards to the services.
	InternalSecret string `json:"internalSecret"`
	// SessionKeys signs embed session tokens (SPLATHOST_SESSION_KEYS: "kid:secret").
	SessionKeys string `json:"sessionKeys"`
	// WebhookKey seals webhook signing secrets (SPLATHOST_WEBHOOK_KEY, 64 hex characters).
	WebhookKey string `json:"webhookKey"`
	// S3AccessKey and S3SecretKey are versitygw's root credentials.
	S3AccessKey string `json:"s3AccessKey"`
	S3SecretKey string `json:"s3SecretKey"`
}

// loadSecrets reads DIR/secrets.json, creating it with fresh random values on first run.
func loadSecrets(path string) (Secrets, error) {
	var s Secrets
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s); err != nil {
			return Secrets{}, fmt.Errorf("secrets: parse %s: %w (delete it to generate new ones)", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return Secrets{}, fmt.Errorf("secrets: %w", err)
	}
	changed := false
	fill := func(field *string, gen func() (string, error)) error {
		if *field != "" {
			return nil
		}
		v, err := gen()
		if err != nil {
			return err
		}
		*field, changed = v, true
		return nil
	}
	// The access key is upper-case hex like an AWS key id; the rest are long random hex strings.
	if err := errors.Join(
		fill(&s.AdminToken, func() (string, error) { return randomHex(32) }),
		fill(&s.InternalSecret, func() (string, error) { return randomHex(32) }),
		fill(&s.SessionKeys, func() (string, error) {
			h, err := randomHex(32)
			return "dev1:" + h, err
		}),
		fill(&s.WebhookKey, func() (string, error) { return randomHex(32) }),
		fill(&s.S3AccessKey, func() (string, error) {
			h, err := randomHex(10)
			return "SPLAT" + strings.ToUpper(h), err
		}),
		fill(&s.S3SecretKey, func() (string, error) { return randomHex(20) }),
	); err != nil {
		return Secrets{}, fmt.Errorf("secrets: %w", err)
	}
	if changed {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return Secrets{}, err
		}
		if err := writeFileAtomic(path, append(b, '\n'), 0o600); err != nil {
			return Secrets{}, fmt.Errorf("secrets: %w", err)
		}
	}
	return s, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeFileAtomic writes through a temporary file and a rename, so a reader never sees a
// half-written file (the test harness polls for the state file).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
