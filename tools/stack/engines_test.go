package stack

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A postmaster killed with SIGKILL leaves its backends running in its process group; the
// supervisor must clear them before a new postmaster can start on the same data. clearGroup
// kills what is left of a group whose leader died and returns once it is gone.
func TestClearGroupTakesWhatTheLeaderLeft(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	for deadline := time.Now().Add(5 * time.Second); len(groupMembers(pgid)) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("group %d has %v, want the shell and two sleeps", pgid, groupMembers(pgid))
		}
	}
	_ = cmd.Process.Kill() // the leader only, as kill -9 of a postmaster
	_ = cmd.Wait()
	if left := groupMembers(pgid); len(left) != 2 {
		t.Fatalf("after the leader's death the group holds %v, want the two sleeps", left)
	}
	clearGroup(pgid, 5*time.Second)
	if left := groupMembers(pgid); len(left) != 0 {
		t.Fatalf("clearGroup left %v running", left)
	}
}
