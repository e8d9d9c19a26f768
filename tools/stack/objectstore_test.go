package stack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// TestObjectStoreStartsPrivate runs the real versitygw: a bucket that an older stack left with
// the public-read policy loses it on the next start, and an anonymous GET of an object is 403.
func TestObjectStoreStartsPrivate(t *testing.T) {
	bin := DefaultVersityGW()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("versitygw not installed (%s): run `make deps`", bin)
	}
	ports, err := RandomPorts()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	secrets := Secrets{S3AccessKey: "stacktest", S3SecretKey: "stacktest-secret-0123456789"}
	o := newObjectStore(dir, bin, ports.ObjectStore, "assets", secrets, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	require.NoError(t, o.start(ctx, 20*time.Second))
	defer func() { _ = o.stop(5 * time.Second) }()

	client := o.client()
	_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("assets"), Key: aws.String("i/x/scene.splat"),
		Body: strings.NewReader("bytes")})
	require.NoError(t, err)
	anonymous := func() int {
		resp, err := http.Get(o.url() + "/assets/i/x/scene.splat")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 403, anonymous(), "a new bucket is private")

	// What earlier versions of the stack set on every start.
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",` +
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::assets/*"]}]}`
	_, err = client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("assets"), Policy: aws.String(policy)})
	require.NoError(t, err)
	require.Equal(t, 200, anonymous(), "the old policy made the bucket world-readable")

	require.NoError(t, o.stop(5*time.Second))
	require.NoError(t, o.start(ctx, 20*time.Second))
	require.Equal(t, 403, anonymous(), "a restart removes the old policy")
}
