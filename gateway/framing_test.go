package gateway

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFramingProblem(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{"Host: x\r\n\r\n", ""},
		{"Host: x\r\nContent-Length: 50\r\n\r\n", ""},
		{"Host: x\r\nTransfer-Encoding: chunked\r\n\r\n", ""},
		{"Host: x\r\ntransfer-encoding:  Chunked \r\n\r\n", ""},
		{"Host: x\r\nX-Content-Length: 1\r\nContent-Length: 2\r\n\r\n", ""},
		// The attacker's request (issue 38): two lengths, 0 and 50.
		{"Host: x\r\nContent-Length: 0\r\nContent-Length: 50\r\n\r\n", "Content-Length appears 2 times"},
		{"Host: x\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", "Content-Length appears 2 times"},
		{"Host: x\r\nContent-Length: 5\nContent-Length: 5\n\n", "Content-Length appears 2 times"},
		{"Host: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "Content-Length beside Transfer-Encoding"},
		{"Host: x\r\nTRANSFER-ENCODING: chunked\r\nCONTENT-LENGTH: 5\r\n\r\n", "Content-Length beside Transfer-Encoding"},
		{"Host: x\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n", "Content-Length beside Transfer-Encoding"},
		{"Host: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding appears 2 times"},
		{"Host: x\r\nTransfer-Encoding: gzip\r\n\r\n", `Transfer-Encoding "gzip" is not supported`},
		{"Host: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "is not supported"},
	} {
		got := framingProblem([]byte(tt.raw))
		if tt.want == "" {
			require.Empty(t, got, "%q", tt.raw)
		} else {
			require.Contains(t, got, tt.want, "%q", tt.raw)
		}
	}
}

func TestFramingProblemAllocatesNothing(t *testing.T) {
	raw := []byte("Host: x\r\nAuthorization: Bearer msk_x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n")
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = framingProblem(raw) }))
}
