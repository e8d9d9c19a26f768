package idempotency

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/splathost/splathost/internal/apperr"
)

// The outcome of a keyed request is recorded with its effect. The gateway holds the key (a
// claim with a lease it renews while the request runs) and passes the claim to the service as
// the request's fence (httpx.Caller.Fence, signed with the caller). The service's transaction
// records the answer under the fence before it commits (Record): the effect and its answer
// commit together, or neither does. So a retry after any process died reads the first answer,
// and a transaction whose claim was released or taken over meanwhile cannot commit at all
// (the fence no longer matches), which is what lets the gateway turn a lost answer into a final
// one (Store.Settle).

// Fence is the fence string of an owned claim: the scope digest, the lease and when the key
// was first claimed. The gateway hands it to the service with the caller.
func (c Claim) Fence() string {
	return hex.EncodeToString(c.scope) + "." + c.lease + "." + strconv.FormatInt(c.created.UnixNano(), 10)
}

// fence is a parsed fence string.
type fence struct {
	scope   []byte
	lease   string
	created int64
}

// parseFence splits a fence string; ok is false for a malformed one.
func parseFence(f string) (fence, bool) {
	parts := strings.Split(f, ".")
	if len(parts) != 3 || parts[1] == "" {
		return fence{}, false
	}
	scope, err := hex.DecodeString(parts[0])
	if err != nil || len(scope) == 0 {
		return fence{}, false
	}
	created, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return fence{}, false
	}
	return fence{scope: scope, lease: parts[1], created: created}, true
}

// StableID is a 24-hex id that every retry of the keyed request in ctx gets alike (derived from
// the key's scope, which no other integration can produce), or false without a key. An effect
// that cannot join a transaction (starting a workflow) names itself with it, so a retry after its
// process died finds the effect instead of making a second one.
func StableID(ctx context.Context) (string, bool) {
	f, ok := parseFence(FenceOf(ctx))
	if !ok {
		return "", false
	}
	// The claim's first time tells this key's request from the same key's after 24 h.
	h := sha256.New()
	h.Write(f.scope)
	h.Write([]byte(strconv.FormatInt(f.created, 10)))
	return hex.EncodeToString(h.Sum(nil)[:12]), true
}

// Execer is the transaction an effect runs in (an *ent.Tx has this method; so has *ent.Client,
// for an effect outside the database whose answer is recorded once it is known).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// errFenceLost is the answer of a request whose key was released or taken over before its
// transaction committed: the transaction rolls back, so the effect belongs to whichever request
// holds the key now.
var errFenceLost = apperr.Conflict("the first request with this "+KeyHeader+" was given up; retry to learn its outcome").With("code", CodeInUse)

// Recorded is an answer rendered inside the transaction of its effect.
type Recorded struct {
	Status int
	Body   []byte
}

// Record renders v as the JSON answer with status and, when ctx carries a fence (a keyed
// request), stores it under the fence in tx, so it commits with the effect. Call it last in the
// transaction and send the outcome with Send. A fence that no longer holds the key fails the
// transaction.
func Record(ctx context.Context, tx Execer, status int, v any) (*Recorded, error) {
	// encoding/json, as Fiber's default c.JSON, so a recorded and a sent answer are one encoding.
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := &Recorded{Status: status, Body: body}
	fence := FenceOf(ctx)
	if fence == "" {
		return out, nil
	}
	f, ok := parseFence(fence)
	if !ok {
		return nil, fmt.Errorf("malformed idempotency fence")
	}
	headers, err := json.Marshal(map[string]string{"Content-Type": "application/json"})
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET status = $3, response_headers = $4::jsonb,
		response_body = $5, locked_until = NULL WHERE scope = $1 AND lease = $2 AND status = 0`,
		f.scope, f.lease, status, string(headers), body)
	if err != nil {
		return nil, fmt.Errorf("record idempotent answer: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, errFenceLost
	}
	return out, nil
}

type fenceKey struct{}

// WithFence returns ctx carrying the request's fence (httpx.Caller.Fence), which transaction
// code reads with FenceOf.
func WithFence(ctx context.Context, fence string) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// FenceOf returns the fence ctx carries, or "" for a request without a key.
func FenceOf(ctx context.Context) string {
	f, _ := ctx.Value(fenceKey{}).(string)
	return f
}
