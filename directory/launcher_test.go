package directory

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Variables as Open MPI 4.1's mpirun sets them (two ranks of one job).
func ompiEnv(rank int, jobid string) map[string]string {
	return map[string]string{
		"OMPI_COMM_WORLD_RANK":    strconv.Itoa(rank),
		"OMPI_COMM_WORLD_SIZE":    "2",
		"PMIX_RANK":               strconv.Itoa(rank),
		"PMIX_NAMESPACE":          jobid,
		"OMPI_MCA_ess_base_jobid": jobid,
		"OMPI_MCA_orte_hnp_uri":   "1588068352.0;tcp://192.0.2.2,172.17.0.1:60477;tcp6://[fd00::2]:53221",
	}
}

// Variables as srun sets them for one task of a step.
func slurmEnv(rank int, job, step string) map[string]string {
	return map[string]string{
		"SLURM_PROCID":             strconv.Itoa(rank),
		"SLURM_NTASKS":             "4",
		"SLURM_JOB_ID":             job,
		"SLURM_STEP_ID":            step,
		"SLURM_JOB_NODELIST":       "node[01-04]",
		"SLURM_STEP_NODELIST":      "node[02-03]",
		"SLURM_LAUNCH_NODE_IPADDR": "10.1.0.1",
		"SLURM_CLUSTER_NAME":       "c",
	}
}

func mustParse(t *testing.T, env map[string]string) Env {
	t.Helper()
	e, err := ParseEnv(lookupIn(env))
	if err != nil {
		t.Fatalf("%v: %v", env, err)
	}
	return e
}

func TestDeriveFromOpenMPI(t *testing.T) {
	r0, r1 := mustParse(t, ompiEnv(0, "1588068353")), mustParse(t, ompiEnv(1, "1588068353"))
	if !r0.HasJobKey || r0.JobKey != r1.JobKey {
		t.Fatalf("keys %x %x", r0.JobKey, r1.JobKey)
	}
	host, port, _ := net.SplitHostPort(r0.Coord)
	if host != "192.0.2.2" || r0.Coord != r1.Coord || r0.CoordFrom != "openmpi" {
		t.Fatalf("coord %q %q from %q", r0.Coord, r1.Coord, r0.CoordFrom)
	}
	if p, _ := strconv.Atoi(port); p < jobPortBase || p >= jobPortBase+jobPortSpan {
		t.Fatalf("port %d", p)
	}
	if r0.Directory != ServeAll || r1.Directory != ServeNever || r0.Rank != 0 || r1.Size != 2 {
		t.Fatalf("rank 0 %+v, rank 1 %+v", r0, r1)
	}
	other := mustParse(t, ompiEnv(0, "1588068354"))
	if other.JobKey == r0.JobKey || other.Coord == r0.Coord {
		t.Fatalf("another job shares key or address: %x %s", other.JobKey, other.Coord)
	}
	// IPv6 only.
	env := ompiEnv(1, "7")
	env["OMPI_MCA_orte_hnp_uri"] = "7.0;tcp6://[fd00::2]:53221"
	if e := mustParse(t, env); !strings.HasPrefix(e.Coord, "[fd00::2]:") {
		t.Fatalf("v6 coord %q", e.Coord)
	}
	// mpirun inside a Slurm allocation: Open MPI's job wins.
	env = ompiEnv(1, "1588068353")
	for k, v := range slurmEnv(0, "5", "") {
		env[k] = v
	}
	if e := mustParse(t, env); e.JobKey != r1.JobKey || e.Coord != r1.Coord || e.Rank != 1 {
		t.Fatalf("mpirun in Slurm: %+v", e)
	}
}

func TestDeriveFromSlurm(t *testing.T) {
	r0, r3 := mustParse(t, slurmEnv(0, "42", "0")), mustParse(t, slurmEnv(3, "42", "0"))
	if !r0.HasJobKey || r0.JobKey != r3.JobKey || r0.Coord != r3.Coord || r0.CoordFrom != "slurm" {
		t.Fatalf("%+v / %+v", r0, r3)
	}
	if host, _, _ := net.SplitHostPort(r0.Coord); host != "node02" {
		t.Fatalf("directory host %q, want the step's first node", host)
	}
	if r0.Directory != ServeAll || r3.Directory != ServeNever || r0.Size != 4 {
		t.Fatalf("rank 0 %+v, rank 3 %+v", r0, r3)
	}
	step1 := mustParse(t, slurmEnv(0, "42", "1"))
	if step1.JobKey == r0.JobKey || step1.Coord == r0.Coord {
		t.Fatalf("two steps share key or address")
	}
	// The batch script itself has no step id.
	env := slurmEnv(0, "42", "")
	delete(env, "SLURM_STEP_ID")
	delete(env, "SLURM_STEP_NODELIST")
	if e := mustParse(t, env); e.JobKey == r0.JobKey || !strings.HasPrefix(e.Coord, "node01:") {
		t.Fatalf("batch step: %+v", e)
	}
	// Ports reserved by Slurm are used.
	env = slurmEnv(2, "42", "0")
	env["SLURM_STEP_RESV_PORTS"] = "12345-12350"
	if e := mustParse(t, env); e.Coord != "node02:12345" {
		t.Fatalf("reserved port: %q", e.Coord)
	}
	// No node list: the launch node.
	env = slurmEnv(2, "42", "0")
	delete(env, "SLURM_STEP_NODELIST")
	delete(env, "SLURM_JOB_NODELIST")
	if e := mustParse(t, env); !strings.HasPrefix(e.Coord, "10.1.0.1:") {
		t.Fatalf("launch node: %q", e.Coord)
	}
}

// PCOR_* variables override what the launcher gives.
func TestDeriveOverridden(t *testing.T) {
	env := slurmEnv(0, "42", "0")
	env["PCOR_COORD"] = "10.9.9.9:7000"
	e := mustParse(t, env)
	if e.Coord != "10.9.9.9:7000" || e.CoordFrom != "" || e.Directory != ServeAuto || !e.HasJobKey {
		t.Fatalf("PCOR_COORD: %+v", e)
	}
	env["PCOR_JOBKEY"] = "abc"
	env["PCOR_DIRECTORY"] = "join"
	if e := mustParse(t, env); e.JobKey != 0xabc || e.Directory != ServeNever {
		t.Fatalf("PCOR_JOBKEY, PCOR_DIRECTORY: %+v", e)
	}
	env = ompiEnv(0, "9")
	env["PCOR_DIRECTORY"] = "embed"
	if e := mustParse(t, env); e.Directory != ServeEmbed || e.CoordFrom != "openmpi" {
		t.Fatalf("PCOR_DIRECTORY with a derived address: %+v", e)
	}
	// Without a rank nothing is derived: a process joining later must be
	// told where the directory is.
	env = slurmEnv(0, "42", "0")
	delete(env, "SLURM_PROCID")
	if e := mustParse(t, env); e.Coord != "" || !e.HasJobKey {
		t.Fatalf("no rank: %+v", e)
	}
}

func TestDeriveErrors(t *testing.T) {
	for name, change := range map[string]func(map[string]string){
		"bad host list":  func(m map[string]string) { m["SLURM_STEP_NODELIST"] = "node[01-" },
		"nested list":    func(m map[string]string) { m["SLURM_STEP_NODELIST"] = "n[1[2]]" },
		"empty list":     func(m map[string]string) { m["SLURM_STEP_NODELIST"] = ",n1" },
		"bad resv ports": func(m map[string]string) { m["SLURM_STEP_RESV_PORTS"] = "x-y" },
		"no host": func(m map[string]string) {
			delete(m, "SLURM_STEP_NODELIST")
			delete(m, "SLURM_JOB_NODELIST")
			delete(m, "SLURM_LAUNCH_NODE_IPADDR")
		},
	} {
		env := slurmEnv(1, "42", "0")
		change(env)
		if e, err := ParseEnv(lookupIn(env)); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), EnvCoord) {
			t.Errorf("%s: %+v, %v; want ErrEnv naming %s", name, e, err, EnvCoord)
		}
		// PCOR_COORD makes the launcher's host irrelevant.
		env["PCOR_COORD"] = "127.0.0.1:1"
		if _, err := ParseEnv(lookupIn(env)); err != nil {
			t.Errorf("%s with PCOR_COORD: %v", name, err)
		}
	}
	env := ompiEnv(1, "9")
	env["OMPI_MCA_orte_hnp_uri"] = "9.0;usock://x"
	if _, err := ParseEnv(lookupIn(env)); !errors.Is(err, ErrEnv) {
		t.Errorf("hnp uri without TCP: %v", err)
	}
}

func TestFirstHost(t *testing.T) {
	for in, want := range map[string]string{
		"vm":                     "vm",
		"n1,n2":                  "n1",
		"node[01-04,07]":         "node01",
		"node[07,01-04],login":   "node07",
		"rack[1-2]-n[003-004]":   "rack1-n003",
		"a-b.example.org,c[1-2]": "a-b.example.org",
	} {
		if got, err := firstHost(in); err != nil || got != want {
			t.Errorf("firstHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Two jobs given the same directory address: the second job's rank 0
// cannot serve it and says why; its other ranks meet the first job's
// directory and say it serves another job.
func TestTwoJobsOneAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	coord := freeAddr(t)
	_, port, _ := net.SplitHostPort(coord)
	first := Env{Coord: coord, Rank: 0, Size: 2, JobKey: 1, HasJobKey: true, Directory: ServeAuto}
	c, srv, err := Bootstrap(ctx, first, JoinRequest{}, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer c.Close()

	second := Env{Coord: coord, Rank: 1, Size: 2, JobKey: 2, HasJobKey: true, Directory: ServeNever}
	_, _, err = Bootstrap(ctx, second, JoinRequest{}, ServerConfig{})
	if !errors.Is(err, ErrBadJobKey) || !strings.Contains(err.Error(), "serves another job") {
		t.Fatalf("second job's rank 1: %v", err)
	}
	second.Rank, second.Directory = 0, ServeAuto
	if _, _, err = Bootstrap(ctx, second, JoinRequest{}, ServerConfig{}); !errors.Is(err, ErrBadJobKey) || !strings.Contains(err.Error(), "same directory address") {
		t.Fatalf("second job's rank 0 on a fixed address: %v", err)
	}
	second.Coord, second.CoordFrom, second.Directory = net.JoinHostPort("localhost", port), "slurm", ServeAll
	_, _, err = Bootstrap(ctx, second, JoinRequest{}, ServerConfig{})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "derived from the slurm job") || !strings.Contains(err.Error(), EnvCoord) {
		t.Fatalf("second job's rank 0 on a derived address: %v", err)
	}
}

// Rank 0 under a launcher serves on every address of its host, and
// refuses when the derived host is not its own.
func TestServeAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	env := Env{Coord: net.JoinHostPort("localhost", port), Rank: 0, Size: 2, JobKey: 3, HasJobKey: true, Directory: ServeAll}
	c, srv, err := Bootstrap(ctx, env, JoinRequest{}, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer c.Close()
	if a := srv.Addr().(*net.TCPAddr); !a.IP.IsUnspecified() {
		t.Fatalf("served on %v, want every address", a)
	}
	env.Coord = net.JoinHostPort("198.51.100.77", port) // TEST-NET-2: never this host
	if _, _, err := Bootstrap(ctx, env, JoinRequest{}, ServerConfig{}); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "not this host") {
		t.Fatalf("derived host elsewhere: %v", err)
	}
}
