package scene

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/uploadrules"
)

// commitPlan is what a commit's uploads come to once resolved and checked against the store:
// the tickets it spends, the bytes it charges, the keys the scene owns, and the objects of a
// spent image ticket the scene does not use (to purge).
type commitPlan struct {
	assets []*asset
	// checks seal and check each upload (verifyObject, verifyFolder); they run inside the
	// commit's transaction, with the tickets locked (scenes.LockUploads).
	checks   []func(context.Context) error
	size     int64
	keys     []string
	lodKey   *string
	lodFiles *int
	unused   []string
}

// planCommit resolves every upload the commit names (splat file or LOD folder, images, the
// editor's audio) for owner; the checks that each is in the store as declared (and its sealing)
// run later, in the commit's transaction (createScene).
func (s *Service) planCommit(ctx context.Context, req *commitRequest, owner *ent.ExternalUser) (*commitPlan, error) {
	p := &commitPlan{}
	switch req.splatType {
	case "file":
		a, err := s.resolve(ctx, "splatUrl", req.splatURL, owner, uploadticket.KindSplatFile)
		if err != nil {
			return nil, err
		}
		o, ok := a.object()
		if !ok {
			// Another key under the caller's own upload prefix (another file of the ticket's
			// folder, say): not the fileUrl this upload issued.
			return nil, apperr.Invalid("invalid upload URL", "splatUrl: must be the fileUrl of a splat-file upload")
		}
		if a.ticket.MultipartUploadID != nil && a.ticket.MultipartCompletedAt == nil {
			return nil, apperr.Invalid("upload incomplete", "splatUrl: this multipart upload is not completed; "+
				"POST /api/v1/uploads/splat-file/"+a.ticket.ID+"/complete first")
		}
		p.checks = append(p.checks, func(ctx context.Context) error { return s.verifyObject(ctx, "splatUrl", a, o) })
		p.assets, p.size, p.keys = append(p.assets, a), p.size+o.Size, append(p.keys, o.Key)
	case "lod":
		a, err := s.resolve(ctx, "splatUrl", req.splatURL, owner, uploadticket.KindLodFolder)
		if err != nil {
			return nil, err
		}
		if a.key != a.ticket.Prefix+uploadrules.LODManifest {
			return nil, apperr.Invalid("validation failed", "splatUrl: must be the manifestUrl of the lod-folder upload")
		}
		if req.lodFolderKey != strings.TrimSuffix(a.ticket.Prefix, "/") {
			return nil, apperr.Invalid("validation failed", "lodFolderKey: must be the folderKey of the same lod-folder upload as splatUrl")
		}
		p.checks = append(p.checks, func(ctx context.Context) error { return s.verifyFolder(ctx, a.ticket) })
		p.lodKey = &req.lodFolderKey
		n := len(a.ticket.Objects)
		p.lodFiles = &n
		p.assets, p.size = append(p.assets, a), p.size+a.ticket.TotalBytes
	}
	var imageTicket *asset
	if req.imageURL != "" && req.imageURL == req.depthURL {
		return nil, apperr.Invalid("validation failed", "thumbnailDepthUrl: must differ from imageUrl")
	}
	for _, img := range []struct{ field, url, role string }{{"imageUrl", req.imageURL, "thumbnail"}, {"thumbnailDepthUrl", req.depthURL, "depth"}} {
		if img.url == "" {
			continue
		}
		a, err := s.resolve(ctx, img.field, img.url, owner, uploadticket.KindSplatImages)
		if err != nil {
			return nil, err
		}
		o, ok := a.object()
		if !ok {
			return nil, apperr.Invalid("invalid upload URL", img.field+": no such upload")
		}
		if !strings.HasPrefix(path.Base(o.Key), img.role+".") {
			return nil, apperr.Invalid("validation failed", fmt.Sprintf("%s: must be the %s fileUrl of a splat-images upload", img.field, img.role))
		}
		field := img.field
		p.checks = append(p.checks, func(ctx context.Context) error { return s.verifyObject(ctx, field, a, o) })
		p.size, p.keys = p.size+o.Size, append(p.keys, o.Key)
		if imageTicket == nil || imageTicket.ticket.ID != a.ticket.ID {
			p.assets = append(p.assets, a)
			imageTicket = a
		}
	}
	// The editor's levelData may name an audio upload: charged with the scene (attach.go).
	audio, err := s.audioAttachment(ctx, owner, req.levelData, nil)
	if err != nil {
		return nil, err
	}
	if audio != nil {
		p.assets, p.size, p.keys = append(p.assets, audio.ticket), p.size+audio.size, append(p.keys, audio.key)
		p.checks = append(p.checks, audio.check)
	}
	if imageTicket != nil {
		for _, o := range imageTicket.ticket.Objects {
			if !slices.Contains(p.keys, o.Key) {
				p.unused = append(p.unused, o.Key)
			}
		}
	}

	return p, nil
}

// asset is one upload a commit references, resolved to its ticket.
type asset struct {
	ticket *ent.UploadTicket
	key    string
}

// resolve turns an asset URL into its key and upload ticket. A URL that is not one of ours is a
// 400; a key under another customer's (or integration's) prefix is the spec's 403.
func (s *Service) resolve(ctx context.Context, field, rawURL string, owner *ent.ExternalUser, kind uploadticket.Kind) (*asset, error) {
	key, ok := strings.CutPrefix(rawURL, s.assetBase+"/")
	if !ok || key == "" {
		return nil, apperr.Invalid("invalid upload URL", field+": not an upload URL issued by this service")
	}
	k, ok := objectkeys.Parse(key)
	if !ok {
		return nil, apperr.Invalid("invalid upload URL", field+": not an upload URL issued by this service")
	}
	if !k.BelongsTo(owner.IntegrationID, owner.ID) {
		return nil, apperr.Forbidden("uploaded object belongs to another external user")
	}
	prefix := k.Folder()
	t, err := s.scenes.TicketAt(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, apperr.Invalid("invalid upload URL", field+": no such upload")
	}
	if t.Kind != kind {
		return nil, apperr.Invalid("invalid upload URL", fmt.Sprintf("%s: this URL comes from another upload endpoint", field))
	}
	if t.CommittedAt != nil {
		return nil, s.scenes.AlreadyCommitted(ctx, field, t.ID, owner)
	}
	if s.now().After(t.ExpiresAt.Add(commitGrace)) {
		return nil, apperr.Invalid("invalid upload URL", field+": the upload window has closed; upload again")
	}
	return &asset{ticket: t, key: key}, nil
}

// object returns the ticket's declared object for key.
func (a *asset) object() (schema.UploadObject, bool) {
	for _, o := range a.ticket.Objects {
		if o.Key == a.key {
			return o, true
		}
	}
	return schema.UploadObject{}, false
}

// verifyObject seals an uploaded object of a's ticket (seal.go) and checks the sealed copy has
// its declared size and type and starts like its format.
func (s *Service) verifyObject(ctx context.Context, field string, a *asset, o schema.UploadObject) error {
	err := s.seal(ctx, field, a.ticket, o)
	if err == nil {
		err = s.verifySealed(ctx, field, o)
	}
	if err != nil && a.ticket.MultipartUploadID == nil {
		// A multipart upload lives at its sealed key: the upload itself, not a copy to undo.
		return s.unseal(ctx, sealedKey(o), err)
	}
	return err
}

// sniffObject reads the first bytes of an object and checks they look like its format, then
// runs the deeper check of the formats that have one (inspect: a PLY's whole header against the
// file's size, a .sog's archive directory and meta.json).
func (s *Service) sniffObject(ctx context.Context, field, key string, size int64) error {
	out, err := s.store.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=0-%d", sniffHeadSize-1))})
	if err != nil {
		return apperr.Internal(err)
	}
	defer out.Body.Close()
	head, err := io.ReadAll(io.LimitReader(out.Body, sniffHeadSize))
	if err != nil {
		return apperr.Internal(err)
	}
	ext := strings.ToLower(path.Ext(key))
	err = sniff(ext, head, size)
	if err == nil {
		r := &objectReader{ctx: ctx, client: s.store.Client, bucket: s.store.Bucket, key: key, size: size, budget: inspectReadBudget}
		err = inspect(ext, r, size)
		if r.err != nil {
			// The store failed, not the file: the commit's 500, never a 400 blaming the upload.
			return apperr.Internal(r.err)
		}
	}
	if err != nil {
		return apperr.Invalid("upload is not a valid file", field+": "+err.Error())
	}
	return nil
}

// verifyFolder seals every object of a LOD ticket, checked against its declared size
// (sealFolder), and sniffs the manifest and one cell. A folder that fails any of it (a commit
// out of its budget among them) loses its sealed copies before the answer (unseal).
func (s *Service) verifyFolder(ctx context.Context, t *ent.UploadTicket) error {
	if err := s.checkFolder(ctx, t); err != nil {
		return s.unseal(ctx, objectkeys.Sealed(t.Prefix), err)
	}
	return nil
}

// checkFolder is verifyFolder's sealing and sniffs.
func (s *Service) checkFolder(ctx context.Context, t *ent.UploadTicket) error {
	if err := s.sealFolder(ctx, t); err != nil {
		return err
	}
	var manifest, cell schema.UploadObject
	for _, o := range t.Objects {
		switch {
		case o.Key == t.Prefix+uploadrules.LODManifest:
			manifest = o
		// Extensions are case-insensitive everywhere (validateLOD lowercases them too).
		case strings.EqualFold(path.Ext(o.Key), ".webp") && cell.Key == "":
			cell = o
		}
	}
	if err := s.sniffObject(ctx, "splatUrl", sealedKey(manifest), manifest.Size); err != nil {
		return err
	}
	return s.sniffObject(ctx, "lodFolderKey", sealedKey(cell), cell.Size)
}

// ticketIDs are the upload tickets a commit names.
func ticketIDs(assets []*asset) []string {
	out := make([]string, 0, len(assets))
	for _, a := range assets {
		if !slices.Contains(out, a.ticket.ID) {
			out = append(out, a.ticket.ID)
		}
	}
	return out
}
