package benchreport

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Machine describes where the figures were measured.
type Machine struct {
	// Date is when the run started, UTC.
	Date time.Time
	// CPUs is the number of logical CPUs (nproc).
	CPUs int
	// CPUModel is /proc/cpuinfo's "model name", or "unknown".
	CPUModel string
	// GoVersion is the Go toolchain that built the measuring code.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
	// RedisVersion is the server's INFO redis_version.
	RedisVersion string
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute load when the run began: on a
	// shared machine, other work that the figures could not keep out.
	LoadAverage string
}

// DescribeMachine gathers Machine, asking the server behind admin for its version.
func DescribeMachine(ctx context.Context, admin rueidis.Client, now time.Time) (Machine, error) {
	info, err := admin.Do(ctx, admin.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return Machine{}, fmt.Errorf("info server: %w", err)
	}
	return Machine{
		Date:         now.UTC(),
		CPUs:         runtime.NumCPU(),
		CPUModel:     cpuModel("/proc/cpuinfo"),
		GoVersion:    runtime.Version(),
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
		RedisVersion: infoField(info, "redis_version"),
		LoadAverage:  loadAverage("/proc/loadavg"),
	}, nil
}

// cpuModel returns the first "model name" of a cpuinfo file, or "unknown".
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// infoField returns field's value in the text of an INFO reply, or "unknown".
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "unknown"
}

// loadAverage returns the first three fields of a loadavg file, or "unknown".
func loadAverage(path string) string {
	b, err := os.ReadFile(path)
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
