package directory

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Environment variables read by FromEnv. See README.md.
const (
	EnvCoord     = "PCOR_COORD"
	EnvRank      = "PCOR_RANK"
	EnvSize      = "PCOR_SIZE"
	EnvJobKey    = "PCOR_JOBKEY"
	EnvDirectory = "PCOR_DIRECTORY"
	EnvListen    = "PCOR_LISTEN"
)

// Values of PCOR_DIRECTORY.
const (
	// ServeAuto (default): rank 0 serves the directory when PCOR_COORD is
	// a local address nobody serves yet.
	ServeAuto = "auto"
	// ServeEmbed: this process serves the directory (it fails if it
	// cannot listen on PCOR_COORD).
	ServeEmbed = "embed"
	// ServeNever: only join; the directory runs elsewhere.
	ServeNever = "join"
	// ServeAll: this process serves the directory on every address of
	// this host, at PCOR_COORD's port; PCOR_COORD must name this host.
	// Rank 0 does so when the address was derived from the launcher.
	ServeAll = "embed-all"
)

// Env is what the environment says about this process's place in the
// application.
type Env struct {
	// Coord is the directory's TCP address: PCOR_COORD, or derived from
	// the launcher's job (see CoordFrom).
	Coord string
	// CoordFrom names the launcher Coord was derived from ("openmpi",
	// "slurm"), or is "" when PCOR_COORD gave it.
	CoordFrom string
	// Rank is this process's rank, or AnyProc when no launcher gave one.
	Rank int
	// Size is the number of processes started, or 0 when unknown.
	Size int
	// JobKey is the application's key; HasJobKey says whether one was
	// given (PCOR_JOBKEY) or derived from the launcher's job id (Open
	// MPI's PMIX_NAMESPACE and mpirun's address; Slurm's job and step
	// ids).
	JobKey    uint64
	HasJobKey bool
	// Launcher names where Rank came from: "pcor", "openmpi", "pmi",
	// "pmix", "slurm", or "" when none.
	Launcher string
	// Directory is PCOR_DIRECTORY: ServeAuto, ServeEmbed, ServeNever or
	// ServeAll. With a derived Coord it defaults to ServeAll for rank 0
	// and ServeNever for the others.
	Directory string
	// Listen is PCOR_LISTEN, the ports to open (read by pcor.FromEnv).
	Listen string
}

// launchers are tried in order: the MPI launchers' own variables win over
// Slurm's, because mpirun inside a Slurm allocation inherits SLURM_PROCID
// from the batch shell while its own variables are per process.
var launchers = []struct{ name, rank, size string }{
	{"pcor", EnvRank, EnvSize},
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"pmi", "PMI_RANK", "PMI_SIZE"},
	{"pmix", "PMIX_RANK", ""},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS"},
}

// FromEnv reads the process environment (see ParseEnv).
func FromEnv() (Env, error) { return ParseEnv(os.LookupEnv) }

// ParseEnv reads the bootstrap variables through lookup. Malformed values
// are errors wrapping ErrEnv; absent ones leave their field unset.
func ParseEnv(lookup func(string) (string, bool)) (Env, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	e := Env{Rank: AnyProc, Coord: get(EnvCoord), Listen: get(EnvListen), Directory: ServeAuto}
	for _, l := range launchers {
		rs := get(l.rank)
		if rs == "" {
			continue
		}
		r, err := parseCount(l.rank, rs)
		if err != nil {
			return Env{}, err
		}
		e.Rank, e.Launcher = r, l.name
		if l.size != "" {
			if ss := get(l.size); ss != "" {
				if e.Size, err = parseCount(l.size, ss); err != nil {
					return Env{}, err
				}
			}
		}
		break
	}
	if ss := get(EnvSize); ss != "" {
		n, err := parseCount(EnvSize, ss)
		if err != nil {
			return Env{}, err
		}
		e.Size = n
	} else if e.Size == 0 && get("SLURM_NTASKS") != "" {
		n, err := parseCount("SLURM_NTASKS", get("SLURM_NTASKS"))
		if err != nil {
			return Env{}, err
		}
		e.Size = n
	}
	if e.Rank != AnyProc && e.Size > 0 && e.Rank >= e.Size {
		return Env{}, fmt.Errorf("%w: rank %d not below size %d (%s)", ErrEnv, e.Rank, e.Size, e.Launcher)
	}
	job, launched := detectJob(get)
	if ks := get(EnvJobKey); ks != "" {
		k, err := ParseJobKey(ks)
		if err != nil {
			return Env{}, err
		}
		e.JobKey, e.HasJobKey = k, true
	} else if launched {
		e.JobKey, e.HasJobKey = job.key(), true
	}
	d := strings.ToLower(get(EnvDirectory))
	switch d {
	case "", ServeAuto:
	case ServeEmbed, ServeNever, ServeAll:
		e.Directory = d
	default:
		return Env{}, fmt.Errorf("%w: %s=%q (want %s, %s, %s or %s)", ErrEnv, EnvDirectory, d, ServeAuto, ServeEmbed, ServeNever, ServeAll)
	}
	// Under a launcher, without PCOR_COORD, rank 0 serves the directory
	// on its host at a port derived from the job.
	if e.Coord == "" && launched && e.Rank != AnyProc {
		var err error
		if e.Coord, err = job.coord(); err != nil {
			return Env{}, fmt.Errorf("%w (set %s to the directory's host:port)", err, EnvCoord)
		}
		e.CoordFrom = job.name
		if d == "" {
			e.Directory = ServeNever
			if e.Rank == 0 {
				e.Directory = ServeAll
			}
		}
	}
	return e, nil
}

// ParseJobKey parses a job key in hex (an optional 0x prefix, at most 16
// digits).
func ParseJobKey(s string) (uint64, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if h == "" || len(h) > 16 {
		return 0, fmt.Errorf("%w: %s=%q is not a 64-bit hex key", ErrEnv, EnvJobKey, s)
	}
	k, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not a 64-bit hex key", ErrEnv, EnvJobKey, s)
	}
	return k, nil
}

// FormatJobKey is the PCOR_JOBKEY form of a key.
func FormatJobKey(k uint64) string { return fmt.Sprintf("%016x", k) }

func parseCount(name, s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not a non-negative integer", ErrEnv, name, s)
	}
	return int(n), nil
}
