package localgw

import (
	"encoding/json"
	"net/http"
)

// SampleBackend is the local twin of template.yaml's SampleBackendFunction: it answers
// 200 on any path with the JSON {"ok": true, "path": "<path>"}.
func SampleBackend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(struct { // a bool and a string: cannot fail
			OK   bool   `json:"ok"`
			Path string `json:"path"`
		}{true, r.URL.Path})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}
