package rdma

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestListenNoDevice(t *testing.T) {
	root := t.TempDir()
	if _, err := Listen(Config{Sysfs: root}); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Listen with no infiniband_verbs class: %v, want ErrNoDevice", err)
	}
	os.MkdirAll(filepath.Join(root, "class", "infiniband_verbs"), 0o755)
	if _, err := Listen(Config{Sysfs: root}); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Listen with an empty class: %v, want ErrNoDevice", err)
	}
}

func TestNoDeviceOnThisHost(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband_verbs"); err == nil {
		t.Skip("this host has RDMA devices")
	}
	if _, err := Listen(Config{}); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Listen on a host without RDMA: %v, want ErrNoDevice", err)
	}
	if p, err := ListenAddr(""); !errors.Is(err, ErrNoDevice) || p != nil {
		t.Fatalf("ListenAddr on a host without RDMA: %v %v, want ErrNoDevice and no port", p, err)
	}
}

func TestListenUnsupportedProvider(t *testing.T) {
	root := t.TempDir()
	mk := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(root, "class/infiniband_verbs/uverbs0/ibdev"), "mlx5_0")
	mk(filepath.Join(root, "class/infiniband/mlx5_0/node_type"), "1: CA")
	os.MkdirAll(filepath.Join(root, "bus/pci/drivers/mlx5_core"), 0o755)
	os.MkdirAll(filepath.Join(root, "class/infiniband/mlx5_0/device"), 0o755)
	if err := os.Symlink(filepath.Join(root, "bus/pci/drivers/mlx5_core"), filepath.Join(root, "class/infiniband/mlx5_0/device/driver")); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Config{Sysfs: root, Device: "mlx5_0"}); !errors.Is(err, ErrUnsupportedProvider) {
		t.Fatalf("Listen(mlx5_0): %v, want ErrUnsupportedProvider", err)
	}
}
