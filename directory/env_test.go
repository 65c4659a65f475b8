package directory

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestParseEnvLaunchers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		rank     int
		size     int
		launcher string
	}{
		{"none", map[string]string{}, AnyProc, 0, ""},
		{"pcor", map[string]string{"PCOR_RANK": "2", "PCOR_SIZE": "4"}, 2, 4, "pcor"},
		{"slurm", map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "8"}, 5, 8, "slurm"},
		{"openmpi", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3"}, 1, 3, "openmpi"},
		{"pmi", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2"}, 0, 2, "pmi"},
		{"pmix", map[string]string{"PMIX_RANK": "7"}, 7, 0, "pmix"},
		{"pmix with slurm size", map[string]string{"PMIX_RANK": "7", "SLURM_NTASKS": "16"}, 7, 16, "pmix"},
		{"pcor size overrides", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "PCOR_SIZE": "6"}, 1, 6, "pmi"},
		{"mpirun inside slurm", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}, 3, 4, "openmpi"},
		{"pcor wins", map[string]string{"PCOR_RANK": "1", "PCOR_SIZE": "2", "SLURM_PROCID": "9", "SLURM_NTASKS": "10"}, 1, 2, "pcor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseEnv(lookupIn(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if e.Rank != tc.rank || e.Size != tc.size || e.Launcher != tc.launcher {
				t.Fatalf("rank %d size %d launcher %q; want %d %d %q", e.Rank, e.Size, e.Launcher, tc.rank, tc.size, tc.launcher)
			}
		})
	}
}

func TestParseEnvKeyAndCoord(t *testing.T) {
	e, err := ParseEnv(lookupIn(map[string]string{"PCOR_COORD": "10.0.0.1:7000", "PCOR_JOBKEY": "00000000deadbeef", "PCOR_DIRECTORY": "join", "PCOR_LISTEN": "10.0.0.2:0"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Coord != "10.0.0.1:7000" || e.JobKey != 0xdeadbeef || !e.HasJobKey || e.Directory != ServeNever || e.Listen != "10.0.0.2:0" {
		t.Fatalf("%+v", e)
	}
	if e, _ := ParseEnv(lookupIn(map[string]string{"PCOR_JOBKEY": "0xFFFFFFFFFFFFFFFF"})); e.JobKey != ^uint64(0) {
		t.Fatalf("0x key: %x", e.JobKey)
	}
	if k := FormatJobKey(0xabc); k != "0000000000000abc" {
		t.Fatalf("format: %s", k)
	}
	// Slurm: all tasks of a step derive the same key; another step differs.
	s1, _ := ParseEnv(lookupIn(map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NODELIST": "n1"}))
	s2, _ := ParseEnv(lookupIn(map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_STEP_NODELIST": "n1"}))
	s3, _ := ParseEnv(lookupIn(map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "1"}))
	if !s1.HasJobKey || s1.JobKey != s2.JobKey || s1.JobKey == s3.JobKey {
		t.Fatalf("slurm keys %x %x %x", s1.JobKey, s2.JobKey, s3.JobKey)
	}
	if e, _ := ParseEnv(lookupIn(nil)); e.HasJobKey || e.Directory != ServeAuto {
		t.Fatalf("empty env: %+v", e)
	}
}

func TestParseEnvErrors(t *testing.T) {
	for _, env := range []map[string]string{
		{"PCOR_RANK": "-1"},
		{"PCOR_RANK": "x"},
		{"PCOR_RANK": "4", "PCOR_SIZE": "4"},
		{"SLURM_PROCID": "0", "SLURM_NTASKS": "many"},
		{"PCOR_SIZE": "99999999999"},
		{"PCOR_JOBKEY": "xyz"},
		{"PCOR_JOBKEY": "0x"},
		{"PCOR_JOBKEY": "11112222333344445"},
		{"PCOR_DIRECTORY": "sometimes"},
	} {
		if e, err := ParseEnv(lookupIn(env)); !errors.Is(err, ErrEnv) {
			t.Errorf("%v: got %+v, %v; want ErrEnv", env, e, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("PCOR_RANK", "1")
	t.Setenv("PCOR_SIZE", "2")
	t.Setenv("PCOR_JOBKEY", "ff")
	t.Setenv("PCOR_COORD", "127.0.0.1:1")
	e, err := FromEnv()
	if err != nil || e.Rank != 1 || e.Size != 2 || e.JobKey != 0xff || e.Coord != "127.0.0.1:1" {
		t.Fatalf("%+v %v", e, err)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestBootstrapEmbedded: rank 1 starts first and waits; rank 0 finds the
// coordinator address free and local, serves the directory, and both join.
func TestBootstrapEmbedded(t *testing.T) {
	coord := freeAddr(t)
	env := Env{Coord: coord, Size: 2, JobKey: testKey, HasJobKey: true, Directory: ServeAuto}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		c   *Client
		s   *Server
		err error
	}
	r1 := make(chan result, 1)
	go func() {
		e := env
		e.Rank = 1
		c, s, err := Bootstrap(ctx, e, JoinRequest{}, ServerConfig{})
		r1 <- result{c, s, err}
	}()
	time.Sleep(100 * time.Millisecond) // let rank 1 find nobody there
	e0 := env
	e0.Rank = 0
	c0, s0, err := Bootstrap(ctx, e0, JoinRequest{}, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if s0 == nil {
		t.Fatal("rank 0 did not serve the directory")
	}
	defer s0.Close()
	defer c0.Close()
	r := <-r1
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.c.Close()
	if r.s != nil || r.c.Proc() != 1 || c0.Proc() != 0 {
		t.Fatalf("rank 1 served %v, procs %d %d", r.s != nil, r.c.Proc(), c0.Proc())
	}
	if err := c0.Wait(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// A second rank 0 (say, a restarted one) finds the address served and
	// only joins, which is refused because 0 is taken.
	_, s, err := Bootstrap(ctx, e0, JoinRequest{}, ServerConfig{})
	if !errors.Is(err, ErrProcTaken) || s != nil {
		t.Fatalf("second rank 0: %v", err)
	}
}

func TestBootstrapErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := Bootstrap(ctx, Env{HasJobKey: true}, JoinRequest{}, ServerConfig{}); !errors.Is(err, ErrNoCoord) {
		t.Fatal(err)
	}
	if _, _, err := Bootstrap(ctx, Env{Coord: "127.0.0.1:1"}, JoinRequest{}, ServerConfig{}); !errors.Is(err, ErrNoJobKey) {
		t.Fatal(err)
	}
	// Nobody serves and this process must not: it retries until ctx ends.
	env := Env{Coord: freeAddr(t), Rank: 0, JobKey: 1, HasJobKey: true, Directory: ServeNever}
	start := time.Now()
	if _, _, err := Bootstrap(ctx, env, JoinRequest{}, ServerConfig{}); err == nil {
		t.Fatal("joined a directory nobody serves")
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("gave up before the context ended")
	}
}

func TestIsLocalAddr(t *testing.T) {
	ctx := context.Background()
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "0.0.0.0:1": true,
		"192.0.2.1:1": false, "nonsense": false,
	} {
		if got := IsLocalAddr(ctx, addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}
