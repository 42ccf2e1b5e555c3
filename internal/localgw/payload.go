package localgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// NotJSON returns an error saying where payload, an invocation's payload, stops being
// JSON, at its line and column, or nil when it is JSON: the Lambda service refuses such
// a payload before any function runs (InvalidRequestContentException), naming the
// place too. An empty payload is not refused: the service passes it on.
func NotJSON(payload []byte) error {
	var se *json.SyntaxError
	if len(payload) == 0 || !errors.As(json.Unmarshal(payload, new(json.RawMessage)), &se) {
		return nil
	}
	before := payload[:min(max(se.Offset-1, 0), int64(len(payload)))] // the fault is the byte read last
	line := bytes.Count(before, []byte("\n")) + 1
	column := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Errorf("not JSON (line %d, column %d): %w", line, column, se)
}
