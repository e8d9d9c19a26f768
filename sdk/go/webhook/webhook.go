// Package webhook verifies and decodes splathost's webhook deliveries (Standard Webhooks 1.0):
// a POST whose body is {type, timestamp, sequence, data}, with the headers webhook-id, webhook-timestamp
// and webhook-signature ("v1,<base64 HMAC-SHA256>", several space-separated during a secret
// rotation). Verify the raw body before decoding it, and deduplicate by webhook-id: a delivery
// may arrive more than once, and after a receiver outage the events of one scene may arrive in
// any order: order them by Sequence (see Latest).
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Tolerance is how far a delivery's timestamp may be from the receiver's clock: older
// deliveries are refused, so a captured one cannot be replayed later.
const Tolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrMissingHeaders   = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrInvalidTimestamp = errors.New("webhook: timestamp outside the tolerance")
	ErrInvalidSignature = errors.New("webhook: no valid signature")
	ErrInvalidSecret    = errors.New("webhook: the secret is not whsec_ followed by base64")
)

// Verify checks a delivery against the endpoint's secret (whsec_…, as the API gave it): the
// timestamp within Tolerance of now, and one of the signatures (compared in constant time)
// equal to HMAC-SHA256(key, id + "." + timestamp + "." + body). headers may be an http.Header
// (any case) or a map of lower-case names.
func Verify(secret string, headers http.Header, body []byte) error {
	return verifyAt(secret, headers, body, time.Now())
}

func verifyAt(secret string, headers http.Header, body []byte, now time.Time) error {
	enc, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return ErrInvalidSecret
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) == 0 {
		return ErrInvalidSecret
	}
	id, ts, sigs := header(headers, HeaderID), header(headers, HeaderTimestamp), header(headers, HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrInvalidTimestamp
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return ErrInvalidTimestamp
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, sig, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrInvalidSignature
}

// header reads a header by its canonical or lower-case name.
func header(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Event types.
const (
	SplatCreated        = "splat.created"
	SplatUpdated        = "splat.updated"
	SplatPublished      = "splat.published"
	SplatReady          = "splat.ready"
	SplatDeleted        = "splat.deleted"
	CloneSucceeded      = "clone.succeeded"
	CloneFailed         = "clone.failed"
	ExternalUserDeleted = "externalUser.deleted"
	RetentionArchived   = "retention.archived"
	RetentionRestored   = "retention.restored"
	RetentionPurged     = "retention.purged"
)

// Types lists every event type, in the order the API documents them; an endpoint registered
// without a filter receives them all. The service reads its list of types from here too.
var Types = []string{SplatCreated, SplatUpdated, SplatPublished, SplatReady, SplatDeleted, CloneSucceeded,
	CloneFailed, ExternalUserDeleted, RetentionArchived, RetentionRestored, RetentionPurged}

// Event is a delivery's body. Data is left raw: decode it with the method of its Type.
// Sequence orders the events of one resource (Resource): a later change of it carries a higher
// number. The numbers are not contiguous (one counter serves every resource) and mean nothing
// across resources; 0 means none was sent (an event recorded before sequences existed).
type Event struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Sequence  int64           `json:"sequence"`
	Data      json.RawMessage `json:"data"`
}

// Parse verifies a delivery and decodes its body.
func Parse(secret string, headers http.Header, body []byte) (*Event, error) {
	if err := Verify(secret, headers, body); err != nil {
		return nil, err
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// SplatData is the data of splat.created, splat.updated, splat.published and splat.ready: the
// scene as the list item (kept raw; it is the API's splat item, processing included). These
// data types are the one definition of the payloads: the service writes them too.
type SplatData struct {
	Splat json.RawMessage `json:"splat"`
}

// SceneRef is the data of splat.deleted and the retention events.
type SceneRef struct {
	SplatID        string `json:"splatId"`
	ExternalUserID string `json:"externalUserId"`
}

// CloneSucceededData is the data of clone.succeeded.
type CloneSucceededData struct {
	JobID         string `json:"jobId"`
	SplatID       string `json:"splatId"`
	SourceSplatID string `json:"sourceSplatId"`
}

// CloneFailedData is the data of clone.failed.
type CloneFailedData struct {
	JobID         string `json:"jobId"`
	SourceSplatID string `json:"sourceSplatId"`
	Message       string `json:"message"`
}

// ExternalUserData is the data of externalUser.deleted.
type ExternalUserData struct {
	ExternalUserID string `json:"externalUserId"`
}

// Splat decodes the data of a splat.* item event.
func (e *Event) Splat() (SplatData, error) { return decode[SplatData](e) }

// Scene decodes the data of splat.deleted and retention.* events.
func (e *Event) Scene() (SceneRef, error) { return decode[SceneRef](e) }

// CloneSucceeded decodes the data of clone.succeeded.
func (e *Event) CloneSucceeded() (CloneSucceededData, error) { return decode[CloneSucceededData](e) }

// CloneFailed decodes the data of clone.failed.
func (e *Event) CloneFailed() (CloneFailedData, error) { return decode[CloneFailedData](e) }

// ExternalUser decodes the data of externalUser.deleted.
func (e *Event) ExternalUser() (ExternalUserData, error) { return decode[ExternalUserData](e) }

func decode[T any](e *Event) (T, error) {
	var v T
	err := decodeInto(e, &v)
	return v, err
}

func decodeInto(e *Event, v any) error { return json.Unmarshal(e.Data, v) }
