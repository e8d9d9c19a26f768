package temporalconn

import (
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// temporalScheme is the gRPC resolver scheme of a frontend list (SPLATHOST_TEMPORAL_ADDR
// holding more than one address).
const temporalScheme = "splathost-temporal"

// Target turns SPLATHOST_TEMPORAL_ADDR (or the CLI's --temporal) into the SDK's HostPort and extra dial
// options. One address is used as is. A comma list (the frontends of a Temporal cluster
// without a load balancer in front) becomes one target whose resolver returns every address:
// the SDK's default round_robin balancing spreads calls over the frontends that are up and
// skips one that refuses connections, so losing a frontend costs only the calls in flight on
// it, which the SDK retries.
func Target(addr string) (string, []grpc.DialOption) {
	var state resolver.State
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
		}
	}
	switch len(state.Addresses) {
	case 0:
		return "", nil // the SDK's default, as before lists were accepted
	case 1:
		return state.Addresses[0].Addr, nil
	}
	// A builder per client: a manual resolver serves one connection.
	r := manual.NewBuilderWithScheme(temporalScheme)
	r.InitialState(state)
	return temporalScheme + ":///frontends", []grpc.DialOption{grpc.WithResolvers(r)}
}
