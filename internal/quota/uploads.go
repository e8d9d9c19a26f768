package quota

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
)

// Bounds of what open upload tickets may hold. Storage is charged at commit (the spec's 413),
// so an upload ticket only reserves room that a commit may later charge; without a bound, a
// customer could park any number of signed uploads, unbilled, for their whole window. An open
// ticket is one not committed, not aborted and not past its expiresAt.
const (
	// MaxOpenUploads bounds a customer's open tickets, whoever asked for them.
	MaxOpenUploads = 20
	// MaxOpenUploadsPerSession bounds the open tickets one embed (editor) session asked for: a
	// browser page uploads one scene at a time, with its images (thumbnail, depth) and a few
	// audio files, which its save attaches together.
	MaxOpenUploadsPerSession = 8
	// CodeTooManyOpenUploads is the code of the 429 past either bound.
	CodeTooManyOpenUploads = "TOO_MANY_OPEN_UPLOADS"
)

// OpenTicket is what the bound reads of one open ticket.
type OpenTicket struct {
	Bytes   int64
	Expires time.Time
	// Session is the embed session that asked for it ("" for the integration's keys).
	Session string
}

// OpenUploads is what a customer's open tickets hold, and the requesting session's share.
type OpenUploads struct {
	Count int
	Bytes int64
	// NextExpiry is when the first open ticket expires (zero when there is none).
	NextExpiry time.Time
	// SessionCount and SessionNextExpiry are the same for the requesting session's tickets.
	SessionCount      int
	SessionNextExpiry time.Time
}

// OpenUploadsOf folds tickets (open at now) into the figures the bound checks; session names
// the requesting embed session, "" for a key caller.
func OpenUploadsOf(tickets []OpenTicket, session string, now time.Time) OpenUploads {
	var o OpenUploads
	for _, t := range tickets {
		if !t.Expires.After(now) {
			continue
		}
		o.Count++
		o.Bytes += t.Bytes
		o.NextExpiry = earlier(o.NextExpiry, t.Expires)
		if session != "" && t.Session == session {
			o.SessionCount++
			o.SessionNextExpiry = earlier(o.SessionNextExpiry, t.Expires)
		}
	}
	return o
}

// earlier is the earlier of a (zero: none yet) and b.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// OpenUploadRoom is how many bytes a customer's open tickets may declare together: their
// remaining storage plus one largest file (maxFile). The extra file keeps the commit's 413
// reachable, as the spec answers it: a customer may always ask for one upload larger than what
// is left, and learns at commit that it does not fit.
func OpenUploadRoom(customer Meter, maxFile int64) int64 {
	return max(0, customer.LimitBytes-customer.UsedBytes) + maxFile
}

// UploadAsk is a new ticket as the bound sees it: its declared bytes, and whether an embed
// session asks for it.
type UploadAsk struct {
	Bytes   int64
	Session bool
	// MaxFile is the largest file any one upload may declare (OpenUploadRoom).
	MaxFile int64
}

// AdmitUpload is the rule of a new upload ticket: nil when it fits, else the 429
// TOO_MANY_OPEN_UPLOADS envelope, whose Retry-After is when the first ticket in the way
// expires. The session bound is checked first (it is the smaller and names the session as what
// to wait for), then the customer's count, then the customer's bytes.
func AdmitUpload(customer Meter, open OpenUploads, ask UploadAsk, now time.Time) *apperr.Error {
	room := OpenUploadRoom(customer, ask.MaxFile)
	switch {
	case ask.Session && open.SessionCount >= MaxOpenUploadsPerSession:
		return tooManyOpen("session", fmt.Sprintf("this session has %d open uploads, the most one session may hold",
			open.SessionCount), open, room, ask, open.SessionNextExpiry, now)
	case open.Count >= MaxOpenUploads:
		return tooManyOpen("customer", fmt.Sprintf("this customer has %d open uploads, the most a customer may hold",
			open.Count), open, room, ask, open.NextExpiry, now)
	case open.Bytes+ask.Bytes > room:
		return tooManyOpen("customer", fmt.Sprintf("this customer's open uploads declare %d bytes; %d more would pass the "+
			"%d bytes they may hold (remaining storage plus one largest file)", open.Bytes, ask.Bytes, room),
			open, room, ask, open.NextExpiry, now)
	}
	return nil
}

// tooManyOpen is the 429 envelope: what is open against the bounds, and how to free room.
func tooManyOpen(scope, why string, open OpenUploads, room int64, ask UploadAsk, next, now time.Time) *apperr.Error {
	e := apperr.New(http.StatusTooManyRequests, why+". Free room by committing an upload "+
		"(create its scene), aborting a multipart upload (DELETE its uploadId), or waiting until an open upload "+
		"expires (Retry-After).")
	e.RetryAfter = retryAfter(next, now)
	limit := MaxOpenUploads
	count := open.Count
	if scope == "session" {
		limit, count = MaxOpenUploadsPerSession, open.SessionCount
	}
	return e.With("code", CodeTooManyOpenUploads).With("scope", scope).With("openUploads", count).
		With("maxOpenUploads", limit).With("openUploadBytes", open.Bytes).With("maxOpenUploadBytes", room).
		With("requestedBytes", ask.Bytes)
}

// retryAfter is whole seconds from now until next, rounded up, at least 1.
func retryAfter(next, now time.Time) int {
	if !next.After(now) {
		return 1
	}
	return int(math.Ceil(next.Sub(now).Seconds()))
}

// LoadOpenUploads reads ownerID's open tickets at now through tickets (a client or a
// transaction's: under the customer's row lock, the figures cannot change before the caller's
// insert commits).
func LoadOpenUploads(ctx context.Context, tickets *ent.UploadTicketClient, ownerID, session string, now time.Time) (OpenUploads, error) {
	rows, err := tickets.Query().Where(uploadticket.OwnerID(ownerID), uploadticket.CommittedAtIsNil(),
		uploadticket.ExpiresAtGT(now)).
		Select(uploadticket.FieldTotalBytes, uploadticket.FieldExpiresAt, uploadticket.FieldSessionID).All(ctx)
	if err != nil {
		return OpenUploads{}, err
	}
	open := make([]OpenTicket, len(rows))
	for i, r := range rows {
		open[i] = OpenTicket{Bytes: r.TotalBytes, Expires: r.ExpiresAt}
		if r.SessionID != nil {
			open[i].Session = *r.SessionID
		}
	}
	return OpenUploadsOf(open, session, now), nil
}
