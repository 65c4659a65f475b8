package rdma

import (
	"errors"
	"testing"

	"github.com/pcor-go/pcor/internal/verbs"
)

// requireDevice skips the test when the host has no supported RDMA device;
// these tests run inside the soft-RoCE VM (see ../shared/rdma-vm/README
// relative to the repository): go test -exec "$PWD/../shared/rdma-vm/run.sh --" ./fabric/rdma
func requireDevice(t testing.TB) {
	t.Helper()
	_, err := verbs.FindDevice("", "")
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("no RDMA device (%v): run under the soft-RoCE VM (../shared/rdma-vm/run.sh)", err)
	}
	if err != nil {
		t.Skipf("no supported RDMA device: %v", err)
	}
}
