package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// Headers of a delivery (Standard Webhooks 1.0).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign is the webhook-signature value of a body: "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>"
// for each secret, space-separated (two during a rotation's overlap, current first).
func Sign(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	parts := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := SecretKey(s)
		if err != nil {
			return "", err
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(strconv.FormatInt(timestamp, 10)))
		m.Write([]byte{'.'})
		m.Write(body)
		parts = append(parts, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(parts, " "), nil
}
