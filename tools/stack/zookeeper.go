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
// The cluster shape runs an ensemble of three (zkEnsemble), so losing one keeps a quorum.
type zookeeper struct {
	name    string // zookeeper-N
	id      int    // N, the server's myid in the ensemble
	dir     string // DIR/<name>: zoo.cfg and the data
	logPath string
	port    int
	// ensemble is every server of the ensemble, this one included, in id order; a single
	// server when empty.
	ensemble []zkServer
	log      *slog.Logger
	proc     *process
}

// zkServer is one ensemble member's quorum and leader-election ports.
type zkServer struct {
	ID, PeerPort, ElectionPort int
}

func newZooKeeper(dir, name string, port int, log *slog.Logger) *zookeeper {
	return &zookeeper{
		name:    name,
		id:      1,
		dir:     filepath.Join(dir, name),
		logPath: filepath.Join(dir, "logs", name+".log"),
		port:    port,
		log:     log.With("part", name),
	}
}

// config renders zoo.cfg: the client port on loopback and, in an ensemble, every member's
// server.N line.
func (z *zookeeper) config() string {
	lines := []string{
		"# Written by the splathost stack runner on every start; edits are overwritten.",
		"tickTime=2000",
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + filepath.Join(z.dir, "data"),
		"clientPort=" + strconv.Itoa(z.port),
		"clientPortAddress=" + loopback,
		// The admin server would take port 8080, the gateway's.
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,mntr",
		// Snapshots and logs of a dev cluster: keep a few, purge hourly.
		"autopurge.snapRetainCount=3",
		"autopurge.purgeInterval=1",
	}
	for _, m := range z.ensemble {
		lines = append(lines, fmt.Sprintf("server.%d=%s:%d:%d", m.ID, loopback, m.PeerPort, m.ElectionPort))
	}
	return strings.Join(lines, "\n") + "\n"
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
	cfgPath := filepath.Join(z.dir, "zoo.cfg")
	if err := writeFileAtomic(cfgPath, []byte(z.config()), 0o644); err != nil {
		return fmt.Errorf("%s: %w", z.name, err)
	}
	if len(z.ensemble) > 0 {
		// An ensemble member finds its server.N line by the id in dataDir/myid.
		if err := writeFileAtomic(filepath.Join(data, "myid"), []byte(strconv.Itoa(z.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("%s: %w", z.name, err)
		}
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
	// ruok answers as soon as the server runs, before an ensemble has its quorum, so the
	// members can start one after another; zkServing waits for the quorum.
	return waitHealthy(ctx, z.name, z.proc, z.logPath, timeout, func(ctx context.Context) error {
		return zkRuok(ctx, z.addr())
	})
}

// zkServing waits until every member of an ensemble serves clients (a leader or a follower
// in srvr's answer), which it does only once a quorum has formed.
func zkServing(ctx context.Context, zk []*zookeeper, timeout time.Duration) error {
	for _, z := range zk {
		err := waitHealthy(ctx, z.name+" quorum", z.proc, z.logPath, timeout, func(ctx context.Context) error {
			b, err := zkCommand(ctx, z.addr(), "srvr")
			if err == nil && !strings.Contains(b, "Mode: ") {
				err = fmt.Errorf("not serving: %q", b)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// zkRuok sends ZooKeeper's ruok four-letter word; a running server answers imok.
func zkRuok(ctx context.Context, addr string) error {
	b, err := zkCommand(ctx, addr, "ruok")
	if err == nil && b != "imok" {
		err = fmt.Errorf("ruok answered %q", b)
	}
	return err
}

// zkCommand sends a four-letter word and returns the answer.
func zkCommand(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, _ := io.ReadAll(io.LimitReader(conn, 4096))
	return string(b), nil
}

// stop shuts the server down.
func (z *zookeeper) stop(timeout time.Duration) error {
	return z.proc.stop(timeout)
}
