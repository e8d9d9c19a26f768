package customers

import "encoding/json"

// View is the interface's externalUser record as the servers render it (spec, externalUser):
// the user service's answers and the benchmark's bare server encode this one struct, so both
// sides of a comparison write the same bytes. Metadata stays the raw JSON the row holds (no
// decode and re-encode per read); clients decode the record with the Go SDK's ExternalUser.
type View struct {
	ID             string          `json:"id"`
	IntegrationID  string          `json:"integrationId"`
	ExternalUserID string          `json:"externalUserId"`
	ProductSlug    string          `json:"productSlug"`
	DisplayName    *string         `json:"displayName"`
	AvatarURL      *string         `json:"avatarUrl"`
	EmailHash      *string         `json:"emailHash"`
	Metadata       json.RawMessage `json:"metadata"`
	Status         string          `json:"status"`
	BillingState   string          `json:"billingState"`
	UsedBytes      int64           `json:"usedBytes"`
	LimitBytes     int64           `json:"limitBytes"`
	MaxSplats      *int64          `json:"maxSplats"`
	RemainingBytes int64           `json:"remainingBytes"`
	PercentUsed    float64         `json:"percentUsed"`
	DeletedAt      *string         `json:"deletedAt"`
	CreatedAt      string          `json:"createdAt"`
	UpdatedAt      string          `json:"updatedAt"`
}

// Answer is the 200 body of the customer routes, {status: 'success', externalUser}: a struct
// rather than a map, so encoding it costs no reflection over map keys.
type Answer struct {
	Status       string `json:"status"`
	ExternalUser *View  `json:"externalUser"`
}
