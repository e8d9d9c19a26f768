package objectstore

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
)

// With the endpoint refusing connections, the client reaches the first fallback that answers,
// and the request still names (and is signed for) the endpoint's host.
func TestFallbackTakesARefusedEndpointsRequests(t *testing.T) {
	var hits atomic.Int32
	var host, auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		host.Store(r.Host)
		auth.Store(r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	closed := closedAddr(t)

	cfg := config.Config{S3Endpoint: "http://" + closed, S3Region: "us-east-1", S3AccessKey: "ak", S3SecretKey: "sk",
		S3Bucket: "b", S3Fallbacks: closedAddr(t) + ", " + strings.TrimPrefix(srv.URL, "http://")}
	st, err := New(cfg)
	require.NoError(t, err)
	_, err = st.Client.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String("b")})
	require.NoError(t, err)
	require.Equal(t, int32(1), hits.Load())
	require.Equal(t, closed, host.Load(), "the request keeps the endpoint's Host")
	require.Regexp(t, `SignedHeaders=([a-z-]+;)*host;`, auth.Load(), "and its signature covers it")

	// Without fallbacks, a refused endpoint is an error.
	cfg.S3Fallbacks = ""
	st, err = New(cfg)
	require.NoError(t, err)
	_, err = st.Client.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String("b")})
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, int32(1), hits.Load())
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
