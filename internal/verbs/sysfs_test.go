package verbs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNoDeviceEmptySysfs(t *testing.T) {
	root := t.TempDir()
	if _, err := ListDevices(root); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("no infiniband_verbs class: %v, want ErrNoDevice", err)
	}
	os.MkdirAll(filepath.Join(root, "class", "infiniband_verbs"), 0o755)
	if _, err := ListDevices(root); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("empty class: %v, want ErrNoDevice", err)
	}
}

func TestDiscoverRXEAndHardware(t *testing.T) {
	root := t.TempDir()
	// rxe: software CA with a parent netdev and no bus device.
	writeFile(t, filepath.Join(root, "class/infiniband_verbs/uverbs1/ibdev"), "rxe0")
	writeFile(t, filepath.Join(root, "class/infiniband/rxe0/node_type"), "1: CA")
	writeFile(t, filepath.Join(root, "class/infiniband/rxe0/parent"), "eth0")
	os.MkdirAll(filepath.Join(root, "class/infiniband/rxe0/ports/1"), 0o755)
	// mlx5: hardware with a bound driver.
	writeFile(t, filepath.Join(root, "class/infiniband_verbs/uverbs0/ibdev"), "mlx5_0")
	writeFile(t, filepath.Join(root, "class/infiniband/mlx5_0/node_type"), "1: CA")
	os.MkdirAll(filepath.Join(root, "bus/pci/drivers/mlx5_core"), 0o755)
	os.MkdirAll(filepath.Join(root, "class/infiniband/mlx5_0/device"), 0o755)
	if err := os.Symlink(filepath.Join(root, "bus/pci/drivers/mlx5_core"), filepath.Join(root, "class/infiniband/mlx5_0/device/driver")); err != nil {
		t.Fatal(err)
	}
	// siw: software RNIC.
	writeFile(t, filepath.Join(root, "class/infiniband_verbs/uverbs2/ibdev"), "siw0")
	writeFile(t, filepath.Join(root, "class/infiniband/siw0/node_type"), "4: RNIC")
	writeFile(t, filepath.Join(root, "class/infiniband/siw0/parent"), "eth0")

	devs, err := ListDevices(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 {
		t.Fatalf("%d devices: %+v", len(devs), devs)
	}
	byName := map[string]DeviceInfo{}
	for _, d := range devs {
		byName[d.Name] = d
	}
	rxe := byName["rxe0"]
	if rxe.Provider != "rxe" || rxe.DriverID != 14 || rxe.DevPath != "/dev/infiniband/uverbs1" || rxe.Parent != "eth0" || len(rxe.Ports) != 1 || rxe.Supported() != nil {
		t.Fatalf("rxe0: %+v", rxe)
	}
	mlx := byName["mlx5_0"]
	if err := mlx.Supported(); !errors.Is(err, ErrUnsupportedProvider) || !strings.Contains(err.Error(), "provider mlx5_core") {
		t.Fatalf("mlx5_0: %v", err)
	}
	if err := byName["siw0"].Supported(); !errors.Is(err, ErrUnsupportedProvider) || !strings.Contains(err.Error(), "siw") {
		t.Fatalf("siw0: %v", err)
	}
	d, err := FindDevice(root, "")
	if err != nil || d.Name != "rxe0" {
		t.Fatalf("FindDevice: %+v %v", d, err)
	}
	if _, err := FindDevice(root, "mlx5_0"); !errors.Is(err, ErrUnsupportedProvider) {
		t.Fatalf("FindDevice(mlx5_0): %v", err)
	}
	if _, err := FindDevice(root, "nope"); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("FindDevice(nope): %v", err)
	}
}
