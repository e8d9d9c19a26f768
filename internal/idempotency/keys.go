// Package idempotency holds the Idempotency-Key protocol (IETF httpapi idempotency-key,
// contract item 13) below HTTP: the key rules, the store of claimed keys and their answers, and
// the fence a service's transaction records its answer under. The gateway's middleware
// (gateway/idempotency.go) applies it to the routes that create or change things, so a retried
// request with the same key and body gets the first answer again instead of acting twice.
package idempotency

// Header names of the protocol.
const (
	// KeyHeader carries the client's key.
	KeyHeader = "Idempotency-Key"
	// ReplayedHeader marks an answer replayed from the first request.
	ReplayedHeader = "Idempotent-Replayed"
)

// Error codes of the protocol's refusals.
const (
	// CodeReused is the 422 of a key seen before with another body.
	CodeReused = "IDEMPOTENCY_KEY_REUSED"
	// CodeInUse is the 409 of a key whose first request still runs.
	CodeInUse = "IDEMPOTENCY_KEY_IN_USE"
)

// MaxKeyLen is the longest key accepted (contract item 13: 1-255 visible ASCII characters).
const MaxKeyLen = 255

// KeyProblem applies the contract's key rule (1-255 visible ASCII characters) and names what
// is wrong, or returns "".
func KeyProblem(key string) string {
	if key == "" {
		return "must not be empty"
	}
	if len(key) > MaxKeyLen {
		return "must be at most 255 characters"
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "must be visible ASCII characters only (no spaces or control characters)"
		}
	}
	return ""
}
