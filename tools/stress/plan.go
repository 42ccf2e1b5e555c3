package stress

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/bucketgate/bucketgate"
)

// Plan is what one worker process does: the coordinator writes it to a file and starts
// the worker with its path.
type Plan struct {
	// Phase names the run; identities carry it, so every run starts on fresh buckets.
	Phase string `json:"phase"`
	// Worker indexes this worker among Workers.
	Worker  int `json:"worker"`
	Workers int `json:"workers"`
	// Env is the environment the production chain is built from (settings.Load, then
	// app.NewGuard).
	Env map[string]string `json:"env"`
	// StartAt is when every worker starts deciding; Duration is how long they decide.
	StartAt  time.Time     `json:"startAt"`
	Duration time.Duration `json:"duration"`
	// Instances is how many production chains (stand-in Lambda instances, each with
	// its own Redis connection, circuit breaker and deny cache) the worker builds;
	// goroutine g uses instance g % Instances.
	Instances int `json:"instances"`
	// Goroutines is how many goroutines decide concurrently.
	Goroutines int `json:"goroutines"`
	// Rate is the worker's decisions per second, spread over its goroutines; zero
	// decides as fast as the goroutines can (a closed loop).
	Rate float64 `json:"rate"`
	// Scenarios are the workloads, picked by weight for each decision.
	Scenarios []Scenario `json:"scenarios"`
	// Hostile, when set, makes this a hostile-identity run instead of a load run.
	Hostile *HostilePlan `json:"hostile,omitempty"`
	// Seed seeds the worker's random choices.
	Seed uint64 `json:"seed"`
	// Records is the path of the records file the worker writes.
	Records string `json:"records"`
	// SampleEvery, when positive, makes the worker sample its memory and goroutines.
	SampleEvery time.Duration `json:"sampleEvery"`
}

// Scenario is one workload: requests of one of Shapes for one of Identities
// identities, costing 1 to MaxCost tokens, PeekPercent of them peeks (cost 0).
type Scenario struct {
	// Name names the scenario in identities and the summary.
	Name string `json:"name"`
	// Weight is the scenario's share of the decisions, relative to the others.
	Weight int `json:"weight"`
	// Identities is how many identities the scenario spreads its requests over.
	Identities int `json:"identities"`
	// Shapes are the rule sets a request carries; a rule name means one rule (one
	// capacity and rate) in every shape, so shapes that share it share its bucket.
	Shapes [][]bucketgate.Rule `json:"shapes"`
	// MaxCost is the highest cost of a request; at least 1.
	MaxCost int64 `json:"maxCost"`
	// PeekPercent is the percentage of requests with cost 0.
	PeekPercent int `json:"peekPercent"`
}

// IdentityName returns the identity with index i in scenario s of phase.
func IdentityName(phase, scenario string, i uint32) string {
	return "stress:" + phase + ":" + scenario + ":" + strconv.FormatUint(uint64(i), 10)
}

// rules returns the rules of s by name, and an error when one name has two meanings.
func (s Scenario) rules() (map[string]bucketgate.Rule, error) {
	byName := map[string]bucketgate.Rule{}
	for _, shape := range s.Shapes {
		for _, r := range shape {
			if prev, ok := byName[r.Name]; ok && prev != r {
				return nil, fmt.Errorf("scenario %s: rule %s is %+v in one shape and %+v in another", s.Name, r.Name, prev, r)
			}
			byName[r.Name] = r
		}
	}
	return byName, nil
}

// validate checks a plan's workload before any worker starts.
func (p Plan) validate() error {
	if p.Hostile != nil {
		return nil
	}
	if len(p.Scenarios) == 0 || len(p.Scenarios) > 255 {
		return fmt.Errorf("plan %s: %d scenarios: want 1 to 255", p.Phase, len(p.Scenarios))
	}
	for _, s := range p.Scenarios {
		if _, err := s.rules(); err != nil {
			return err
		}
		switch {
		case s.Weight < 1, s.Identities < 1, len(s.Shapes) < 1 || len(s.Shapes) > 255, s.MaxCost < 1 || s.MaxCost > 255:
			return fmt.Errorf("scenario %s: want weight, identities, 1 to 255 shapes and a cost of 1 to 255", s.Name)
		}
	}
	return nil
}

// writePlan writes p as JSON to path.
func writePlan(path string, p Plan) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("plan %s: %w", p.Phase, err)
	}
	return os.WriteFile(path, b, 0o600)
}

// ReadPlan reads the plan a worker was started with.
func ReadPlan(path string) (Plan, error) {
	var p Plan
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, p.validate()
}
