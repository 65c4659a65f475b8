package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/pcor"
)

var errHelp = errors.New("help requested")

type options struct {
	n             int
	hosts         []string
	via           []string // command template words
	listen        string
	directoryOnly bool
	jobKey        uint64
	heartbeat     time.Duration
	grace         time.Duration
	routes        bool
	groups        string // PCOR_GROUPS for every process ("" none)
	vps           int    // ATHREAD_VPS for every process (0: not set)
	prices        string // PCOR_PRICES for every process ("" not set)
	keepGoing     bool
	verbose       bool
	cpuShare      map[int]float64 // rank → share of one CPU
	prog          []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("pcorrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	var hosts, via, key, cpuShare string
	fs.IntVar(&o.n, "n", 0, "number of processes to start (with --directory-only: the number the directory gives its members as the application's size)")
	fs.StringVar(&hosts, "hosts", "", "comma-separated hosts, used round robin (needs --via)")
	fs.StringVar(&via, "via", "", "command template to start a process on {host}, e.g. 'ssh {host}' or 'ip netns exec {host}'; {cmd}, if present, is replaced by the shell-quoted command")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "TCP address the directory listens on (must be reachable from every host)")
	fs.BoolVar(&o.directoryOnly, "directory-only", false, "serve only the directory, print its environment and wait for a signal")
	fs.StringVar(&key, "jobkey", "", "job key in hex (default: random per run)")
	fs.DurationVar(&o.heartbeat, "heartbeat-timeout", directory.DefaultHeartbeatTimeout, "silence after which a process counts as gone")
	fs.DurationVar(&o.grace, "grace", 3*time.Second, "time between SIGTERM and SIGKILL when stopping processes")
	fs.BoolVar(&o.keepGoing, "keep-going", false, "when a process fails, let the others run on (the exit status is still the first failure's)")
	fs.BoolVar(&o.routes, "routes", false, "print every process's routing table once all have joined, after every membership change, and on SIGUSR1")
	fs.StringVar(&cpuShare, "cpu-share", "", "limit ranks to a percentage of one CPU with a cgroup quota, e.g. '1=100,2=50,3=25'")
	fs.BoolVar(&o.verbose, "v", false, "print the directory address and membership changes")
	fs.IntVar(&o.vps, "vps", 0, "athread VPs per process (sets "+athread.EnvVPs+")")
	fs.StringVar(&o.prices, "prices", "", "how often each process measures its links and reprices its routes, e.g. '10s', or 'off' (sets "+pcor.EnvPrices+"; default 30s)")
	fs.StringVar(&o.groups, "groups", "", "explicit groups for hierarchical work stealing, e.g. '0-3;4-7' (sets "+hws.EnvGroups+")")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pcorrun -n N [flags] program [args...]\n       pcorrun --directory-only [-n N] [flags]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, errHelp
		}
		return nil, err
	}
	o.prog = fs.Args()
	if o.prices != "" {
		if _, err := pcor.ParsePriceEvery(o.prices); err != nil {
			// ParsePriceEvery's error names the environment variable.
			return nil, fmt.Errorf("--prices %q: want a positive duration such as 30s, or off", o.prices)
		}
	}
	shares, err := parseCPUShares(cpuShare)
	if err != nil {
		return nil, err
	}
	o.cpuShare = shares
	if key != "" {
		k, err := directory.ParseJobKey(key)
		if err != nil {
			// ParseJobKey's error names the environment variable.
			return nil, fmt.Errorf("--jobkey %q is not a 64-bit hex key (up to 16 hex digits, 0x allowed)", key)
		}
		o.jobKey = k
	} else {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		o.jobKey = binary.LittleEndian.Uint64(b[:])
	}
	if hosts != "" {
		for _, h := range strings.Split(hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				o.hosts = append(o.hosts, h)
			}
		}
	}
	if via != "" {
		w, err := splitWords(via)
		if err != nil {
			return nil, fmt.Errorf("--via: %w", err)
		}
		o.via = w
	}
	switch {
	case o.directoryOnly:
		if len(o.prog) > 0 {
			return nil, fmt.Errorf("--directory-only takes no program")
		}
	case len(o.prog) == 0:
		return nil, fmt.Errorf("no program given (usage: pcorrun -n N program [args...])")
	case o.n == 0:
		return nil, fmt.Errorf("-n N, the number of processes to start, is missing (usage: pcorrun -n N program [args...])")
	case o.n < 0:
		return nil, fmt.Errorf("-n must be at least 1")
	}
	if len(o.hosts) > 0 && len(o.via) == 0 {
		return nil, fmt.Errorf("--hosts needs --via (how to start a process on a host)")
	}
	if o.groups != "" {
		if _, err := hws.ParseGroups(o.groups); err != nil {
			return nil, fmt.Errorf("--groups: %w", err)
		}
	}
	if o.vps < 0 {
		return nil, fmt.Errorf("--vps must not be negative")
	}
	if o.grace <= 0 || o.heartbeat <= 0 {
		return nil, fmt.Errorf("--grace and --heartbeat-timeout must be positive")
	}
	return o, nil
}

// splitWords splits a command template into words: blanks separate words,
// single and double quotes group, a backslash escapes the next character.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || esc {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command template")
	}
	return words, nil
}

// shellQuote quotes words for a POSIX shell.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.IndexFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
