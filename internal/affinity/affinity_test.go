package affinity

import (
	"hash/fnv"
	"testing"
)

// Every gateway must pick the same replica for a key, across versions too (a rolling upgrade
// runs two at once), so the hash is pinned to the standard FNV-1a.
func TestReplicaIsFNV1aModN(t *testing.T) {
	for _, key := range []string{"", "6b099c1ee14a056304bbc6dd", "integration-é", "x"} {
		h := fnv.New32a()
		h.Write([]byte(key))
		for _, n := range []int{1, 2, 3, 7} {
			if got, want := Replica(key, n), int(h.Sum32()%uint32(n)); got != want {
				t.Fatalf("Replica(%q, %d) = %d, want %d", key, n, got, want)
			}
		}
	}
}
