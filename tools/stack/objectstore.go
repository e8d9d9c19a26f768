package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// VersityGWVersion is the pinned versitygw release; `make deps` installs it with go install.
const VersityGWVersion = "v1.8.0"

// s3Region is the signing region of the dev object store.
const s3Region = "us-east-1"

// DefaultVersityGW returns where versitygw is looked for: $SPLATHOST_VERSITYGW, else the path
// `make deps` installs it to.
func DefaultVersityGW() string {
	if p := os.Getenv("SPLATHOST_VERSITYGW"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "splathost", "bin", "versitygw-"+VersityGWVersion, "versitygw")
}

// objectStore runs versitygw with its posix backend: a real S3 implementation that checks
// signatures, unlike the in-memory fakes.
type objectStore struct {
	// name is the process's name ("versitygw", or "versitygw-N" in the cluster shape).
	name      string
	bin       string
	root      string
	logPath   string
	port      int
	bucket    string
	accessKey string
	secretKey string
	log       *slog.Logger
	proc      *process
}

func newObjectStore(dir, bin string, port int, bucket string, secrets Secrets, log *slog.Logger) *objectStore {
	return &objectStore{
		name:      "versitygw",
		bin:       bin,
		root:      filepath.Join(dir, "s3"),
		logPath:   filepath.Join(dir, "logs", "versitygw.log"),
		port:      port,
		bucket:    bucket,
		accessKey: secrets.S3AccessKey,
		secretKey: secrets.S3SecretKey,
		log:       log.With("part", "versitygw"),
	}
}

// gateway is another versitygw named name, on port, over the same store directory: the posix
// backend keeps no state outside the files, so gateways over one directory serve one store
// (the cluster shape runs two).
func (o *objectStore) gateway(name string, port int) *objectStore {
	g := *o
	g.name, g.port, g.proc = name, port, nil
	g.logPath = filepath.Join(filepath.Dir(o.logPath), name+".log")
	g.log = o.log.With("part", name)
	return &g
}

// url is the S3 endpoint.
func (o *objectStore) url() string { return httpURL(o.port) }

// check reports a missing binary before anything starts.
func (o *objectStore) check() error {
	if _, err := os.Stat(o.bin); err != nil {
		return fmt.Errorf("versitygw: %s not found: run `make deps` (or set SPLATHOST_VERSITYGW to a versitygw %s binary)", o.bin, VersityGWVersion)
	}
	return nil
}

// start runs the gateway and creates the bucket when missing.
func (o *objectStore) start(ctx context.Context, timeout time.Duration) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(o.root, 0o755); err != nil {
		return fmt.Errorf("versitygw: %w", err)
	}
	var err error
	o.proc, err = startProcess(procSpec{
		name: o.name,
		path: o.bin,
		// Any origin may PUT signed uploads from a browser (the editor uploads scene files);
		// signatures guard every request, and nothing is anonymously readable. --keep-alive:
		// versitygw closes every connection after one answer unless asked, so each copy of a
		// clone dialled a new connection.
		args: []string{"--port", hostPort(o.port), "--quiet", "--keep-alive", "--cors-allow-origin", "*", "posix", o.root},
		// Credentials travel in the environment, not argv, so `ps` does not show the secret.
		env: []string{
			"PATH=/usr/bin:/bin",
			"HOME=" + o.root,
			"ROOT_ACCESS_KEY=" + o.accessKey,
			"ROOT_SECRET_KEY=" + o.secretKey,
		},
		dir:         o.root,
		logPath:     o.logPath,
		deathSignal: syscall.SIGTERM,
	})
	if err != nil {
		return fmt.Errorf("versitygw: %w", err)
	}
	client := o.client()
	return waitHealthy(ctx, o.name, o.proc, o.logPath, timeout, func(ctx context.Context) error {
		return ensureBucket(ctx, client, o.bucket)
	})
}

// client builds an S3 client for the gateway: path-style addressing (no wildcard DNS on
// loopback) and no retries, since the health loop already retries.
func (o *objectStore) client() *s3.Client {
	return s3.New(s3.Options{
		Region:           s3Region,
		BaseEndpoint:     aws.String(o.url()),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(o.accessKey, o.secretKey, ""),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Timeout: 5 * time.Second},
	})
}

// ensureBucket succeeds once the bucket exists, creating it if needed, with no bucket policy:
// the bucket is private (contract item 9), its objects are read through the service's asset
// route. The policy is deleted on every start, so an older .dev/ that had the public-read
// policy of earlier versions loses it.
func ensureBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	var notFound *types.NotFound
	switch {
	case errors.As(err, &notFound):
		_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		var owned *types.BucketAlreadyOwnedByYou
		if err != nil && !errors.As(err, &owned) {
			return fmt.Errorf("create bucket %s: %w", bucket, err)
		}
		if _, err = client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	return private(ctx, client, bucket)
}

// private removes any bucket policy (an older stack's public-read one), so no object is
// readable without credentials or a presigned URL.
func private(ctx context.Context, client *s3.Client, bucket string) error {
	if _, err := client.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)}); err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "NoSuchBucketPolicy" {
			return nil
		}
		return fmt.Errorf("bucket %s: delete the public-read policy: %w", bucket, err)
	}
	return nil
}

// stop shuts the gateway down.
func (o *objectStore) stop(timeout time.Duration) error {
	return o.proc.stop(timeout)
}
