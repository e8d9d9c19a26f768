package media

import (
	"context"
	"fmt"
	"time"

	"github.com/splathost/splathost/internal/config"
)

// Converter finds the pinned splat-transform and the Node that runs it, checks that Node is
// one the converter supports and the converter is the version media/package.json pins, so
// every rendition of a deployment comes from one converter.
func Converter(ctx context.Context, cfg config.Config) (Transform, error) {
	cli, err := FindSplatTransform(cfg.SplatTransform)
	if err != nil {
		return Transform{}, err
	}
	node, err := FindNode(cfg.Node)
	if err != nil {
		return Transform{}, err
	}
	t := Transform{CLI: cli, Node: node, Timeout: cfg.RenditionTimeout, MaxRSS: int64(cfg.RenditionMaxMemory),
		// Two encoding threads per conversion: the SOG encoder's default of four only
		// oversubscribes the small machines the media worker is sized for; scale out instead.
		Workers: 2}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := NodeVersion(cctx, node); err != nil {
		return Transform{}, err
	}
	v, err := t.Version(cctx)
	if err != nil {
		return Transform{}, err
	}
	if v != SplatTransformVersion {
		return Transform{}, fmt.Errorf("splat-transform %s at %s, want the pinned %s (run make deps)", v, cli, SplatTransformVersion)
	}
	return t, nil
}
