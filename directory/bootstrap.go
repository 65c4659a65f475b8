package directory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Bootstrap joins the application described by env: it fills req's JobKey
// and Proc from env, serves the directory in this process when env says so
// (rank 0 with PCOR_COORD a local address nobody serves yet,
// PCOR_DIRECTORY=embed, or embed-all on every address of this host, as
// rank 0 does under a launcher without PCOR_COORD), and joins it, retrying while the directory is not
// up yet, until ctx is done. The Server is nil unless this process serves
// the directory; close the Client first, then the Server, whose Close
// waits until the other members have gone too (ServerConfig.WaitForMembers).
func Bootstrap(ctx context.Context, env Env, req JoinRequest, cfg ServerConfig) (*Client, *Server, error) {
	if env.Coord == "" {
		return nil, nil, ErrNoCoord
	}
	if !env.HasJobKey {
		return nil, nil, ErrNoJobKey
	}
	req.JobKey = env.JobKey
	req.Proc = env.Rank
	var srv *Server
	serve := env.Directory == ServeEmbed || env.Directory == ServeAll ||
		(env.Directory == ServeAuto && env.Rank == 0 && IsLocalAddr(ctx, env.Coord))
	if serve {
		addr := env.Coord
		if env.Directory == ServeAll {
			host, port, err := net.SplitHostPort(env.Coord)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: directory address %q: %v", ErrEnv, env.Coord, err)
			}
			if !IsLocalAddr(ctx, env.Coord) {
				return nil, nil, fmt.Errorf("%w: process %d serves the directory at %s, but %s is not this host%s; set %s to an address of this host",
					ErrEnv, env.Rank, env.Coord, host, derivedFrom(env), EnvCoord)
			}
			addr = net.JoinHostPort("", port)
		}
		ln, err := net.Listen("tcp", addr)
		switch {
		case err == nil:
			cfg.JobKey, cfg.Size, cfg.WaitForMembers = env.JobKey, env.Size, true
			if srv, err = NewServer(ln, cfg); err != nil {
				ln.Close()
				return nil, nil, err
			}
		case errors.Is(err, syscall.EADDRINUSE) && (env.CoordFrom != "" || env.Directory == ServeAll):
			return nil, nil, fmt.Errorf("directory: serving on %s: %w: the port%s is taken on this host (another job given the same port, or another program); set %s=host:port to choose one",
				env.Coord, err, derivedFrom(env), EnvCoord)
		case env.Directory != ServeAuto || !errors.Is(err, syscall.EADDRINUSE):
			return nil, nil, fmt.Errorf("directory: serving on %s: %w", env.Coord, err)
		}
	}
	c, err := JoinRetry(ctx, env.Coord, req)
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		if errors.Is(err, ErrBadJobKey) {
			err = fmt.Errorf("%w: the directory at %s serves another job: two jobs were given the same directory address%s; give each job its own port (set %s, or leave it unset under a launcher for a per-job port)",
				err, env.Coord, derivedFrom(env), EnvCoord)
		}
		return nil, nil, err
	}
	return c, srv, nil
}

// derivedFrom says where a derived directory address came from.
func derivedFrom(env Env) string {
	if env.CoordFrom == "" {
		return ""
	}
	return " (derived from the " + env.CoordFrom + " job)"
}

// JoinRetry is Join that keeps trying, with a growing pause, while the
// directory cannot be reached (not listening yet), until ctx is done.
// Refusals are returned at once.
func JoinRetry(ctx context.Context, addr string, req JoinRequest) (*Client, error) {
	pause := 20 * time.Millisecond
	for {
		c, err := Join(ctx, addr, req)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return c, err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.ECONNRESET)
}

// IsLocalAddr reports whether the host of a host:port address is this
// machine: a loopback or unspecified address, "localhost", or an address of
// one of its interfaces.
func IsLocalAddr(ctx context.Context, hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else if host == "localhost" || host == "" {
		return true
	} else {
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return false
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	local, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true
		}
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
