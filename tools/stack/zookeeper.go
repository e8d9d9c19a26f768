package stack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// zookeeperClasspath is where Debian's zookeeper package (3.8) puts its jars and its log4j
// configuration.
const zookeeperClasspath = "/usr/share/java/*:/etc/zookeeper/conf"

// zookeeper runs one ZooKeeper server (Debian's package) as a plain JVM with a config of its own,
// the coordination service ClickHouse 18.16 replicates through (it predates ClickHouse Keeper).
type zookeeper struct {
	name    string // zookeeper-N
	dir     string // DIR/<name>: zoo.cfg and the data
	logPath string
	port    int
	log     *slog.Logger
	proc    *process
}

func newZooKeeper(dir, name string, port int, log *slog.Logger) *zookeeper {
	return &zookeeper{
		name:    name,
		dir:     filepath.Join(dir, name),
		logPath: filepath.Join(dir, "logs", name+".log"),
		port:    port,
		log:     log.With("part", name),
	}
}

// checkZooKeeper reports a missing installation before anything starts.
func checkZooKeeper() error {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return fmt.Errorf("zookeeper: /usr/share/java/zookeeper.jar not found: run `apt-get install -y zookeeper` (the cluster shape's coordination service)")
	}
	return nil
}

// addr is the client address ClickHouse dials.
func (z *zookeeper) addr() string { return hostPort(z.port) }

// start writes zoo.cfg (the port may change between runs), starts the server and waits until
// it answers ruok.
func (z *zookeeper) start(ctx context.Context, timeout time.Duration) error {
	if err := checkZooKeeper(); err != nil {
		return err
	}
	data := filepath.Join(z.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("%s: %w", z.name, err)
	}
	cfg := strings.Join([]string{
		"# Written by the splathost stack runner on every start; edits are overwritten.",
		"tickTime=2000",
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + data,
		"clientPort=" + strconv.Itoa(z.port),
		"clientPortAddress=" + loopback,
		// The admin server would take port 8080, the gateway's.
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,mntr",
		// Snapshots and logs of a dev cluster: keep a few, purge hourly.
		"autopurge.snapRetainCount=3",
		"autopurge.purgeInterval=1",
		"",
	}, "\n")
	cfgPath := filepath.Join(z.dir, "zoo.cfg")
	if err := writeFileAtomic(cfgPath, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("%s: %w", z.name, err)
	}
	var err error
	z.proc, err = startProcess(procSpec{
		name: z.name,
		path: "/usr/bin/java",
		args: []string{
			// A dev coordination service holds a few hundred znodes: a small serial-GC heap keeps
			// the JVM near 100 MB instead of a quarter of the machine's memory.
			"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dzookeeper.root.logger=INFO,CONSOLE", "-Dzookeeper.log.dir=" + filepath.Dir(z.logPath),
			"-cp", zookeeperClasspath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
		},
		env:         []string{"PATH=/usr/bin:/bin"},
		dir:         z.dir,
		logPath:     z.logPath,
		deathSignal: syscall.SIGTERM,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", z.name, err)
	}
	return waitHealthy(ctx, z.name, z.proc, z.logPath, timeout, func(ctx context.Context) error {
		return zkRuok(ctx, z.addr())
	})
}

// zkRuok sends ZooKeeper's ruok four-letter word; a serving server answers imok.
func zkRuok(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(conn, 16))
	if string(b) != "imok" {
		return fmt.Errorf("ruok answered %q", b)
	}
	return nil
}

// stop shuts the server down.
func (z *zookeeper) stop(timeout time.Duration) error {
	if z.proc == nil {
		return nil
	}
	return z.proc.stop(timeout)
}
