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
// (rank 0 with PCOR_COORD a local address nobody serves yet, or
// PCOR_DIRECTORY=embed), and joins it, retrying while the directory is not
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
	serve := env.Directory == ServeEmbed ||
		(env.Directory == ServeAuto && env.Rank == 0 && IsLocalAddr(ctx, env.Coord))
	if serve {
		ln, err := net.Listen("tcp", env.Coord)
		switch {
		case err == nil:
			cfg.JobKey, cfg.Size, cfg.WaitForMembers = env.JobKey, env.Size, true
			if srv, err = NewServer(ln, cfg); err != nil {
				ln.Close()
				return nil, nil, err
			}
		case env.Directory == ServeEmbed || !errors.Is(err, syscall.EADDRINUSE):
			return nil, nil, fmt.Errorf("directory: serving on %s: %w", env.Coord, err)
		}
	}
	c, err := JoinRetry(ctx, env.Coord, req)
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return nil, nil, err
	}
	return c, srv, nil
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
