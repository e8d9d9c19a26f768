// Package netx holds small network helpers: the idle-connection check shared by the clients of
// the product's own connection pools (the gateway's upstream pool, the Postgres pool), and the
// registry of special-purpose addresses outbound deliveries must never reach (special.go).
package netx

import (
	"net"
	"syscall"
)

// IdleBroken reports whether an idle pooled connection must not carry another request: the peer
// closed or reset it, or sent bytes nobody asked for (Postgres's FATAL message for a terminated
// backend, an HTTP server's last words before closing). A pooled connection looks alive until it
// is used, and a request written on a dead one fails only when its answer is read, when the
// caller can no longer tell whether the peer received it. The check is one non-blocking peek: it
// never waits and consumes nothing. Connections that expose no file descriptor (TLS) are
// reported as usable.
func IdleBroken(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	broken := false
	var b [1]byte
	// Control, not Read: Read would wait for a reader that holds the descriptor (a client's
	// background reader), and the peek needs no exclusivity since it consumes nothing.
	_ = rc.Control(func(fd uintptr) {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing pending, alive. Anything else is EOF (no error, 0 bytes), an
		// error, or unsolicited bytes.
		broken = err != syscall.EAGAIN && err != syscall.EINTR
	})
	return broken
}
