// Package objectstore is the S3 client of splathost (versitygw locally, any S3 in production).
package objectstore

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/splathost/splathost/internal/config"
)

// Store is the bucket holding every scene asset.
type Store struct {
	Client  *s3.Client
	Presign *s3.PresignClient
	Bucket  string
}

// maxIdleConns is how many keep-alive connections to the store the client keeps. The SDK's
// default keeps 10 per host, fewer than one clone job's copies in flight (32 by default): every
// copy beyond the tenth then closed its connection and the next one dialled again, which cost a
// sixth of the worker's CPU during a clone and a new connection per request on the store's side.
// All of the client's requests go to one endpoint, so the per-host cap is the whole pool.
const maxIdleConns = 256

// New builds a client for cfg's endpoint. Path-style addressing works with every S3
// implementation, including one on a loopback address.
func New(cfg config.Config) (*Store, error) {
	if cfg.S3Bucket == "" {
		return nil, fmt.Errorf("objectstore: SPLATHOST_S3_BUCKET is empty")
	}
	client := s3.New(s3.Options{
		Region:       cfg.S3Region,
		BaseEndpoint: aws.String(cfg.S3Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.S3AccessKey, cfg.S3SecretKey, ""),
		// Checksums only when an operation requires them: versitygw and older S3s reject the
		// newer default trailing checksums on presigned uploads.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
			if fallbacks := config.List(cfg.S3Fallbacks); len(fallbacks) > 0 {
				t.DialContext = failoverDial(t.DialContext, fallbacks)
			}
		}),
	})
	return &Store{Client: client, Presign: s3.NewPresignClient(client), Bucket: cfg.S3Bucket}, nil
}

// Ready checks the bucket is reachable with our credentials.
func (s *Store) Ready(ctx context.Context) error {
	_, err := s.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.Bucket)})
	return err
}
