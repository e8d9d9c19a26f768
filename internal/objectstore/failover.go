package objectstore

import (
	"context"
	"errors"
	"net"
)

// failoverDial wraps dial so that a connection the endpoint refuses (or cannot be dialled at
// all) is made to the fallbacks in order instead (config.S3Fallbacks: other gateways over the
// same store). Only the TCP connection moves: the request keeps the endpoint's Host header, which
// its signature covers, so any gateway holding the same keys accepts it.
func failoverDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), fallbacks []string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err == nil || ctx.Err() != nil {
			return conn, err
		}
		errs := []error{err}
		for _, fb := range fallbacks {
			if fb == addr {
				continue
			}
			c, ferr := dial(ctx, network, fb)
			if ferr == nil {
				return c, nil
			}
			errs = append(errs, ferr)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}
