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
		name: "versitygw",
		path: o.bin,
		// Any origin may read assets and PUT signed uploads from a browser (the viewer fetches
		// scene files, the editor uploads them); signatures still guard every write.
		args: []string{"--port", hostPort(o.port), "--quiet", "--cors-allow-origin", "*", "posix", o.root},
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
	return waitHealthy(ctx, "versitygw", o.proc, o.logPath, timeout, func(ctx context.Context) error {
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

// ensureBucket succeeds once the bucket exists, creating it if needed, with its public-read
// policy in place (set again on every start, so an older .dev/ gets it too).
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
	return publicRead(ctx, client, bucket)
}

// publicRead lets anyone GET the bucket's objects: the asset URLs the API returns (fileUrl,
// splatUrl, imageUrl) are public by design, as behind a CDN in production; listing and every
// write still need credentials.
func publicRead(ctx context.Context, client *s3.Client, bucket string) error {
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",`+
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}`, bucket)
	_, err := client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)})
	if err != nil {
		return fmt.Errorf("bucket %s public-read policy: %w", bucket, err)
	}
	return nil
}

// stop shuts the gateway down.
func (o *objectStore) stop(timeout time.Duration) error {
	if o.proc == nil {
		return nil
	}
	return o.proc.stop(timeout)
}
