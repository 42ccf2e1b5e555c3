package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// functionOf returns the function a sample event is for: the first word of its file
// name ("check-single.json" is for check).
func functionOf(event string) string {
	word, _, _ := strings.Cut(filepath.Base(event), "-")
	return strings.TrimSuffix(word, filepath.Ext(word))
}

// sampleConfig is the configuration the sample authorizer events need (their API key's
// plan, their route), kept beside them in events/.
const sampleConfig = "authorizer-config.yaml"

// withSampleConfig returns getenv with RATE_LIMIT_CONFIG_FILE naming the sampleConfig
// beside the event at eventPath when that file exists and getenv names no configuration
// and no registry table, and says so on stderr; otherwise getenv as it is. So the sample
// events decide as their README (events/README.md) says, a configuration given
// explicitly always wins, and with REGISTRY_TABLE the table is the registry: the sample
// configuration lists the sample key, which a document beside a table may not (the
// function's init would fail telling to remove it from a document nobody gave).
func withSampleConfig(getenv func(string) string, eventPath string, stderr io.Writer) func(string) string {
	if getenv(settings.EnvConfigInline) != "" || getenv(settings.EnvConfigFile) != "" {
		return getenv
	}
	file := filepath.Join(filepath.Dir(eventPath), sampleConfig)
	if _, err := os.Stat(file); err != nil {
		return getenv
	}
	if table := getenv(settings.EnvRegistryTable); table != "" {
		fmt.Fprintf(stderr, "invoke: %s=%s is the registry: the sample events' configuration beside the event, %s, is not used (the sample key is on pro only if the table has it)\n",
			settings.EnvRegistryTable, table, file)
		return getenv
	}
	fmt.Fprintf(stderr, "invoke: %s=%s, the sample events' configuration beside the event (set %s or %s for another)\n",
		settings.EnvConfigFile, file, settings.EnvConfigInline, settings.EnvConfigFile)
	return func(k string) string {
		if k == settings.EnvConfigFile {
			return file
		}
		return getenv(k)
	}
}

// invoke runs the event in the file eventPath through function (by default the one its
// file name names) in-process, as the Lambda runtime would, and prints the reply to
// stdout: the handler's answer, or a function error's payload as Lambda reports it
// ({"errorMessage", "errorType"}). The function's logs and metrics go to stderr.
func invoke(ctx context.Context, function, eventPath string, getenv func(string) string, stdout, stderr io.Writer) error {
	payload, err := os.ReadFile(eventPath)
	if err != nil {
		return err
	}
	if err := localgw.NotJSON(payload); err != nil {
		return fmt.Errorf("%s: %w, which Lambda refuses before the function runs (InvalidRequestContentException)", eventPath, err)
	}
	if function == "" {
		function = functionOf(eventPath)
	}
	f, ok := app.Functions[function]
	if !ok {
		return fmt.Errorf("%w: no function %q (from %s): want -function %s", errUsage, function, eventPath, strings.Join(slices.Sorted(maps.Keys(app.Functions)), " or "))
	}
	if f.Name == app.Authorizer.Name {
		getenv = withSampleConfig(getenv, eventPath, stderr)
	}
	getenv, _, stop, err := withRedis(getenv)
	if err != nil {
		return err
	}
	defer stop()
	h, _, err := app.Build(f, getenv, stderr, stderr)
	if err != nil {
		return fmt.Errorf("%s init: %w", function, err)
	}
	out, err := h.Invoke(ctx, payload)
	if err != nil {
		fmt.Fprintf(stderr, "%s: function error\n", function)
		out, err = json.Marshal(localgw.ErrorResponse(err))
		if err != nil {
			return err
		}
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(out) // not JSON: print it as it is
	}
	pretty.WriteByte('\n')
	_, err = stdout.Write(pretty.Bytes())
	return err
}
