package directory

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Per-job directory ports are derived from the launcher's job id into
// [jobPortBase, jobPortBase+jobPortSpan): below Linux's ephemeral range
// (32768 and up), so no outgoing connection holds one by chance.
const (
	jobPortBase = 12000
	jobPortSpan = 20000
)

// launchJob is what a launcher tells every process of one job alike.
type launchJob struct {
	name string // "openmpi" or "slurm"
	id   string // job identity, unique per launch
	host string // where rank 0 runs (the directory host)
	port int    // a port the launcher reserved for the job, or 0
	err  error  // why host or port cannot be used, if so
}

// key is the job key derived from the launcher's job identity.
func (j launchJob) key() uint64 { return xxhash.Sum64String(j.name + ":" + j.id) }

// coord is the directory address derived for the job: rank 0's host and
// the reserved port, or one derived from the job identity.
func (j launchJob) coord() (string, error) {
	if j.err != nil {
		return "", j.err
	}
	port := j.port
	if port == 0 {
		port = jobPortBase + int(xxhash.Sum64String("port:"+j.name+":"+j.id)%jobPortSpan)
	}
	return net.JoinHostPort(j.host, strconv.Itoa(port)), nil
}

// detectJob reads the launcher's job identity and rank 0's host. Open MPI
// is tried first: mpirun inside a Slurm allocation inherits the batch
// job's Slurm variables. ok is false when no launcher is recognised; the
// job's err says why its host or port cannot be used, if so.
func detectJob(get func(string) string) (j launchJob, ok bool) {
	if id := firstOf(get, "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"); id != "" && get("OMPI_COMM_WORLD_RANK") != "" {
		uri := get("OMPI_MCA_orte_hnp_uri")
		j = launchJob{name: "openmpi", id: uri + "/" + id}
		j.host, j.err = hnpHost(uri)
		return j, true
	}
	job := get("SLURM_JOB_ID")
	if job == "" {
		return launchJob{}, false
	}
	step := get("SLURM_STEP_ID")
	if step == "" {
		step = "batch" // the batch script itself, started by sbatch
	}
	j = launchJob{name: "slurm", id: get("SLURM_CLUSTER_NAME") + "/" + job + "." + step}
	if nodes := firstOf(get, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"); nodes != "" {
		j.host, j.err = firstHost(nodes)
	} else if j.host = get("SLURM_LAUNCH_NODE_IPADDR"); j.host == "" {
		j.err = fmt.Errorf("%w: Slurm job %s gives no node list (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST) nor SLURM_LAUNCH_NODE_IPADDR to find the directory host", ErrEnv, job)
	}
	if ports := get("SLURM_STEP_RESV_PORTS"); ports != "" && j.err == nil {
		// Ports Slurm reserved for this step (MpiParams=ports=...).
		first, _, _ := strings.Cut(ports, "-")
		first, _, _ = strings.Cut(first, ",")
		if p, err := strconv.ParseUint(first, 10, 16); err != nil || p == 0 {
			j.err = fmt.Errorf("%w: SLURM_STEP_RESV_PORTS=%q", ErrEnv, ports)
		} else {
			j.port = int(p)
		}
	}
	return j, true
}

func firstOf(get func(string) string, names ...string) string {
	for _, n := range names {
		if v := get(n); v != "" {
			return v
		}
	}
	return ""
}

// hnpHost is the first address in Open MPI's OMPI_MCA_orte_hnp_uri, the
// contact of mpirun itself: "jobid.vpid;tcp://10.0.0.1,172.17.0.1:port;
// tcp6://[fd00::2]:port". IPv4 addresses are preferred.
func hnpHost(uri string) (string, error) {
	if uri == "" {
		return "", fmt.Errorf("%w: Open MPI gives no OMPI_MCA_orte_hnp_uri (mpirun's address)", ErrEnv)
	}
	var v6 string
	for _, part := range strings.Split(uri, ";")[1:] {
		scheme, rest, ok := strings.Cut(part, "://")
		if !ok || (scheme != "tcp" && scheme != "tcp6") {
			continue
		}
		if i := strings.LastIndexByte(rest, ':'); i > 0 {
			rest = rest[:i]
		}
		for _, a := range strings.Split(rest, ",") {
			a = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
			ip := net.ParseIP(a)
			switch {
			case ip == nil:
			case ip.To4() != nil:
				return a, nil
			case v6 == "":
				v6 = a
			}
		}
	}
	if v6 == "" {
		return "", fmt.Errorf("%w: no TCP address in OMPI_MCA_orte_hnp_uri=%q", ErrEnv, uri)
	}
	return v6, nil
}

// firstHost is the first host of a Slurm host list such as
// "node[01-04,07],login1" or "rack[1-2]-n[3-4]": task 0 runs there under
// Slurm's block and cyclic distributions.
func firstHost(list string) (string, error) {
	var b strings.Builder
	depth := 0
	skip := false // inside a bracket, past its first number
	for _, r := range list {
		switch {
		case r == '[':
			if depth > 0 {
				return "", fmt.Errorf("%w: Slurm host list %q", ErrEnv, list)
			}
			depth, skip = 1, false
		case r == ']':
			if depth == 0 {
				return "", fmt.Errorf("%w: Slurm host list %q", ErrEnv, list)
			}
			depth = 0
		case depth > 0:
			if r == ',' || r == '-' {
				skip = true
			} else if !skip {
				if r < '0' || r > '9' {
					return "", fmt.Errorf("%w: Slurm host list %q", ErrEnv, list)
				}
				b.WriteRune(r)
			}
		case r == ',':
			if b.Len() == 0 {
				return "", fmt.Errorf("%w: Slurm host list %q", ErrEnv, list)
			}
			return b.String(), nil
		default:
			b.WriteRune(r)
		}
	}
	if depth > 0 || b.Len() == 0 {
		return "", fmt.Errorf("%w: Slurm host list %q", ErrEnv, list)
	}
	return b.String(), nil
}
