// Package affinity picks the replica of a service that a key's requests go to first. It is a
// leaf so that the gateway, which routes by it, and the benchmark, which places its tenants on
// chosen replicas with it, share one definition.
package affinity

// Replica is the index among n replicas that every gateway sends the requests of the affinity
// key (an integration id) to first: its FNV-1a hash modulo n.
func Replica(key string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % uint32(n))
}
