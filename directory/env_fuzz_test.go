package directory

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseEnv: the bootstrap variables come from a launcher or a user:
// any environment (lines of NAME=value) is refused with an error wrapping
// ErrEnv or gives a consistent Env, whose directory address, when a
// launcher is recognised, is a host and a port or a clear error.
func FuzzParseEnv(f *testing.F) {
	f.Add("PCOR_RANK=1\nPCOR_SIZE=4\nPCOR_COORD=10.0.0.1:7000\nPCOR_JOBKEY=00000000000000ff")
	f.Add("OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\nPMIX_NAMESPACE=ns\nOMPI_MCA_orte_hnp_uri=1.0;tcp://10.0.0.1,172.17.0.1:5000;tcp6://[fd00::2]:5000")
	f.Add("SLURM_PROCID=3\nSLURM_NTASKS=8\nSLURM_JOB_ID=77\nSLURM_STEP_ID=0\nSLURM_STEP_NODELIST=rack[1-2]-n[3-4],login1\nSLURM_STEP_RESV_PORTS=12000-12010")
	f.Add("SLURM_PROCID=0\nSLURM_JOB_ID=5\nSLURM_NODELIST=node[01-04,07]")
	f.Add("SLURM_PROCID=0\nSLURM_JOB_ID=5\nSLURM_LAUNCH_NODE_IPADDR=10.1.1.1\nSLURM_STEP_RESV_PORTS=0")
	f.Add("PCOR_RANK=5\nPCOR_SIZE=4")
	f.Add("PCOR_DIRECTORY=embed\nPCOR_JOBKEY=0x12345678901234567")
	f.Add("SLURM_JOB_ID=5\nSLURM_NODELIST=a[[1]\nOMPI_MCA_orte_hnp_uri=;tcp6://[::1]:1")
	f.Fuzz(func(t *testing.T, env string) {
		vars := map[string]string{}
		for _, line := range strings.Split(env, "\n") {
			k, v, _ := strings.Cut(line, "=")
			vars[k] = v
		}
		lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
		e, err := ParseEnv(lookup)
		if err != nil {
			if !errors.Is(err, ErrEnv) {
				t.Fatalf("error %v does not wrap ErrEnv", err)
			}
			return
		}
		if e.Rank != AnyProc && e.Size > 0 && e.Rank >= e.Size {
			t.Fatalf("rank %d accepted with size %d", e.Rank, e.Size)
		}
		get := func(k string) string { return strings.TrimSpace(vars[k]) }
		if j, ok := detectJob(get); ok {
			if _, err := j.coord(); err != nil && !errors.Is(err, ErrEnv) {
				t.Fatalf("directory address error %v does not wrap ErrEnv", err)
			}
		}
	})
}

// FuzzParseJobKey: a job key is refused or parses to a key whose PCOR_JOBKEY
// form parses back to it.
func FuzzParseJobKey(f *testing.F) {
	f.Add(FormatJobKey(0xdeadbeefcafe))
	f.Add("0x1")
	f.Add("0X")
	f.Add("+1")
	f.Add("ffffffffffffffff0")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseJobKey(s)
		if err != nil {
			if !errors.Is(err, ErrEnv) {
				t.Fatalf("error %v does not wrap ErrEnv", err)
			}
			return
		}
		if again, err := ParseJobKey(FormatJobKey(k)); err != nil || again != k {
			t.Fatalf("%q: %#x, whose form %q parses as %#x, %v", s, k, FormatJobKey(k), again, err)
		}
	})
}
