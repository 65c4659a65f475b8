package pcor

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// EnvPrices sets JoinConfig.PriceEvery for FromEnv: a duration (how often
// the node measures its links, e.g. "30s"), or "off". Unset: every 30 s
// (DefaultPriceEvery).
const EnvPrices = "PCOR_PRICES"

// FromEnv joins the application described by the environment: PCOR_COORD,
// PCOR_RANK, PCOR_SIZE, PCOR_JOBKEY, PCOR_LISTEN, PCOR_DIRECTORY or a
// launcher's rank variables (see directory/README.md). The environment
// sets Coord, JobKey, Rank, Size and Directory, Listen and Costs when
// PCOR_LISTEN is set, and PriceEvery when it is zero (PCOR_PRICES: by
// default the node measures its links every 30 s and prices its routes
// from the measurements); the other fields of cfg (Node, OnEvent,
// HeartbeatTimeout, Prices) are used as given. FromEnv(ctx, JoinConfig{})
// is enough for a program started by pcorrun, Slurm or mpirun.
//
// As Join, FromEnv returns once this process has joined, not once the
// others have: a send to a process that has not joined yet fails with
// ErrUnreachable ("not joined yet"). A program that talks to every
// process started waits for them first with
// node.Directory().Wait(ctx, node.Directory().Size()).
func FromEnv(ctx context.Context, cfg JoinConfig) (*Node, error) {
	env, err := directory.FromEnv()
	if err != nil {
		return nil, err
	}
	if !env.HasJobKey {
		return nil, errNoLauncher{}
	}
	ls, cs, err := ParseListenCosts(env.Listen)
	if err != nil {
		return nil, err
	}
	if cfg.PriceEvery == 0 {
		if cfg.PriceEvery, err = ParsePriceEvery(os.Getenv(EnvPrices)); err != nil {
			return nil, err
		}
	}
	cfg.Coord, cfg.JobKey, cfg.Rank, cfg.Size, cfg.Directory = env.Coord, env.JobKey, env.Rank, env.Size, env.Directory
	if len(ls) > 0 {
		cfg.Listen, cfg.Costs = ls, cs
	}
	return Join(ctx, cfg)
}

// ParsePriceEvery parses a PCOR_PRICES value: a positive duration, "off"
// (returned as -1: no measurement), or "" for DefaultPriceEvery.
func ParsePriceEvery(s string) (time.Duration, error) {
	switch s {
	case "":
		return DefaultPriceEvery, nil
	case "off", "0":
		return -1, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("pcor: %s=%q: want a positive duration such as 30s, or off", EnvPrices, s)
	}
	return d, nil
}

// errNoLauncher is FromEnv's error in an environment that gives no job
// key: the program was most likely not started by a launcher. It matches
// ErrNoJobKey and directory.ErrNoJobKey.
type errNoLauncher struct{}

func (errNoLauncher) Error() string {
	return "pcor: FromEnv: no job key: PCOR_JOBKEY is not set and no Slurm or MPI job was found " +
		"(start the program with pcorrun, srun or mpirun)"
}

func (errNoLauncher) Is(target error) bool {
	return target == ErrNoJobKey || target == directory.ErrNoJobKey
}
