package scenes

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/uploadrules"
)

// Ticket is an upload ticket to record: owner's objects under prefix, valid until Expires. A
// resumable (multipart) one also names the store's upload and its part size.
type Ticket struct {
	Owner   *ent.ExternalUser
	Kind    uploadticket.Kind
	Prefix  string
	Objects []schema.UploadObject
	Expires time.Time
	// MultipartUploadID and PartSize are set for a multipart upload only.
	MultipartUploadID string
	PartSize          int64
	// Session is the embed session asking for the ticket ("" for the integration's keys).
	Session string
}

// CreateTicket records t and, in the same transaction, the 200 answer that hands out its URLs:
// answer renders it from the saved ticket (idempotency.Record keeps it for a keyed request), and
// an error of answer rolls the ticket back. The ticket must fit the bound on open uploads
// (quota.AdmitUpload, 429 past it), checked under the customer's row lock, the lock every
// writer of the customer's counters takes first: concurrent requests of one customer admit one
// after another, so no race passes the bound.
func (s *Store) CreateTicket(ctx context.Context, t Ticket, answer func(*ent.UploadTicket) (any, error)) (*idempotency.Recorded, error) {
	var total int64
	for _, o := range t.Objects {
		total += o.Size
	}
	var out *idempotency.Recorded
	err := s.DB.InTx(ctx, func(tx *ent.Tx) error {
		u, err := tx.ExternalUser.Query().Where(externaluser.ID(t.Owner.ID)).ForUpdate().Only(ctx)
		if err != nil {
			return err
		}
		if err := s.admit(ctx, tx.UploadTicket, u, t.Session, total); err != nil {
			return err
		}
		create := tx.UploadTicket.Create().SetIntegrationID(t.Owner.IntegrationID).SetOwnerID(t.Owner.ID).
			SetKind(t.Kind).SetPrefix(t.Prefix).SetObjects(t.Objects).SetTotalBytes(total).SetExpiresAt(t.Expires)
		if t.MultipartUploadID != "" {
			create.SetMultipartUploadID(t.MultipartUploadID).SetPartSize(t.PartSize)
		}
		if t.Session != "" {
			create.SetSessionID(t.Session)
		}
		saved, err := create.Save(ctx)
		if err != nil {
			return err
		}
		v, err := answer(saved)
		if err != nil {
			return err
		}
		out, err = idempotency.Record(ctx, tx, http.StatusOK, v)
		return err
	})
	return out, err
}

// admit applies the bound on open uploads (quota.AdmitUpload) to a new ticket of u declaring
// bytes, asked for by session ("" for keys), reading u's open tickets through tickets.
func (s *Store) admit(ctx context.Context, tickets *ent.UploadTicketClient, u *ent.ExternalUser, session string, bytes int64) error {
	now := s.Now()
	open, err := quota.LoadOpenUploads(ctx, tickets, u.ID, session, now)
	if err != nil {
		return err
	}
	ask := quota.UploadAsk{Bytes: bytes, Session: session != "", MaxFile: uploadrules.MaxFileBytes}
	if e := quota.AdmitUpload(quota.CustomerMeter(u), open, ask, now); e != nil {
		return e
	}
	return nil
}

// PrecheckTicket is the bound on open uploads without the lock, for a request that must do
// costly work before its ticket exists (a multipart start creates the store's upload first):
// a customer at the bound is refused before that work. CreateTicket checks again under the
// lock, which is what holds the bound.
func (s *Store) PrecheckTicket(ctx context.Context, owner *ent.ExternalUser, session string, bytes int64) error {
	if err := s.admit(ctx, s.DB.Ent.UploadTicket, owner, session, bytes); err != nil {
		return apperr.From(err) // the 429 as it is; a database failure as a 500
	}
	return nil
}

// errUploadNotFound is every answer for an upload id that is not a multipart upload of the
// caller's integration and customer: it never tells whether another tenant's upload exists.
func errUploadNotFound() error { return apperr.NotFound("upload not found") }

// MultipartTicket returns owner's multipart ticket id (the client's uploadId); anything else is
// the same 404.
func (s *Store) MultipartTicket(ctx context.Context, owner *ent.ExternalUser, id string) (*ent.UploadTicket, error) {
	if id == "" || len(id) > 24 {
		return nil, errUploadNotFound()
	}
	t, err := s.DB.Ent.UploadTicket.Query().Where(uploadticket.ID(id), uploadticket.IntegrationID(owner.IntegrationID),
		uploadticket.OwnerID(owner.ID), uploadticket.MultipartUploadIDNotNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, errUploadNotFound()
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if len(t.Objects) != 1 || t.PartSize <= 0 {
		return nil, apperr.Internal(fmt.Errorf("multipart ticket %s is malformed", t.ID))
	}
	return t, nil
}

// OpenForParts is the rule of an upload that may still take parts (or be completed again): not
// part of a scene (409), and, until completed, within its window at now (400).
func OpenForParts(t *ent.UploadTicket, now time.Time) error {
	if t.CommittedAt != nil {
		return apperr.Conflict("this upload is already part of a scene")
	}
	if t.MultipartCompletedAt == nil && now.After(t.ExpiresAt) {
		return apperr.Invalid("upload expired", "uploadId: the upload window closed at "+
			isoTime(t.ExpiresAt)+"; start a new upload")
	}
	return nil
}

// MarkCompleted records that multipart ticket id's object is whole (the first completion's time
// is kept).
func (s *Store) MarkCompleted(ctx context.Context, id string) error {
	err := s.DB.Ent.UploadTicket.Update().Where(uploadticket.ID(id), uploadticket.MultipartCompletedAtIsNil()).
		SetMultipartCompletedAt(s.Now()).Exec(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	return nil
}

// Abortable is the rule of an abort: an upload already part of a scene is the scene's (409).
func Abortable(t *ent.UploadTicket) error {
	if t.CommittedAt != nil {
		return apperr.Conflict("this upload is already part of a scene; delete the scene instead")
	}
	return nil
}

// AbortMultipart deletes multipart ticket id after remove (which drops the store's upload and
// any completed object) succeeds, with the ticket row locked throughout: a commit racing the
// abort either wins before it (Abortable answers 409) or finds the upload gone.
func (s *Store) AbortMultipart(ctx context.Context, id string, remove func(*ent.UploadTicket) error) error {
	return s.DB.InTx(ctx, func(tx *ent.Tx) error {
		locked, err := tx.UploadTicket.Query().Where(uploadticket.ID(id)).ForUpdate().Only(ctx)
		if ent.IsNotFound(err) {
			return errUploadNotFound()
		}
		if err != nil {
			return err
		}
		if err := Abortable(locked); err != nil {
			return err
		}
		if err := remove(locked); err != nil {
			return err
		}
		return tx.UploadTicket.DeleteOneID(id).Exec(ctx)
	})
}

// AlreadyCommitted is the 409 of a commit naming an upload (ticketID, in the request's field)
// that is no longer free. When the upload became a live scene of this very customer (a retry
// whose first answer was lost), the answer names that scene's splatId so the client can carry
// on; otherwise it says nothing about where the upload went.
func (s *Store) AlreadyCommitted(ctx context.Context, field, ticketID string, owner *ent.ExternalUser) error {
	conflict := apperr.Conflict(field + ": this upload is already part of a scene")
	t, err := s.DB.Ent.UploadTicket.Get(ctx, ticketID)
	if ent.IsNotFound(err) {
		return apperr.Conflict(field + ": this upload was removed after a refused commit; upload again")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if t.SceneID == nil || t.OwnerID != owner.ID || t.IntegrationID != owner.IntegrationID {
		return conflict
	}
	mine, err := s.DB.Ent.Scene.Query().Where(append(live(owner.IntegrationID, *t.SceneID), scene.OwnerID(owner.ID))...).Exist(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	if !mine {
		return conflict
	}
	return conflict.With("splatId", *t.SceneID)
}

// TicketAt returns the upload ticket whose folder is prefix, or nil when there is none.
func (s *Store) TicketAt(ctx context.Context, prefix string) (*ent.UploadTicket, error) {
	t, err := s.DB.Ent.UploadTicket.Query().Where(uploadticket.Prefix(prefix)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return t, nil
}
