package quota

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOpenUploadsOf(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tickets := []OpenTicket{
		{Bytes: 10, Expires: now.Add(time.Hour), Session: "s1"},
		{Bytes: 20, Expires: now.Add(5 * time.Minute)},
		{Bytes: 40, Expires: now.Add(30 * time.Minute), Session: "s1"},
		{Bytes: 80, Expires: now.Add(2 * time.Minute), Session: "s2"},
		{Bytes: 1000, Expires: now}, // expired at now: holds nothing
		{Bytes: 1000, Expires: now.Add(-time.Minute), Session: "s1"},
	}
	got := OpenUploadsOf(tickets, "s1", now)
	require.Equal(t, OpenUploads{Count: 4, Bytes: 150, NextExpiry: now.Add(2 * time.Minute),
		SessionCount: 2, SessionNextExpiry: now.Add(30 * time.Minute)}, got)

	keys := OpenUploadsOf(tickets, "", now)
	require.Zero(t, keys.SessionCount, "a key caller has no session share")
	require.Equal(t, 4, keys.Count)
	require.Equal(t, OpenUploads{}, OpenUploadsOf(nil, "s1", now))
}

func TestOpenUploadRoom(t *testing.T) {
	require.Equal(t, int64(1000+50), OpenUploadRoom(Meter{LimitBytes: 1000}, 50))
	require.Equal(t, int64(400+50), OpenUploadRoom(Meter{LimitBytes: 1000, UsedBytes: 600}, 50))
	require.Equal(t, int64(50), OpenUploadRoom(Meter{LimitBytes: 1000, UsedBytes: 5000}, 50), "over the cap: one file still fits")
}

func TestAdmitUpload(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	customer := Meter{LimitBytes: 1000, UsedBytes: 200} // room: 800 + maxFile
	const maxFile = 100
	open := func(count int, bytes int64, session int) OpenUploads {
		return OpenUploads{Count: count, Bytes: bytes, NextExpiry: now.Add(90 * time.Second),
			SessionCount: session, SessionNextExpiry: now.Add(10 * time.Minute)}
	}
	tests := []struct {
		name       string
		open       OpenUploads
		ask        UploadAsk
		scope      string // "" admits
		retryAfter int
	}{
		{"nothing open", OpenUploads{}, UploadAsk{Bytes: 10, MaxFile: maxFile}, "", 0},
		{"one file above the headroom reaches the commit's 413", OpenUploads{}, UploadAsk{Bytes: 900, MaxFile: maxFile}, "", 0},
		{"bytes exactly at the room", open(3, 800, 0), UploadAsk{Bytes: 100, MaxFile: maxFile}, "", 0},
		{"one byte past the room", open(3, 800, 0), UploadAsk{Bytes: 101, MaxFile: maxFile}, "customer", 90},
		{"count below the bound", open(MaxOpenUploads-1, 0, 0), UploadAsk{Bytes: 1, MaxFile: maxFile}, "", 0},
		{"count at the bound", open(MaxOpenUploads, 0, 0), UploadAsk{Bytes: 1, MaxFile: maxFile}, "customer", 90},
		{"session below its bound", open(2, 0, MaxOpenUploadsPerSession-1), UploadAsk{Bytes: 1, Session: true, MaxFile: maxFile}, "", 0},
		{"session at its bound", open(3, 0, MaxOpenUploadsPerSession), UploadAsk{Bytes: 1, Session: true, MaxFile: maxFile}, "session", 600},
		{"a key caller has no session bound", open(3, 0, MaxOpenUploadsPerSession), UploadAsk{Bytes: 1, MaxFile: maxFile}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := AdmitUpload(customer, tt.open, tt.ask, now)
			if tt.scope == "" {
				require.Nil(t, e)
				return
			}
			require.NotNil(t, e)
			require.Equal(t, http.StatusTooManyRequests, e.Status)
			require.Equal(t, CodeTooManyOpenUploads, e.Extra["code"])
			require.Equal(t, tt.scope, e.Extra["scope"])
			require.Equal(t, tt.retryAfter, e.RetryAfter)
			require.Equal(t, customer.LimitBytes-customer.UsedBytes+maxFile, e.Extra["maxOpenUploadBytes"])
			require.Contains(t, e.Message, "commit")
			require.Contains(t, e.Message, "abort")
			require.Contains(t, e.Message, "expires")
		})
	}
}

func TestRetryAfterRoundsUp(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.Equal(t, 2, retryAfter(now.Add(1500*time.Millisecond), now))
	require.Equal(t, 1, retryAfter(now, now), "never 0: a retry at once would be refused again")
	require.Equal(t, 1, retryAfter(time.Time{}, now))
}
