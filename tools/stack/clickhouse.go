package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"
)

// clickhouse runs Debian's clickhouse-server (18.16) as a plain process with a config of its own,
// so it never touches /etc/clickhouse-server or /var/lib/clickhouse.
type clickhouse struct {
	// name is the process's name and the base of its log files: "clickhouse", or
	// "clickhouse-<shard>-<replica>" in the cluster shape.
	name     string
	dir      string // DIR/<name>: config and data
	logDir   string
	tcpPort  int
	httpPort int
	// node, in the cluster shape, places the server in the cluster (chcluster.go).
	node *chNode
	log  *slog.Logger
	proc *process
}

func newClickHouse(dir string, tcpPort, httpPort int, log *slog.Logger) *clickhouse {
	return &clickhouse{
		name:     "clickhouse",
		dir:      filepath.Join(dir, "clickhouse"),
		logDir:   filepath.Join(dir, "logs"),
		tcpPort:  tcpPort,
		httpPort: httpPort,
		log:      log.With("part", "clickhouse"),
	}
}

// addr is the native-protocol address the product's clickhouse-go client dials.
func (c *clickhouse) addr() string { return hostPort(c.tcpPort) }

// httpURL is the HTTP interface, handy for curl and ad-hoc queries.
func (c *clickhouse) httpURL() string { return httpURL(c.httpPort) }

// stdoutLog receives whatever the server prints before its own logger is configured, which is
// where config errors end up.
func (c *clickhouse) stdoutLog() string { return filepath.Join(c.logDir, c.name+".stdout.log") }

// serverLog is the server's own log file.
func (c *clickhouse) serverLog() string { return filepath.Join(c.logDir, c.name+".log") }

// findClickHouse locates the server binary; Debian installs it under /usr/bin (a link into
// /usr/sbin on some releases).
func findClickHouse() (string, error) {
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("clickhouse: clickhouse-server not found: run `make deps` (apt-get install -y clickhouse-server)")
}

// start writes the config, starts the server and waits for /ping.
func (c *clickhouse) start(ctx context.Context, timeout time.Duration) error {
	bin, err := findClickHouse()
	if err != nil {
		return err
	}
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			return fmt.Errorf("clickhouse: %w", err)
		}
	}
	if err := c.writeConfig(); err != nil {
		return err
	}
	if err := c.stopOrphan(); err != nil {
		return err
	}
	c.proc, err = startProcess(procSpec{
		name:        c.name,
		path:        bin,
		args:        []string{"--config-file=" + filepath.Join(c.dir, "config.xml")},
		env:         []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "TZ=UTC"},
		dir:         c.dir,
		logPath:     c.stdoutLog(),
		deathSignal: syscall.SIGTERM, // let it finish merges' bookkeeping if the runner dies
	})
	if err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	err = waitHealthy(ctx, c.name, c.proc, c.serverLog(), timeout, httpCheck(c.httpURL()+"/ping", "Ok."))
	if err != nil {
		return fmt.Errorf("%w\n(start-up errors also land in %s)", err, c.stdoutLog())
	}
	return nil
}

// stopOrphan stops a server a killed runner left holding the data directory; 18.16 records its
// pid in the status file and refuses to share the directory.
func (c *clickhouse) stopOrphan() error {
	f, err := os.Open(filepath.Join(c.dir, "data", "status"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "PID:")
		if !ok {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(v))
		cfg := filepath.Join(c.dir, "config.xml")
		if pidAlive(pid) && strings.Contains(pidCmdline(pid), cfg) {
			c.log.Warn("stopping a server left over from an earlier run", "pid", pid)
			if err := stopOrphan(pid, syscall.SIGTERM, 30*time.Second); err != nil {
				return fmt.Errorf("clickhouse: stop leftover server %d: %w", pid, err)
			}
		}
	}
	return nil
}

// stop shuts the server down.
func (c *clickhouse) stop(timeout time.Duration) error {
	return c.proc.stop(timeout)
}

// writeConfig renders config.xml and users.xml. They are rewritten on every start because the
// ports may change between runs (--random-ports).
func (c *clickhouse) writeConfig() error {
	data := map[string]any{
		"Dir":      c.dir,
		"LogDir":   c.logDir,
		"TCPPort":  c.tcpPort,
		"HTTPPort": c.httpPort,
		"Host":     loopback,
		"Name":     c.name,
		"Node":     c.node,
	}
	for name, tmpl := range map[string]*template.Template{"config.xml": clickhouseConfig, "users.xml": clickhouseUsers} {
		var sb strings.Builder
		if err := tmpl.Execute(&sb, data); err != nil {
			return fmt.Errorf("clickhouse: render %s: %w", name, err)
		}
		if err := writeFileAtomic(filepath.Join(c.dir, name), []byte(sb.String()), 0o644); err != nil {
			return fmt.Errorf("clickhouse: write %s: %w", name, err)
		}
	}
	return nil
}

// clickhouseConfig is a minimal server config for 18.16 that newer servers also accept. No
// interserver port (single node) and no system log tables (they only grow in dev). The caches
// are kept small: the dev data set is tiny and the machine is shared with everything else.
var clickhouseConfig = template.Must(template.New("config").Parse(`<?xml version="1.0"?>
<!-- Written by the splathost stack runner on every start; edits are overwritten. -->
<yandex>
    <logger>
        <level>information</level>
        <log>{{.LogDir}}/{{.Name}}.log</log>
        <errorlog>{{.LogDir}}/{{.Name}}.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>{{.Host}}</listen_host>
    <http_port>{{.HTTPPort}}</http_port>
    <tcp_port>{{.TCPPort}}</tcp_port>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>{{.Dir}}/data/</path>
    <tmp_path>{{.Dir}}/tmp/</tmp_path>
    <user_files_path>{{.Dir}}/user_files/</user_files_path>
    <format_schema_path>{{.Dir}}/format_schemas/</format_schema_path>
    <users_config>{{.Dir}}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
{{- with .Node}}
    <!-- Cluster shape: replicas fetch parts from each other over HTTP on this port. -->
    <interserver_http_host>{{$.Host}}</interserver_http_host>
    <interserver_http_port>{{.InterserverPort}}</interserver_http_port>
    <remote_servers>
        <{{.Cluster}}>
{{- range .Shards}}
            <shard>
                <internal_replication>true</internal_replication>
{{- range .}}
                <replica><host>{{$.Host}}</host><port>{{.}}</port></replica>
{{- end}}
            </shard>
{{- end}}
        </{{.Cluster}}>
    </remote_servers>
    <zookeeper>
{{- range .ZooKeeper}}
        <node><host>{{$.Host}}</host><port>{{.}}</port></node>
{{- end}}
        <!-- A replica killed with -9 rejoins only once its old session expires. -->
        <session_timeout_ms>10000</session_timeout_ms>
    </zookeeper>
    <!-- ON CLUSTER statements (the migrator's) queue here and every node runs them. -->
    <distributed_ddl>
        <path>/clickhouse/task_queue/ddl</path>
    </distributed_ddl>
    <macros>
        <shard>{{.Shard}}</shard>
        <replica>{{$.Name}}</replica>
    </macros>
{{- end}}
</yandex>
`))

// clickhouseUsers defines the passwordless default user, reachable from loopback only.
var clickhouseUsers = template.Must(template.New("users").Parse(`<?xml version="1.0"?>
<!-- Written by the splathost stack runner on every start; edits are overwritten. -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <!-- In a cluster a Distributed table writes each shard's rows to one replica and
                 reads each shard from one replica: in_order makes both the first healthy one,
                 so a read sees an insert made the moment before (random missed 12 in 60 on the
                 cluster shape), and prefer_localhost_replica 0 keeps a node from reading its own
                 shard locally when another node wrote it to the first replica (24 in 60 missed,
                 inserting through clickhouse-1-1 and reading through clickhouse-1-2).
                 clickhouse-go 2.25 cannot send string settings to 18.16, so the profile sets
                 them. One server ignores both. -->
            <load_balancing>in_order</load_balancing>
            <prefer_localhost_replica>0</prefer_localhost_replica>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
`))
