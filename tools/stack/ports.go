package stack

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Ports holds every loopback port the stack listens on.
type Ports struct {
	// Gateway, User, Scene and Session are the product services' HTTP ports; WorkerHealth
	// serves the worker's /healthz and /readyz, MediaHealth the media worker's.
	Gateway, User, Scene, Session, WorkerHealth, MediaHealth int
	// Postgres is the Postgres server port.
	Postgres int
	// ClickHouseTCP is ClickHouse's native protocol, ClickHouseHTTP its HTTP interface.
	ClickHouseTCP, ClickHouseHTTP int
	// ObjectStore is versitygw's S3 port.
	ObjectStore int
	// TemporalFrontend is the gRPC port clients dial; TemporalHTTP is the frontend's HTTP API;
	// History, Matching and Worker are the server's internal gRPC ports (all in this process).
	TemporalFrontend, TemporalHTTP                    int
	TemporalHistory, TemporalMatching, TemporalWorker int
	// TemporalUI serves the Temporal web UI.
	TemporalUI int
	// Demo is the demo host page's port (Options.Demo).
	Demo int
}

// DefaultPorts are the fixed ports of `make dev`, chosen to match the product's config defaults
// for the services and to stay clear of system-wide Postgres and ClickHouse installs.
func DefaultPorts() Ports {
	return Ports{
		Gateway: 8080, User: 8081, Scene: 8082, Session: 8083, WorkerHealth: 8084, MediaHealth: 8085,
		Postgres:      15432,
		ClickHouseTCP: 19000, ClickHouseHTTP: 18123,
		ObjectStore:      7070,
		TemporalFrontend: 7233, TemporalHTTP: 7234,
		TemporalHistory: 7235, TemporalMatching: 7236, TemporalWorker: 7237,
		TemporalUI: 8233,
		Demo:       8090,
	}
}

// Fields lists each port with its flag name, so callers (the CLI, random assignment, the
// free-port check) walk one table instead of repeating fifteen names.
func (p *Ports) Fields() []PortField {
	return []PortField{
		{"gateway-port", "gateway", &p.Gateway},
		{"user-port", "user service", &p.User},
		{"scene-port", "scene service", &p.Scene},
		{"session-port", "session service", &p.Session},
		{"worker-health-port", "worker health", &p.WorkerHealth},
		{"media-health-port", "media worker health", &p.MediaHealth},
		{"postgres-port", "postgres", &p.Postgres},
		{"clickhouse-port", "clickhouse native", &p.ClickHouseTCP},
		{"clickhouse-http-port", "clickhouse http", &p.ClickHouseHTTP},
		{"s3-port", "versitygw", &p.ObjectStore},
		{"temporal-port", "temporal frontend", &p.TemporalFrontend},
		{"temporal-http-port", "temporal frontend http", &p.TemporalHTTP},
		{"temporal-history-port", "temporal history", &p.TemporalHistory},
		{"temporal-matching-port", "temporal matching", &p.TemporalMatching},
		{"temporal-worker-port", "temporal worker", &p.TemporalWorker},
		{"temporal-ui-port", "temporal ui", &p.TemporalUI},
		{"demo-port", "demo host", &p.Demo},
	}
}

// PortField is one named port of Ports.
type PortField struct {
	// Flag is the command-line flag that sets the port.
	Flag string
	// Label names the port's owner in messages.
	Label string
	// Port points into the Ports value.
	Port *int
}

// RandomPorts returns free loopback ports, all distinct. Every listener is held until all are
// chosen so the kernel cannot hand the same port out twice.
func RandomPorts() (Ports, error) {
	var p Ports
	fields := p.Fields()
	listeners := make([]net.Listener, 0, len(fields))
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for _, f := range fields {
		l, err := net.Listen("tcp", loopback+":0")
		if err != nil {
			return Ports{}, fmt.Errorf("pick a free port for %s: %w", f.Label, err)
		}
		listeners = append(listeners, l)
		*f.Port = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// checkFree fails, naming every busy port and its flag, when something already listens on one
// of the given ports: a clear message beats a child dying with "address already in use".
func checkFree(fields []PortField) error {
	var busy, held []string
	seen := map[int]string{}
	for _, f := range fields {
		if other, dup := seen[*f.Port]; dup {
			busy = append(busy, fmt.Sprintf("%d is given to both %s and %s", *f.Port, other, f.Label))
			continue
		}
		seen[*f.Port] = f.Label
		l, err := net.Listen("tcp", hostPort(*f.Port))
		if err != nil {
			busy = append(busy, fmt.Sprintf("%d (%s, --%s) is in use", *f.Port, f.Label, f.Flag))
			held = append(held, strconv.Itoa(*f.Port))
			continue
		}
		l.Close()
	}
	if len(busy) > 0 {
		// One line that says what to do, with the command that names the holder (a newcomer's
		// usual case is a system-wide service or a forgotten server on a default port).
		find := ""
		if len(held) > 0 {
			find = fmt.Sprintf(" (`ss -ltnp | grep -E ':(%s) '` shows which process)", strings.Join(held, "|"))
		}
		return fmt.Errorf("ports: %s; stop whatever holds them%s, or pick other ports with the flags above or --random-ports (bin/stack --dir .dev --demo --random-ports)",
			strings.Join(busy, "; "), find)
	}
	return nil
}
