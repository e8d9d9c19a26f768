package splathost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// Idempotency-Key (IETF httpapi idempotency-key): the service remembers, for 24 hours, the
// answer to a request sent with a key, per integration, customer, method and path. A retry with
// the same key and body gets that answer again instead of acting twice.
const (
	headerIdempotencyKey = "Idempotency-Key"
	// CodeIdempotencyKeyReused is the 422 of a key sent again with another body.
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// CodeIdempotencyKeyInUse is the 409 of a key whose first request still runs. The client
	// waits and retries it like a 5xx.
	CodeIdempotencyKeyInUse = "IDEMPOTENCY_KEY_IN_USE"
)

type idempotencyKeyCtx struct{}

// WithIdempotencyKey returns a context whose calls send key as their Idempotency-Key. The
// calls that create or change things (CommitSplat, the Request*Upload calls, StartClone,
// PutCustomer, DeleteCustomer) send a key anyway: a random one per call, kept across that
// call's retries, which makes them safe to retry. Choose the key yourself to make one
// operation safe across calls too, for example when your process may restart between the
// attempt and its retry: store the key with the operation and send it again. A key must be
// 1-255 visible ASCII characters; within 24 hours, reusing it on the same route for the same
// customer with another body is an *APIError with Code [CodeIdempotencyKeyReused].
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyCtx{}, key)
}

// idempotencyKey is the context's key, else a new random one (128 bits, hex).
func idempotencyKey(ctx context.Context) string {
	if k, ok := ctx.Value(idempotencyKeyCtx{}).(string); ok && k != "" {
		return k
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
