package events

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SecretPrefix starts every webhook signing secret (Standard Webhooks: whsec_ + base64).
const SecretPrefix = "whsec_"

// secretBytes is the signing key's length: 256 bits, as HMAC-SHA256 wants.
const secretBytes = 32

// NewSecret returns a fresh signing secret, whsec_ and the base64 of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// SecretKey is the HMAC key of a secret: the base64-decoded part after whsec_.
func SecretKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("webhook secret: missing whsec_ prefix")
	}
	k, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(k) == 0 {
		return nil, errors.New("webhook secret: not base64")
	}
	return k, nil
}

// Sealer seals webhook secrets at rest with AES-256-GCM under the deployment's webhook key
// (config.Config.WebhookSealKey). Signing needs the secret itself, so it cannot be stored as a
// hash like the integration keys; sealed, a copy of the database alone signs nothing.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("webhook key: want 32 bytes, have %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts secret, bound to the endpoint id (so a sealed secret copied onto another
// endpoint's row does not open): a random nonce followed by the ciphertext.
func (s *Sealer) Seal(endpointID, secret string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(secret), []byte(endpointID)), nil
}

// Open decrypts what Seal made for the same endpoint. The error never contains the secret.
func (s *Sealer) Open(endpointID string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("webhook secret: sealed value too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(endpointID))
	if err != nil {
		return "", errors.New("webhook secret: cannot open (wrong SPLATHOST_WEBHOOK_KEY?)")
	}
	return string(plain), nil
}
