package resident

import (
	"crypto/sha256"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrimResidentKeepsTheProcessWorking drops the test binary's read-only pages (as the worker
// does once idle) and then runs code and reads tables all over the binary: clean file pages come
// back from the page cache, so nothing changes but the resident size.
func TestTrimResidentKeepsTheProcessWorking(t *testing.T) {
	want := sha256.Sum256([]byte("splathost"))
	Trim()
	Trim()
	require.Equal(t, want, sha256.Sum256([]byte("splathost")))
	require.Equal(t, "42 0x2a", fmt.Sprintf("%d %#x", 42, 42))
	ips, err := net.LookupHost("localhost")
	require.NoError(t, err)
	require.NotEmpty(t, ips)
	done := make(chan int)
	go func() { done <- len(fmt.Sprint(t.Name())) }()
	require.Positive(t, <-done)
}

// TestHasRelro: a binary whose loader wrote relocations into pages it then made read-only is
// never trimmed, nor is one that cannot be read.
func TestHasRelro(t *testing.T) {
	require.True(t, hasRelro("/nonexistent/binary"))
	require.True(t, hasRelro("/bin/ls"), "Debian's coreutils are linked with RELRO")
}

// TestAfterStartSchedulesOncePerProcess: the all-in-one process's server, worker and media worker
// each call AfterStart; only the first schedules the trims, and its stop lets a later start
// schedule them again.
func TestAfterStartSchedulesOncePerProcess(t *testing.T) {
	stop := AfterStart()
	require.True(t, scheduled)
	second := AfterStart()
	second()
	require.True(t, scheduled, "a second caller's stop leaves the first caller's trims")
	stop()
	require.False(t, scheduled)
	again := AfterStart()
	require.True(t, scheduled)
	again()
}
