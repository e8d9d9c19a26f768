package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// planClone builds the new scene's draft and the copy plan from the source row.
func (a *Activities) planClone(src *ent.Scene, remix bool, in contract.PrepareCloneInput) (*schema.CloneDraft, contract.ClonePlan, error) {
	dst := objectkeys.CloneFolder(in.IntegrationID, in.OwnerID, in.SplatID)
	var plan contract.ClonePlan
	mapped := map[string]string{} // source key → copy key, for URL rewriting
	add := func(key string) (string, error) {
		if d, ok := mapped[key]; ok {
			return d, nil
		}
		d, ok := cloneKey(key, in.IntegrationID, dst)
		if !ok {
			return "", fmt.Errorf("scene %s: asset key %q is outside the scene key space", src.ID, key)
		}
		mapped[key] = d
		plan.Objects = append(plan.Objects, contract.ObjectCopy{Src: key, Dst: d})
		return d, nil
	}
	draft := &schema.CloneDraft{
		Title: src.Title, Description: src.Description, SplatType: string(src.SplatType),
		InitialCameraPosition: src.InitialCameraPosition, InitialCameraRotation: src.InitialCameraRotation,
		AllowEmbed: src.AllowEmbed, AllowComments: src.AllowComments, AllowReactions: src.AllowReactions,
	}
	if remix {
		owner := ""
		if u := src.Edges.Owner; u != nil {
			owner = u.ExternalUserID
			if u.DisplayName != nil && *u.DisplayName != "" {
				owner = *u.DisplayName
			}
		}
		draft.RemixedFrom = &schema.RemixedFrom{SplatID: src.ID, OwnerName: owner, ClonedAt: httpx.ISOTime(in.ClonedAt)}
	} else {
		draft.Title = copyTitle(src.Title)
	}
	for _, k := range src.AssetKeys {
		d, err := add(k)
		if err != nil {
			return nil, plan, err
		}
		draft.AssetKeys = append(draft.AssetKeys, d)
	}
	if src.LodFolderKey != nil {
		folder := strings.TrimSuffix(*src.LodFolderKey, "/") + "/"
		d, ok := cloneKey(folder, in.IntegrationID, dst)
		if !ok {
			return nil, plan, fmt.Errorf("scene %s: LOD folder %q is outside the scene key space", src.ID, folder)
		}
		plan.FolderSrc, plan.FolderDst = folder, d
		lod := strings.TrimSuffix(d, "/")
		draft.LodFolderKey, draft.LodFiles = &lod, src.LodFiles
	}
	// Every URL of the record that points at a copied object (or into the copied folder) now
	// points at the copy; anything else (an external URL) is kept as it is.
	rewrite := func(u string) string {
		key, render, ok := a.assetRef(u)
		if !ok {
			return u
		}
		if d, ok := mapped[key]; ok {
			return render(d)
		}
		if plan.FolderSrc != "" && strings.HasPrefix(key, plan.FolderSrc) {
			return render(plan.FolderDst + strings.TrimPrefix(key, plan.FolderSrc))
		}
		return u
	}
	draft.SplatURL = rewrite(src.SplatURL)
	draft.ImageURL = rewrite(src.ImageURL)
	// Renditions are re-derived for the clone (FinalizeClone plans one), not copied: they are
	// not charged, and the clone's own folder is named by its id. A poster the source's
	// rendition made is re-rendered with it, so the clone never points into the source's
	// folder (which goes when the source is deleted).
	// A .sog or LOD folder's poster is the folder's only object, and its scene ends skipped: the
	// clone gets its poster again all the same.
	posterOfFolder := false
	if key, _, ok := a.assetRef(src.ImageURL); ok && src.RenditionPrefix != nil && strings.HasPrefix(key, *src.RenditionPrefix) {
		draft.ImageURL, posterOfFolder = "", true
	}
	draft.Rendition = src.ProcessingState != scene.ProcessingStateSkipped || posterOfFolder
	if src.ThumbnailDepthURL != nil {
		d := rewrite(*src.ThumbnailDepthURL)
		draft.ThumbnailDepthURL = &d
	}
	if src.LevelData != nil {
		// Assets referenced from levelData (audio, for example) are copied too: every URL of
		// the source owner's own key space that is not already part of the plan joins it.
		// Anything else — another customer's file, or another integration's — is left as the
		// text it is and never copied: levelData is free JSON its owner writes, and naming a
		// key there must not let a clone copy (and so read) objects its caller could not clone.
		ownPrefix := objectkeys.Customer(src.IntegrationID, src.OwnerID)
		refs := 0
		var err error
		draft.LevelData, _ = walkStrings(src.LevelData, func(s string) string {
			key, _, ok := a.assetRef(s)
			if !ok || err != nil {
				return s
			}
			if _, planned := mapped[key]; !planned && !(plan.FolderSrc != "" && strings.HasPrefix(key, plan.FolderSrc)) {
				if _, ok := cloneKey(key, in.IntegrationID, dst); !ok || !objectkeys.SafeKey(key) || !strings.HasPrefix(key, ownPrefix) {
					return s // not an object of the source's owner: left as it is
				}
				if refs++; refs > maxLevelDataAssets {
					err = apperr.Conflict(fmt.Sprintf("levelData references more than %d assets", maxLevelDataAssets))
					return s
				}
				if _, err = add(key); err != nil {
					return s
				}
				draft.AssetKeys = append(draft.AssetKeys, mapped[key])
			}
			return rewrite(s)
		}).(map[string]any)
		if err != nil {
			return nil, plan, err
		}
	}
	return draft, plan, nil
}

// walkStrings returns a copy of a decoded JSON value with every string passed through f.
func walkStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = walkStrings(x, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = walkStrings(x, f)
		}
		return out
	default:
		return v
	}
}

// copyTitle is a Duplicate's title: the source title + ' (Copy)', the source shortened so the
// result stays within 200 characters.
func copyTitle(title string) string {
	if n := utf8.RuneCountInString(title); n+utf8.RuneCountInString(copySuffix) > maxTitle {
		title = strings.TrimSpace(string([]rune(title)[:maxTitle-utf8.RuneCountInString(copySuffix)]))
	}
	return title + copySuffix
}

// measure checks every planned object is in the store and sums the bytes the clone will hold:
// a HEAD per single object (recording its size in the plan). A LOD folder holds what the scene
// was charged for less its single objects. When the scene recorded its file count at commit,
// the folder's manifest gets a HEAD and the plan carries the count and bytes for the copy's
// own listing to check (one listing in all, not one here and one in the copy); an older scene's
// folder is listed here, where fewer bytes mean tiles (or the manifest) are gone.
func (a *Activities) measure(ctx context.Context, src *ent.Scene, plan *contract.ClonePlan) (bytes int64, total int, err error) {
	var singles int64
	for i := range plan.Objects {
		o := &plan.Objects[i]
		// The committed copy (objectkeys.Sealed) is what the source serves and the clone copies.
		head, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(objectkeys.Sealed(o.Src))})
		var nf *s3types.NotFound
		if errors.As(err, &nf) {
			return 0, 0, sourceFilesMissing(o.Src[strings.LastIndex(o.Src, "/")+1:])
		}
		if err != nil {
			return 0, 0, fmt.Errorf("checking %s: %w", o.Src, err)
		}
		o.Size = aws.ToInt64(head.ContentLength)
		bytes += o.Size
		if slices.Contains(src.AssetKeys, o.Src) {
			singles += o.Size
		}
	}
	total = len(plan.Objects)
	if plan.FolderSrc == "" {
		return bytes, total, nil
	}
	if src.LodFiles != nil && *src.LodFiles > 0 {
		// The scene's splatUrl names its manifest, inside the folder.
		manifest, ok := strings.CutPrefix(src.SplatURL, a.AssetBase+"/")
		if !ok || !strings.HasPrefix(manifest, plan.FolderSrc) {
			return 0, 0, fmt.Errorf("scene %s: splatUrl %q is not in its LOD folder", src.ID, src.SplatURL)
		}
		_, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(objectkeys.Sealed(manifest))})
		var nf *s3types.NotFound
		if errors.As(err, &nf) {
			return 0, 0, sourceFilesMissing(manifest[strings.LastIndex(manifest, "/")+1:])
		}
		if err != nil {
			return 0, 0, fmt.Errorf("checking %s: %w", manifest, err)
		}
		plan.FolderFiles, plan.FolderBytes = *src.LodFiles, src.FileSizeBytes-singles
		return bytes + plan.FolderBytes, total + plan.FolderFiles, nil
	}
	var folderBytes int64
	var n int
	err = a.bucket().ListFolder(ctx, objectkeys.Sealed(plan.FolderSrc), func(page []s3types.Object) error {
		for _, o := range page {
			folderBytes += aws.ToInt64(o.Size)
		}
		n += len(page)
		activity.RecordHeartbeat(ctx, n)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if n == 0 || folderBytes < src.FileSizeBytes-singles {
		return 0, 0, sourceFilesMissing(fmt.Sprintf("the LOD folder holds %d of %d bytes", folderBytes, src.FileSizeBytes-singles))
	}
	// What was listed is what is charged, and the copy's own listing must find exactly that:
	// a folder that grows between the two (a tile rewritten bigger) would otherwise be copied
	// at its new size and charged at the old one.
	plan.FolderFiles, plan.FolderBytes = n, folderBytes
	return bytes + folderBytes, total + n, nil
}
