package pcor

import (
	"context"

	"github.com/pcor-go/pcor/directory"
)

// FromEnv joins the application described by the environment: PCOR_COORD,
// PCOR_RANK, PCOR_SIZE, PCOR_JOBKEY, PCOR_LISTEN, PCOR_DIRECTORY or a
// launcher's rank variables (see directory/README.md). The environment
// sets Coord, JobKey, Rank, Size and Directory, and Listen and Costs when
// PCOR_LISTEN is set; the other fields of cfg (Node, OnEvent,
// HeartbeatTimeout) are used as given. FromEnv(ctx, JoinConfig{}) is
// enough for a program started by pcorrun, Slurm or mpirun.
func FromEnv(ctx context.Context, cfg JoinConfig) (*Node, error) {
	env, err := directory.FromEnv()
	if err != nil {
		return nil, err
	}
	if !env.HasJobKey {
		return nil, directory.ErrNoJobKey
	}
	ls, cs, err := ParseListenCosts(env.Listen)
	if err != nil {
		return nil, err
	}
	cfg.Coord, cfg.JobKey, cfg.Rank, cfg.Size, cfg.Directory = env.Coord, env.JobKey, env.Rank, env.Size, env.Directory
	if len(ls) > 0 {
		cfg.Listen, cfg.Costs = ls, cs
	}
	return Join(ctx, cfg)
}
