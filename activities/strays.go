package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/workflows/contract"
)

// DeleteStrayObjects is the bucket sweep: every object of the scene key space must belong to a
// scene (any state but deleted: an archived scene can be restored) or to an open upload ticket;
// anything else is stored outside every cap and goes. Upload URLs stay valid for their window
// after a commit and after a delete, so a PUT can recreate an upload object nothing reads (the
// scene reads its sealed copy, objectkeys.Sealed); interrupted work leaves others. The rules, by
// the folder kind of the key:
//
//   - an upload folder (file, LOD folder, images, audio): its ticket (found by the folder, the
//     ticket's prefix) exists and is not committed (a committed ticket's scene reads the
//     sealed copy);
//   - a sealed folder (sealed-<upload kind>): its scene exists, or its ticket is uncommitted
//     and the copy younger than objectkeys.SealedAttemptAge (a commit in flight; an older one
//     is what a failed commit could not remove);
//   - clone: its scene (the folder's id, the new scene's) or its clone job exists;
//   - rendition: its scene exists;
//   - anything else under i/: nothing writes it, so it goes.
//
// The database is read after each listing page, so a ticket, job or scene created while the
// page was read counts; MinAge keeps young objects out of reach anyway, except under a
// committed ticket's folder whose scene is gone: its upload is over, so a young object there is
// a PUT to an upload URL after the scene's delete, and waiting would let it outlive the run. A live scene's upload
// object whose sealed copy is missing (a scene committed before commits sealed) is sealed before
// it goes. Heartbeats carry the position, so a retried call resumes.
func (a *Activities) DeleteStrayObjects(ctx context.Context, in contract.DeleteStrayObjectsInput) (contract.DeleteStrayObjectsResult, error) {
	if in.Pages <= 0 || in.MinAge < 0 {
		return contract.DeleteStrayObjectsResult{}, badInput("DeleteStrayObjects: pages must be positive and min age not negative")
	}
	out := contract.DeleteStrayObjectsResult{Next: in.After}
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &out) // a bad value restarts from in.After
	}
	cutoff := time.Now().Add(-in.MinAge)
	attemptCutoff := time.Now().Add(-objectkeys.SealedAttemptAge)
	pages := 0
	done := true // the listing reached the end of the bucket, unless a page bound stops it
	err := a.bucket().ListFolderAfter(ctx, "i/", out.Next, func(list []s3types.Object) error {
		if pages == in.Pages {
			done = false
			return objectstore.ErrStopListing
		}
		pages++
		keys := make([]string, len(list))
		young, attempt := map[string]bool{}, map[string]bool{}
		for i, o := range list {
			keys[i] = aws.ToString(o.Key)
			if o.LastModified != nil && !o.LastModified.Before(cutoff) {
				young[keys[i]] = true
			}
			if o.LastModified != nil && !o.LastModified.Before(attemptCutoff) {
				attempt[keys[i]] = true
			}
		}
		strays, unsealed, err := a.strays(ctx, keys, young, attempt)
		if err != nil {
			return err
		}
		if err := a.sealMissing(ctx, unsealed); err != nil {
			return err
		}
		if err := a.bucket().DeleteKeys(ctx, strays, nil); err != nil {
			return err
		}
		out.Listed += len(list)
		out.Deleted += len(strays)
		out.Next = aws.ToString(list[len(list)-1].Key)
		activity.RecordHeartbeat(ctx, out)
		return nil
	})
	if err != nil {
		return out, err
	}
	if done {
		out.Next = ""
	}
	return out, nil
}

// strays returns the keys among keys that belong to no scene and no open upload ticket, with
// three queries for the whole page; unsealed are those of them that are a live scene's committed
// uploads, whose sealed copy may be missing (a scene committed before commits sealed). A young
// key (written within the age guard) is only a stray when it lies under the folder of a
// committed ticket whose scene is gone: such a ticket has no upload in flight, so what is there
// was written by a PUT after the scene's delete and goes at once. (Under a live scene's ticket
// a young object waits for the guard: it may be the one whose sealed copy is missing.) A sealed
// copy under an uncommitted ticket is kept while attempt holds it (younger than
// objectkeys.SealedAttemptAge: its commit may be running), whatever the age guard.
func (a *Activities) strays(ctx context.Context, keys []string, young, attempt map[string]bool) (out, unsealed []string, err error) {
	// One parse per key: its upload folder (the ticket's prefix) or its kind and id.
	type object struct {
		key, upload, kind, id string
		sealed                bool
	}
	objects := make([]object, len(keys))
	var prefixes, scenes, jobs []string
	for i, k := range keys {
		o := object{key: k}
		o.kind, o.id, _ = objectkeys.KindAndID(k)
		if p, ok := objectkeys.UploadPrefix(k); ok {
			o.upload, o.sealed = p, strings.HasPrefix(o.kind, objectkeys.SealedKindPrefix)
			prefixes = append(prefixes, p)
		} else if o.kind == objectkeys.KindClone {
			scenes, jobs = append(scenes, o.id), append(jobs, o.id)
		} else if o.kind == objectkeys.KindRendition {
			scenes = append(scenes, o.id)
		}
		objects[i] = o
	}
	open := map[string]bool{}        // upload prefix -> its ticket is not committed
	committed := map[string]string{} // upload prefix -> the scene its ticket made
	settled := map[string]bool{}     // upload prefix -> its ticket is committed: nothing in flight
	if len(prefixes) > 0 {
		rows, err := a.Ent.UploadTicket.Query().Where(uploadticket.PrefixIn(prefixes...)).
			Select(uploadticket.FieldPrefix, uploadticket.FieldCommittedAt, uploadticket.FieldSceneID).All(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range rows {
			settled[t.Prefix] = t.CommittedAt != nil
			if t.CommittedAt == nil {
				open[t.Prefix] = true
			} else if t.SceneID != nil {
				committed[t.Prefix] = *t.SceneID
				scenes = append(scenes, *t.SceneID)
			}
		}
	}
	live, err := existing(scenes, func(ids []string) ([]string, error) { return a.Ent.Scene.Query().Where(scene.IDIn(ids...)).IDs(ctx) })
	if err != nil {
		return nil, nil, err
	}
	running, err := existing(jobs, func(ids []string) ([]string, error) {
		return a.Ent.CloneJob.Query().Where(clonejob.IDIn(ids...)).IDs(ctx)
	})
	if err != nil {
		return nil, nil, err
	}
	for _, o := range objects {
		var keep bool
		switch {
		case o.upload != "":
			// An upload object is needed until its ticket is committed; its sealed copy
			// while the commit runs and then as long as the scene exists.
			keep = open[o.upload] && (!o.sealed || attempt[o.key]) || o.sealed && live[committed[o.upload]]
			if !o.sealed && live[committed[o.upload]] {
				if young[o.key] {
					// Its sealed copy may be missing, and these young bytes are not what the
					// commit checked: sealing them is for an old object, so it waits.
					keep = true
				} else {
					unsealed = append(unsealed, o.key)
				}
			}
		case o.kind == objectkeys.KindClone:
			keep = live[o.id] || running[o.id]
		case o.kind == objectkeys.KindRendition:
			keep = live[o.id]
		}
		if !keep && (!young[o.key] || settled[o.upload]) {
			out = append(out, o.key)
		}
	}
	return out, unsealed, nil
}

// sealMissing copies each of keys (committed uploads of live scenes) to its sealed key where no
// sealed copy exists: a scene committed before commits sealed (objectkeys.Sealed) keeps its
// bytes. An existing sealed copy is never overwritten: it holds what the commit checked, and
// the upload object may be what a later PUT wrote.
func (a *Activities) sealMissing(ctx context.Context, keys []string) error {
	for _, k := range keys {
		sealed := objectkeys.Sealed(k)
		_, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(sealed)})
		var nf *s3types.NotFound
		if err == nil {
			continue
		}
		if !errors.As(err, &nf) {
			return fmt.Errorf("checking %s: %w", sealed, err)
		}
		if err := objectstore.Copy(ctx, a.Objects, a.Bucket, k, sealed); err != nil {
			return err
		}
		a.Log.Info("bucket sweep: sealed a scene's upload committed before commits sealed", "key", k)
	}
	return nil
}

// existing returns which of ids query finds, as a set; no ids, no query.
func existing(ids []string, query func([]string) ([]string, error)) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	found, err := query(ids)
	for _, id := range found {
		out[id] = true
	}
	return out, err
}
