package splathost

import (
	"encoding/json"
	"time"
)

// Nullable is a request field with three states: omitted (the zero value, left unchanged by
// the service), null ([Null]) and a value ([Value]). JSON has all three, and "null removes the
// cap" differs from "leave the cap alone" for fields such as maxSplats.
type Nullable[T any] struct {
	value T
	set   bool
	null  bool
}

// Value is a Nullable holding v.
func Value[T any](v T) Nullable[T] { return Nullable[T]{value: v, set: true} }

// Null is a Nullable sent as JSON null.
func Null[T any]() Nullable[T] { return Nullable[T]{set: true, null: true} }

// IsZero reports an omitted field; the omitzero tag option relies on it.
func (n Nullable[T]) IsZero() bool { return !n.set }

// Get returns the value and whether one is held (false when omitted or null).
func (n Nullable[T]) Get() (T, bool) { return n.value, n.set && !n.null }

// MarshalJSON implements json.Marshaler.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.null || !n.set {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// Ptr returns a pointer to v, for the optional fields of request types.
func Ptr[T any](v T) *T { return &v }

// Visibility is who may see a scene.
type Visibility string

// Visibilities of a scene.
const (
	Private Visibility = "private"
	Public  Visibility = "public"
)

// SplatType tells a single-file scene from a level-of-detail folder.
type SplatType string

// Scene types.
const (
	SplatTypeFile SplatType = "file"
	SplatTypeLOD  SplatType = "lod"
)

// Usage is a storage meter: in commit and clone answers the integration owner's account after
// the operation, in customer usage the customer's allocation.
type Usage struct {
	UsedBytes      int64 `json:"usedBytes"`
	LimitBytes     int64 `json:"limitBytes"`
	RemainingBytes int64 `json:"remainingBytes"`
	// PercentUsed is 0-100.
	PercentUsed float64 `json:"percentUsed"`
}

// ExternalUser is an integration's customer (spec, externalUser).
type ExternalUser struct {
	ID             string         `json:"id"`
	IntegrationID  string         `json:"integrationId"`
	ExternalUserID string         `json:"externalUserId"`
	ProductSlug    string         `json:"productSlug"`
	DisplayName    *string        `json:"displayName"`
	AvatarURL      *string        `json:"avatarUrl"`
	EmailHash      *string        `json:"emailHash"`
	Metadata       map[string]any `json:"metadata"`
	// Status is "active", "inactive" or "deleted".
	Status string `json:"status"`
	// BillingState is "active", "suspended" or "canceled".
	BillingState   string  `json:"billingState"`
	UsedBytes      int64   `json:"usedBytes"`
	LimitBytes     int64   `json:"limitBytes"`
	MaxSplats      *int64  `json:"maxSplats"`
	RemainingBytes int64   `json:"remainingBytes"`
	PercentUsed    float64 `json:"percentUsed"`
	DeletedAt      *string `json:"deletedAt"`
	CreatedAt      *string `json:"createdAt"`
	UpdatedAt      *string `json:"updatedAt"`
}

// CustomerUpdate is the body of PutCustomer: every field is optional, and omitted fields keep
// their value (on a new customer, LimitBytes defaults to the account's storage bundle).
type CustomerUpdate struct {
	LimitBytes *int64 `json:"limitBytes,omitempty"`
	// MaxSplats set to Null removes the scene cap.
	MaxSplats Nullable[int64] `json:"maxSplats,omitzero"`
	// Status is "active" or "inactive".
	Status string `json:"status,omitempty"`
	// BillingState is "active", "suspended" or "canceled"; the last two force the customer
	// inactive and default omitted caps to 0.
	BillingState string `json:"billingState,omitempty"`
	// KeepSplatIDs are scenes to keep active when caps drop; the rest are archived.
	KeepSplatIDs []string `json:"keepSplatIds,omitempty"`
	// ProtectedSplatIDs are archived like the rest but never removed.
	ProtectedSplatIDs []string                 `json:"protectedSplatIds,omitempty"`
	DisplayName       Nullable[string]         `json:"displayName,omitzero"`
	AvatarURL         Nullable[string]         `json:"avatarUrl,omitzero"`
	EmailHash         Nullable[string]         `json:"emailHash,omitzero"`
	Metadata          Nullable[map[string]any] `json:"metadata,omitzero"`
}

// DeletedCustomer is the reduced record DeleteCustomer answers with.
type DeletedCustomer struct {
	ID             string  `json:"id"`
	ExternalUserID string  `json:"externalUserId"`
	Status         string  `json:"status"`
	BillingState   string  `json:"billingState"`
	UsedBytes      int64   `json:"usedBytes"`
	DeletedAt      *string `json:"deletedAt"`
}

// DeleteCustomerResult is the answer of DeleteCustomer. ExternalUser may be nil.
type DeleteCustomerResult struct {
	DeletedSplatCount int              `json:"deletedSplatCount"`
	ExternalUser      *DeletedCustomer `json:"externalUser"`
}

// CustomerUsage is a customer's storage allocation and scene count.
type CustomerUsage struct {
	Storage Usage `json:"storage"`
	Splats  struct {
		Used int64 `json:"used"`
		// Limit is the customer's maxSplats; nil means no cap.
		Limit *int64 `json:"limit"`
	} `json:"splats"`
	// OpenUploads is what the customer's open uploads (signed, not committed, not aborted, not
	// expired) hold apart from Storage: uncharged until a commit, but bounded (an upload
	// request past MaxCount or MaxBytes answers 429 TOO_MANY_OPEN_UPLOADS).
	OpenUploads struct {
		Count    int64 `json:"count"`
		Bytes    int64 `json:"bytes"`
		MaxCount int64 `json:"maxCount"`
		MaxBytes int64 `json:"maxBytes"`
	} `json:"openUploads"`
}

// RemixedFrom names the source of a remix.
type RemixedFrom struct {
	SplatID   string `json:"splatId"`
	OwnerName string `json:"ownerName"`
	ClonedAt  string `json:"clonedAt"`
}

// Splat is a scene. LevelData and LodFolderKey are filled by GetSplat only.
type Splat struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// ImageURL and SplatURL are URLs of the deployment's asset route: stable for a public,
	// embeddable scene, otherwise signed and valid for at least 15 minutes (fetch the scene
	// again for fresh ones). Either may be fetched with a plain GET, no credentials.
	ImageURL       string       `json:"imageUrl"`
	SplatURL       string       `json:"splatUrl"`
	Visibility     Visibility   `json:"visibility"`
	AllowEmbed     bool         `json:"allowEmbed"`
	AllowComments  bool         `json:"allowComments"`
	AllowReactions bool         `json:"allowReactions"`
	AllowClone     bool         `json:"allowClone"`
	RemixedFrom    *RemixedFrom `json:"remixedFrom"`
	SplatType      SplatType    `json:"splatType"`
	ExternalUserID string       `json:"externalUserId"`
	ProductSlug    string       `json:"productSlug"`
	IsOwner        bool         `json:"isOwner"`
	ViewCount      int64        `json:"viewCount"`
	LikeCount      int64        `json:"likeCount"`
	FileSizeBytes  int64        `json:"fileSizeBytes"`
	Featured       bool         `json:"featured"`
	FeaturedAt     *string      `json:"featuredAt"`
	CreatedAt      string       `json:"createdAt"`
	UpdatedAt      string       `json:"updatedAt"`
	// Processing is the scene's rendition: the compact SOG (or Streamed SOG) the service builds
	// from the upload in the background. The embeds load it once ready.
	Processing Processing `json:"processing"`
	// LevelData is the opaque viewer state.
	LevelData    map[string]any `json:"levelData,omitempty"`
	LodFolderKey *string        `json:"lodFolderKey,omitempty"`
}

// Processing states of a rendition.
const (
	ProcessingPending = "pending"
	ProcessingReady   = "ready"
	ProcessingFailed  = "failed"
	ProcessingSkipped = "skipped"
)

// Processing is where a scene's rendition stands (contract item 15): State is pending, ready,
// failed or skipped (a .sog or LOD upload needs none); a ready one has its URL, type (sog or
// lod) and size. Message says why one failed. fileSizeBytes never includes a rendition.
type Processing struct {
	State          string  `json:"state"`
	RenditionURL   *string `json:"renditionUrl"`
	RenditionType  *string `json:"renditionType"`
	RenditionBytes *int64  `json:"renditionBytes"`
	Gaussians      *int64  `json:"gaussians"`
	Message        *string `json:"message"`
}

// ListSplatsOptions filters and pages ListSplats. Zero values use the service's defaults.
type ListSplatsOptions struct {
	// ExternalUserID limits the list to that customer's scenes.
	ExternalUserID string
	// Limit is 1-100 (default 20).
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
	// Featured lists only featured scenes.
	Featured bool
	// Sort is createdAt (default), updatedAt, featuredAt or viewCount.
	Sort string
	// Dir is asc or desc (default desc).
	Dir string
}

// SplatPage is one page of ListSplats; NextCursor is empty on the last page.
type SplatPage struct {
	Splats     []Splat `json:"splats"`
	NextCursor string  `json:"nextCursor"`
}

// SplatPatch is the body of PatchSplat; nil fields are untouched. Featured must be the only
// field when set (and is the one field an integration may set on any customer's scene).
type SplatPatch struct {
	Title          *string     `json:"title,omitempty"`
	Description    *string     `json:"description,omitempty"`
	Visibility     *Visibility `json:"visibility,omitempty"`
	Featured       *bool       `json:"featured,omitempty"`
	AllowEmbed     *bool       `json:"allowEmbed,omitempty"`
	AllowClone     *bool       `json:"allowClone,omitempty"`
	AllowComments  *bool       `json:"allowComments,omitempty"`
	AllowReactions *bool       `json:"allowReactions,omitempty"`
}

// CommitRequest is the body of CommitSplat, the last step of an upload.
type CommitRequest struct {
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	Visibility  Visibility `json:"visibility,omitempty"`
	SplatType   SplatType  `json:"splatType,omitempty"`
	// SplatURL is the fileUrl of a file upload or the manifestUrl of a LOD folder.
	SplatURL string `json:"splatUrl"`
	// LodFolderKey is the folderKey of a LOD folder upload.
	LodFolderKey string `json:"lodFolderKey,omitempty"`
	// ImageURL and ThumbnailDepthURL are fileUrls of RequestImageUploads.
	ImageURL              string      `json:"imageUrl,omitempty"`
	ThumbnailDepthURL     string      `json:"thumbnailDepthUrl,omitempty"`
	InitialCameraPosition *[3]float64 `json:"initialCameraPosition,omitempty"`
	InitialCameraRotation *[3]float64 `json:"initialCameraRotation,omitempty"`
}

// CommitResult is the answer of CommitSplat.
type CommitResult struct {
	SplatID string `json:"splatId"`
	Splat   Splat  `json:"splat"`
	// Usage is the account's storage meter after the commit.
	Usage Usage `json:"usage"`
}

// TrendingOptions are the trending window (1-90 days, default 7) and length (1-100, default
// 12); zero values use the defaults.
type TrendingOptions struct {
	WindowDays int
	Limit      int
}

// TrendingScore is how a trending scene ranked: Source "window" for windowed activity,
// "alltime" for backfill (score 0).
type TrendingScore struct {
	Source      string `json:"source"`
	Score       int64  `json:"score"`
	Impressions int64  `json:"impressions"`
	UniqueViews int64  `json:"uniqueViews"`
}

// TrendingSplat is a scene with its trending score.
type TrendingSplat struct {
	Splat
	Trending TrendingScore `json:"trending"`
}

// Trending is the answer of TrendingSplats.
type Trending struct {
	Splats []TrendingSplat `json:"splats"`
	Info   TrendingInfo    `json:"trending"`
}

// TrendingInfo is the trending block of an answer: the window and how its items ranked.
type TrendingInfo struct {
	WindowDays int    `json:"windowDays"`
	Since      string `json:"since"`
	Count      int    `json:"count"`
	// WindowCount is how many items ranked by windowed activity; the rest are backfill.
	WindowCount int `json:"windowCount"`
}

// ViewCounts are views in a period: every recorded view, and distinct visitors.
type ViewCounts struct {
	Impressions int64 `json:"impressions"`
	UniqueViews int64 `json:"uniqueViews"`
}

// AnalyticsDay is one UTC day of Analytics.
type AnalyticsDay struct {
	// Date is the UTC day, YYYY-MM-DD.
	Date string `json:"date"`
	ViewCounts
}

// Analytics is the answer of SplatAnalytics: one entry per day of the window, oldest first and
// today last, zeros included; Totals counts a visitor seen on several days once.
type Analytics struct {
	SplatID    string         `json:"splatId"`
	WindowDays int            `json:"windowDays"`
	Since      string         `json:"since"`
	Totals     ViewCounts     `json:"totals"`
	Days       []AnalyticsDay `json:"days"`
}

// SessionType is the embed a session token opens.
type SessionType string

// Embed session types.
const (
	SessionEditor SessionType = "editor"
	SessionViewer SessionType = "viewer"
)

// SessionUser is the optional end-user profile signed into a session token.
type SessionUser struct {
	Name      string  `json:"name"`
	AvatarURL *string `json:"avatarUrl,omitempty"`
}

// SessionRequest is the body of MintSession. PublicKey defaults to the client's key.
type SessionRequest struct {
	PublicKey string       `json:"publicKey"`
	Type      SessionType  `json:"type,omitempty"`
	SplatID   string       `json:"splatId,omitempty"`
	User      *SessionUser `json:"user,omitempty"`
	// CoEdit (editor sessions only) lets the session change the unsaved drafts of the
	// multiplayer rooms it joins without owning their scenes; without it such a session is
	// shown the room read-only (docs/security.md, "Room").
	CoEdit bool `json:"coEdit,omitempty"`
	// ExternalUserID scopes the session to a customer (sent as a header, not in the body).
	ExternalUserID string `json:"-"`
}

// Session is a minted embed session token.
type Session struct {
	SessionToken string    `json:"sessionToken"`
	ExpiresAt    time.Time `json:"expiresAt"`
}
