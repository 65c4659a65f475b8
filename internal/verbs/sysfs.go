package verbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoDevice is returned when the host has no RDMA device with a uverbs
// character device.
var ErrNoDevice = errors.New("rdma: no RDMA device")

// ErrUnsupportedProvider is returned for a device whose provider this
// package cannot drive (hardware with doorbells in device memory, iWARP).
var ErrUnsupportedProvider = errors.New("rdma: provider not supported")

// DefaultSysfs is the sysfs mount used for device discovery.
const DefaultSysfs = "/sys"

// DeviceInfo describes one RDMA device found in sysfs.
type DeviceInfo struct {
	Name     string // ib device name, e.g. "rxe0"
	Uverbs   string // uverbs device name, e.g. "uverbs0"
	DevPath  string // character device, e.g. "/dev/infiniband/uverbs0"
	Provider string // "rxe", "siw" or the kernel driver of a hardware device
	NodeType string // "CA", "RNIC", ...
	Parent   string // netdev of a software device
	DriverID uint32 // enum rdma_driver_id (rxe only)
	Ports    []int  // port numbers
}

// Supported reports whether this package can drive the device, with an
// error wrapping ErrUnsupportedProvider when it cannot.
func (d DeviceInfo) Supported() error {
	if d.Provider == "rxe" {
		return nil
	}
	return fmt.Errorf("%w: provider %s (device %s): only soft-RoCE (rxe) rings are implemented; hardware doorbells live in device memory", ErrUnsupportedProvider, d.Provider, d.Name)
}

// ListDevices returns the RDMA devices under sysfs (DefaultSysfs when
// empty) that have a uverbs character device, sorted by name. It returns
// ErrNoDevice when there are none.
func ListDevices(sysfs string) ([]DeviceInfo, error) {
	if sysfs == "" {
		sysfs = DefaultSysfs
	}
	verbsDir := filepath.Join(sysfs, "class", "infiniband_verbs")
	ents, err := os.ReadDir(verbsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (%s absent)", ErrNoDevice, verbsDir)
		}
		return nil, fmt.Errorf("rdma: %w", err)
	}
	var devs []DeviceInfo
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue
		}
		ibdev, err := readTrim(filepath.Join(verbsDir, e.Name(), "ibdev"))
		if err != nil || ibdev == "" {
			continue
		}
		d, err := describeDevice(sysfs, ibdev)
		if err != nil {
			return nil, err
		}
		d.Uverbs = e.Name()
		d.DevPath = "/dev/infiniband/" + e.Name()
		devs = append(devs, d)
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w (no uverbs device in %s)", ErrNoDevice, verbsDir)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs, nil
}

// describeDevice reads /sys/class/infiniband/<name>. A device with a
// bound kernel driver (device/driver link) is hardware; a software device
// has no parent bus device and names its netdev in "parent": a CA is rxe,
// an RNIC is siw.
func describeDevice(sysfs, name string) (DeviceInfo, error) {
	dir := filepath.Join(sysfs, "class", "infiniband", name)
	if _, err := os.Stat(dir); err != nil {
		return DeviceInfo{}, fmt.Errorf("rdma: device %s: %w", name, err)
	}
	d := DeviceInfo{Name: name}
	if nt, err := readTrim(filepath.Join(dir, "node_type")); err == nil {
		// "1: CA", "4: RNIC"
		if _, after, ok := strings.Cut(nt, ": "); ok {
			nt = after
		}
		d.NodeType = nt
	}
	d.Parent, _ = readTrim(filepath.Join(dir, "parent"))
	if drv, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		d.Provider = filepath.Base(drv)
	} else {
		switch {
		case d.NodeType == "RNIC":
			d.Provider = "siw"
		case d.NodeType == "CA" && (d.Parent != "" || strings.HasPrefix(name, "rxe")):
			d.Provider = "rxe"
			d.DriverID = driverIDRXE
		default:
			d.Provider = "unknown"
		}
	}
	if ps, err := os.ReadDir(filepath.Join(dir, "ports")); err == nil {
		for _, p := range ps {
			if n, err := strconv.Atoi(p.Name()); err == nil {
				d.Ports = append(d.Ports, n)
			}
		}
		sort.Ints(d.Ports)
	}
	return d, nil
}

// FindDevice returns the named device, or the first supported one when
// name is empty.
func FindDevice(sysfs, name string) (DeviceInfo, error) {
	devs, err := ListDevices(sysfs)
	if err != nil {
		return DeviceInfo{}, err
	}
	var firstErr error
	for _, d := range devs {
		if name != "" && d.Name != name {
			continue
		}
		if err := d.Supported(); err != nil {
			if name != "" {
				return DeviceInfo{}, err
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return d, nil
	}
	if name != "" {
		return DeviceInfo{}, fmt.Errorf("%w named %q", ErrNoDevice, name)
	}
	return DeviceInfo{}, firstErr
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
