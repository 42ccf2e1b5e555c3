package benchreport

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	// Calls is how many times the command ran since the last CONFIG RESETSTAT.
	Calls int64
	// UsecPerCall is the mean server time per call, in microseconds, including
	// everything a script called.
	UsecPerCall float64
}

// resetStats clears the server's command statistics (CONFIG RESETSTAT).
func resetStats(ctx context.Context, c rueidis.Client) error {
	if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
		return fmt.Errorf("config resetstat: %w", err)
	}
	return nil
}

// commandStat reads INFO commandstats and returns the line of command (lower case,
// as Redis names it: "evalsha").
func commandStat(ctx context.Context, c rueidis.Client, command string) (CommandStat, error) {
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return CommandStat{}, fmt.Errorf("info commandstats: %w", err)
	}
	return parseCommandStat(info, command)
}

// parseCommandStat finds "cmdstat_<command>:calls=N,usec=U,usec_per_call=P,..." in the
// text of INFO commandstats.
func parseCommandStat(info, command string) (CommandStat, error) {
	prefix := "cmdstat_" + command + ":"
	for line := range strings.Lines(info) {
		fields, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			continue
		}
		var st CommandStat
		var haveCalls, havePer bool
		for kv := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			switch k {
			case "calls":
				st.Calls, err = strconv.ParseInt(v, 10, 64)
				haveCalls = err == nil
			case "usec_per_call":
				st.UsecPerCall, err = strconv.ParseFloat(v, 64)
				havePer = err == nil
			}
		}
		if !haveCalls || !havePer {
			return CommandStat{}, fmt.Errorf("commandstats line %q: want calls and usec_per_call", strings.TrimSpace(line))
		}
		return st, nil
	}
	return CommandStat{}, fmt.Errorf("commandstats has no line for %s", command)
}
