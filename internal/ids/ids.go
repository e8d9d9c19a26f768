// Package ids makes the 24-character hexadecimal identifiers the interface uses for every record.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// New returns a 24-hex id: 4 bytes of Unix seconds followed by 8 random bytes. The time prefix
// keeps B-tree inserts local and makes ids roughly sortable; the random tail makes them
// unguessable, so an id never reveals another tenant's records.
func New() string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(time.Now().Unix()))
	_, _ = rand.Read(b[4:]) // crypto/rand.Read never fails on Linux (Go 1.24+ guarantees it).
	return hex.EncodeToString(b[:])
}

// Valid reports whether s is a 24-character lowercase or uppercase hexadecimal string.
func Valid(s string) bool {
	if len(s) != 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
