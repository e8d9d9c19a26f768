package netx

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestIdleBroken(t *testing.T) {
	client, server := pair(t)
	require.False(t, IdleBroken(client), "an idle live connection is usable")
	_, err := server.Write([]byte("x"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return IdleBroken(client) }, time.Second, time.Millisecond, "unsolicited bytes")
	b := make([]byte, 1)
	_, err = client.Read(b)
	require.NoError(t, err, "the peek consumed nothing")
	require.Equal(t, byte('x'), b[0])
	require.False(t, IdleBroken(client))

	client, server = pair(t)
	require.NoError(t, server.Close())
	require.Eventually(t, func() bool { return IdleBroken(client) }, time.Second, time.Millisecond, "closed by the peer")
}
